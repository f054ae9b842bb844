/** The client-facing messages of serving what uploads hosted (the media routes and `?width=`). */
export const mediaMessages = {
  linkInvalid: "The link is invalid or has expired.",
  rangeNotSatisfiable: "Range not satisfiable.",
} as const;
