import { describe, expect, it } from "vitest";
import { convertToWebp } from "../src/convert";
import { makeAvif, makeWidth } from "../src/jobs";
import { photoLike, writeRgbaPng } from "./images";

/**
 * The RPC jobs of a `?width=` or `?format=avif` variant answer a hosted file they cannot read as a refusal, as
 * a conversion does: thrown out of an RPC method, the runtime would report it as an uncaught exception.
 */

function sourceOf(bytes: Uint8Array) {
  return { size: bytes.length, open: async () => new Response(bytes).body ?? new ReadableStream<Uint8Array>() };
}

async function damagedHostedWebp(): Promise<Uint8Array> {
  const png = await writeRgbaPng(photoLike(320, 240), 320, 240);
  const damaged = (await convertToWebp(png, "png", { maxEdge: 2560 })).bytes.slice();
  damaged.fill(0x55, 40);
  return damaged;
}

describe("a variant of a hosted file damaged since it was hosted", () => {
  it("makeWidth and makeAvif answer it as refused (unconvertible), never throw", async () => {
    const source = sourceOf(await damagedHostedWebp());
    const refused = { refused: "unconvertible", detail: expect.stringContaining("damaged") };
    expect(await makeWidth({ source, width: 160, height: 120 })).toEqual(refused);
    expect(await makeAvif({ source, width: 160, height: 120 })).toEqual(refused);
  });

  it("an intact one is made as before: bytes and their MD5 as R2's entity tag", async () => {
    const png = await writeRgbaPng(photoLike(320, 240), 320, 240);
    const source = sourceOf((await convertToWebp(png, "png", { maxEdge: 2560 })).bytes);
    const width = await makeWidth({ source, width: 160, height: 120 });
    const avif = await makeAvif({ source, width: 160, height: 120 });
    expect(width).toMatchObject({ etag: expect.stringMatching(/^"[0-9a-f]{32}"$/) });
    expect(avif).toMatchObject({ width: 160, height: 120, etag: expect.stringMatching(/^"[0-9a-f]{32}"$/) });
  });
});
