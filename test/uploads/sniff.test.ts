import { describe, expect, it } from "vitest";
import { sniff } from "../../src/uploads/sniff";
import { gif, isoMedia, oggTheora, pdf, plainText, png, svg, webm, zip } from "../support/media-bytes";

const sniffed = (bytes: Uint8Array) => sniff(bytes);

describe("sniffing from the bytes", () => {
  it("recognises video containers: MP4, MOV, M4V, WebM, Ogg video", async () => {
    expect(await sniffed(isoMedia("isom"))).toMatchObject({ kind: "video", mime: "video/mp4", ext: "mp4" });
    expect(await sniffed(isoMedia("qt  "))).toMatchObject({ kind: "video", mime: "video/quicktime", ext: "mov" });
    expect(await sniffed(isoMedia("M4V "))).toMatchObject({ kind: "video", mime: "video/x-m4v", ext: "m4v" });
    expect(await sniffed(webm())).toMatchObject({ kind: "video", mime: "video/webm", ext: "webm" });
    expect(await sniffed(oggTheora())).toMatchObject({ kind: "video", mime: "video/ogg" });
  });

  it("recognises HEIC and AVIF whatever their name", async () => {
    expect(await sniffed(isoMedia("heic"))).toEqual({ kind: "heif" });
    expect(await sniffed(isoMedia("avif"))).toEqual({ kind: "heif" });
  });

  it("leaves a GIF's frame count to the converter, which walks the whole file: any GIF sniffs as still", async () => {
    expect(await sniffed(gif(1))).toMatchObject({ kind: "still", format: "gif" });
    expect(await sniffed(gif(2))).toMatchObject({ kind: "still", format: "gif", mime: "image/gif", ext: "gif" });
  });

  it("tells PNG (still) from APNG (animated)", async () => {
    expect(await sniffed(await png(4, 4))).toMatchObject({ kind: "still", format: "png" });
    expect(await sniffed(await png(4, 4, { animated: true }))).toMatchObject({ kind: "animated", ext: "png" });
  });

  it("recognises SVG text and calls PDF, ZIP and plain text other", async () => {
    expect(await sniffed(svg())).toEqual({ kind: "svg" });
    expect(await sniffed(pdf())).toMatchObject({ kind: "other", mime: "application/pdf" });
    expect(await sniffed(zip())).toMatchObject({ kind: "other", mime: "application/zip" });
    expect(await sniffed(plainText())).toMatchObject({ kind: "other" });
  });
});
