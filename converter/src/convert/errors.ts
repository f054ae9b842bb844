/** Refused before decoding: the message names the limit that was exceeded. */
export class ImageTooLargeError extends Error {
  override name = "ImageTooLargeError";
}

/** The bytes are not a decodable image of the declared kind; the message says why in plain words. */
export class UnconvertibleImageError extends Error {
  override name = "UnconvertibleImageError";
}
