import { describe, expect, it } from "vitest";
import { seedStore } from "../support/factories";
import { json } from "../support/http";
import { png } from "../support/media-bytes";
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
      const statuses = answers.map((answer) => answer.status);
      expect(statuses).toEqual(Array(8).fill(201));
      for (const answer of answers) expect((await json<{ type: string }>(answer)).type).toBe("image");
    }
  });
});
