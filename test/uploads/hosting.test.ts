import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { hostingMessages } from "../../src/uploads/hosting";
import { privateFileKey } from "../../src/uploads/keys";
import { seedStore } from "../support/factories";
import { json } from "../support/http";
import { isoMedia, png } from "../support/media-bytes";
import { complete, stage } from "../support/uploads";

describe("complete under concurrency", () => {
  it("converts concurrent completes of one isolate without a request doing I/O for another (no 500)", async () => {
    const owner = await seedStore();
    const image = await png(320, 240);
    for (let round = 0; round < 3; round += 1) {
      const staged = await Promise.all(
        Array.from({ length: 8 }, () => stage(image, { filename: "a.png", content_type: "image/png" }, owner)),
      );
      const answers = await Promise.all(staged.map((s) => complete(s.token, s.storeId, s.reservation.id)));
      const bodies = await Promise.all(
        answers.map(async (answer) => ({ status: answer.status, body: await json(answer) })),
      );
      expect(bodies.filter((answer) => answer.status !== 201)).toEqual([]);
      for (const { body } of bodies) expect(body.type).toBe("image");
    }
  }, 30_000);
});

describe("bytes that are never hosted", () => {
  for (const brand of ["heic", "avif"] as const) {
    it(`${brand.toUpperCase()} bytes prepared as type file answer 422 with the convert-to-JPG-or-PNG message (decisions: under any declared type)`, async () => {
      const { storeId, token, reservation } = await stage(isoMedia(brand), { filename: "photo.bin", type: "file" });
      const response = await complete(token, storeId, reservation.id);
      expect(response.status).toBe(422);
      expect(await json(response)).toEqual({ message: hostingMessages.heif });
      expect(await env.BUCKET.get(privateFileKey(storeId, reservation.id))).toBeNull();
    });
  }
});
