import { describe, expect, it } from "vitest";
import { demoStoreId, demoToken } from "../support/demo";
import { png } from "../support/media-bytes";
import { expectJson, expectStatus } from "../support/responses";
import { serverApi } from "../support/server";

const owner = { token: demoToken, store: demoStoreId };

/** One client's cycle: prepare, PUT, complete, GET; answers the complete's status. */
async function cycle(image: Uint8Array): Promise<number> {
  const prepared = await serverApi("/media-uploads", {
    ...owner,
    method: "POST",
    body: { filename: "load.png", content_type: "image/png", size: image.length },
  });
  const reservation = await expectJson<{ id: string; upload_request: { url: string; headers: object } }>(prepared, 201);
  const put = await fetch(reservation.upload_request.url, {
    method: "PUT",
    headers: reservation.upload_request.headers as Record<string, string>,
    body: image,
  });
  await expectStatus(put, 204);
  const completed = await serverApi(`/media-uploads/${reservation.id}/complete`, { ...owner, method: "POST" });
  const status = completed.status;
  await completed.arrayBuffer();
  const read = await serverApi(`/media-uploads/${reservation.id}`, owner);
  await expectStatus(read, 200);
  await read.arrayBuffer();
  return status;
}

describe("concurrent completes over real HTTP (wrangler dev, one isolate)", () => {
  it("answers 201 to every complete when eight clients convert images at once", async () => {
    const image = await png(400, 300);
    const clients = 8;
    const cyclesPerClient = Number(process.env.LOAD_CYCLES ?? 10);
    const statuses = (
      await Promise.all(
        Array.from({ length: clients }, async () => {
          const seen: number[] = [];
          for (let i = 0; i < cyclesPerClient; i += 1) seen.push(await cycle(image));
          return seen;
        }),
      )
    ).flat();
    expect(statuses.filter((status) => status !== 201)).toEqual([]);
  }, 120_000);
});
