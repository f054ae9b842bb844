import { readFile } from "node:fs/promises";
import { describe, expect, inject, it } from "vitest";
import { expectJson } from "../support/responses";

const baseUrl = inject("baseUrl");
const demo = JSON.parse(await readFile(new URL("../../fixtures/demo.json", import.meta.url), "utf8"));
const token: string = demo.tokens[0].token;
const storeId: string = demo.stores[0].id;
const headers = { Authorization: `Bearer ${token}`, "X-Service-Store": storeId };

/** A small valid PNG (8-bit RGB gradient), made here so every client uploads real image bytes. */
async function smallPng(width: number, height: number): Promise<Uint8Array> {
  const raw = new Uint8Array((width * 3 + 1) * height);
  for (let y = 0; y < height; y += 1)
    for (let x = 0; x < width; x += 1) raw.set([x & 255, y & 255, 90], y * (width * 3 + 1) + 1 + x * 3);
  const compressed = new Uint8Array(
    await new Response(new Blob([raw]).stream().pipeThrough(new CompressionStream("deflate"))).arrayBuffer(),
  );
  const chunk = (type: string, data: Uint8Array) => {
    const out = new Uint8Array(12 + data.length);
    const view = new DataView(out.buffer);
    view.setUint32(0, data.length);
    out.set(new TextEncoder().encode(type), 4);
    out.set(data, 8);
    let crc = 0xffffffff;
    for (const byte of out.subarray(4, 8 + data.length)) {
      crc ^= byte;
      for (let k = 0; k < 8; k += 1) crc = crc & 1 ? 0xedb88320 ^ (crc >>> 1) : crc >>> 1;
    }
    view.setUint32(8 + data.length, (crc ^ 0xffffffff) >>> 0);
    return out;
  };
  const ihdr = new Uint8Array(13);
  new DataView(ihdr.buffer).setUint32(0, width);
  new DataView(ihdr.buffer).setUint32(4, height);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const parts = [
    Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a),
    chunk("IHDR", ihdr),
    chunk("IDAT", compressed),
    chunk("IEND", new Uint8Array()),
  ];
  return new Uint8Array(await new Blob(parts).arrayBuffer());
}

/** One client's cycle: prepare, PUT, complete, GET; answers the complete's status. */
async function cycle(image: Uint8Array): Promise<number> {
  const prepared = await fetch(`${baseUrl}/api/v1/media-uploads`, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json" },
    body: JSON.stringify({ filename: "load.png", content_type: "image/png", size: image.length }),
  });
  const reservation = await expectJson<{ id: string; upload_request: { url: string; headers: object } }>(prepared, 201);
  const put = await fetch(reservation.upload_request.url, {
    method: "PUT",
    headers: reservation.upload_request.headers as Record<string, string>,
    body: image,
  });
  expect(put.status).toBe(204);
  const completed = await fetch(`${baseUrl}/api/v1/media-uploads/${reservation.id}/complete`, {
    method: "POST",
    headers,
  });
  const status = completed.status;
  await completed.arrayBuffer();
  const read = await fetch(`${baseUrl}/api/v1/media-uploads/${reservation.id}`, { headers });
  expect(read.status).toBe(200);
  await read.arrayBuffer();
  return status;
}

describe("concurrent completes over real HTTP (wrangler dev, one isolate)", () => {
  it("answers 201 to every complete when eight clients convert images at once", async () => {
    const image = await smallPng(400, 300);
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
