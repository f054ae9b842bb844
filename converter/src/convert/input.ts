import { ByteReader } from "./byte-reader";

/** The still-image formats the conversion reads. */
export type StillImageKind = "jpeg" | "png" | "webp" | "gif" | "bmp";

/**
 * Where a conversion reads the image: the whole file (tests, the bench), or its size and a way to stream it
 * (the staged R2 object), so row formats never hold the file and whole-file formats check its size first.
 */
export type ImageInput = Uint8Array | { size: number; open(): Promise<ReadableStream<Uint8Array>> };

function isWholeFile(input: ImageInput): input is Uint8Array {
  return ArrayBuffer.isView(input);
}

export function inputSize(input: ImageInput): number {
  return isWholeFile(input) ? input.byteLength : input.size;
}

export async function openReader(input: ImageInput, truncated: () => Error): Promise<ByteReader> {
  return new ByteReader(isWholeFile(input) ? input : await input.open(), truncated);
}

/** Reads the whole input into `target` (exactly its size), in place: no second copy of the file. */
export async function readWhole(input: ImageInput, target: Uint8Array, truncated: () => Error): Promise<void> {
  if (isWholeFile(input)) {
    target.set(input);
    return;
  }
  const reader = await openReader(input, truncated);
  await readRest(reader, target);
  await reader.cancel();
}

/** Reads what `reader` has not consumed yet (the whole file when it consumed nothing) into `target`. */
export async function readRest(reader: ByteReader, target: Uint8Array): Promise<void> {
  let at = 0;
  while (at < target.length) {
    const piece = await reader.takeSome(target.length - at);
    target.set(piece, at);
    at += piece.length;
  }
}
