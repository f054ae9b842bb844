import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { gifFrameBomb, pngInflateBomb } from "../../converter/test/hostile-images";
import { privateFileKey } from "../../src/storage/keys";
import { uploadMessages } from "../../src/uploads/messages";
import { seedStore } from "../support/factories";
import { api, json } from "../support/http";
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
    it(`${brand.toUpperCase()} bytes prepared as type file answer 422 with the convert-to-JPG-or-PNG message (docs/api.md, "Complete", rule 7: under any declared type)`, async () => {
      const { storeId, token, reservation } = await stage(isoMedia(brand), { filename: "photo.bin", type: "file" });
      const response = await complete(token, storeId, reservation.id);
      expect(response.status).toBe(422);
      expect(await json(response)).toEqual({ message: uploadMessages.heif });
      expect(await env.BUCKET.get(privateFileKey(storeId, reservation.id))).toBeNull();
    });
  }
});

describe("hostile images through complete (issue 16)", () => {
  for (const [name, bytes, type, status] of [
    [
      "the 34-byte GIF frame bomb (one frame claiming 65535 × 65535 on a 100 × 100 screen)",
      gifFrameBomb(1),
      "image/gif",
      422,
    ],
    [
      "the GIF frame bomb with two frames (an animation: hosted unchanged, nothing decoded)",
      gifFrameBomb(2),
      "image/gif",
      201,
    ],
    ["a 1×1 PNG whose data inflates to 512 MiB", pngInflateBomb(), "image/png", 201],
  ] as const) {
    it(`answers ${status} to ${name} while other requests are answered`, async () => {
      const { storeId, token, reservation } = await stage(bytes, { filename: "bomb", content_type: type });
      const completing = complete(token, storeId, reservation.id);
      const other = await api("/_dev/ping");
      expect(other.status).toBe(204);
      const response = await completing;
      expect(response.status).toBe(status);
      if (status === 422) expect((await json(response)).message).toMatch(/cannot be hosted/);
    });
  }
});
