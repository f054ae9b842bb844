import { z } from "@hono/zod-openapi";

/**
 * A UUID path parameter, matched case-insensitively (RFC 9562): any letter case is accepted and
 * handed on in lower case, the case every id is stored in, so an upper-case id finds its resource.
 */
export function uuidParam(name: string, invalidMessage: string, description: string) {
  return z
    .uuid({ error: invalidMessage })
    .overwrite((value) => value.toLowerCase())
    .openapi({ param: { name, in: "path" }, description });
}
