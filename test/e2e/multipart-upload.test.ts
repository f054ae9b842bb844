import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
// @ts-expect-error: plain ESM helper shared with `npm run dev`, no type declarations.
import { loadFixture } from "../../scripts/dev-server.mjs";
import { browserAvailable, launchBrowser } from "../support/browser";
import { poll } from "../support/poll";
import { expectJson, expectStatus } from "../support/responses";

const baseUrl = inject("baseUrl");
const pageUrl = inject("uploadPageUrl");

const MiB = 2 ** 20;
/** The file: 300 MB, three times a Worker's request body ceiling. */
const FILE_BYTES = 300_000_000;
/** Parts stored before the network is cut: some of the upload done, most of it still to go. */
const PARTS_BEFORE_CUT = 6;

/**
 * Writes `size` bytes to `path`: an MP4 (a `ftyp` box, then one `mdat` box) whose payload is one random MiB
 * with each MiB's index written into it, so no two parts are alike. Answers the file's SHA-256.
 */
async function writeVideo(path: string, size: number): Promise<string> {
  const hash = createHash("sha256");
  const file = await open(path, "w");
  try {
    const header = Buffer.alloc(32);
    header.writeUInt32BE(24, 0);
    header.write("ftypisom", 4, "latin1");
    header.write("isommp41", 16, "latin1");
    header.writeUInt32BE(size - 24, 24);
    header.write("mdat", 28, "latin1");
    const base = randomBytes(MiB);
    for (let offset = 0, index = 0; offset < size; offset += MiB, index++) {
      const block = Buffer.from(base);
      for (let at = 64; at < MiB; at += 64 * 1024) block.writeUInt32BE(index, at);
      if (index === 0) header.copy(block);
      const piece = block.subarray(0, Math.min(MiB, size - offset));
      hash.update(piece);
      await file.write(piece);
    }
  } finally {
    await file.close();
  }
  return hash.digest("hex");
}

/** SHA-256 of what `url` serves, read as a stream. */
async function sha256Of(url: string): Promise<{ hash: string; bytes: number; type: string | null }> {
  const response = await fetch(url);
  await expectStatus(response, 200);
  const hash = createHash("sha256");
  let bytes = 0;
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { hash: hash.digest("hex"), bytes, type: response.headers.get("Content-Type") };
}

type PartEvent = {
  part: number;
  at: "before-cut" | "during-cut" | "after-cut";
  outcome: number | "failed";
  etag?: string;
};

/** The multipart reservation prepare answered the page: where each part goes and with which headers. */
type Reservation = {
  id: string;
  upload_request: { headers: Record<string, string> };
  multipart: { part_url: string };
};

/** What the page sent and read while it uploaded, as the test watches it from the browser's side. */
type UploadTraffic = {
  parts: PartEvent[];
  resumeReads: { parts: { part_number: number; etag: string }[] }[];
  reservation?: Reservation;
  /** The phase stamped on each part event from now on. */
  phase: PartEvent["at"];
};

/** Records the page's part PUTs (answered or failed), its prepare's reservation and its resume reads. */
function watchUploadTraffic(page: Page): UploadTraffic {
  const traffic: UploadTraffic = { parts: [], resumeReads: [], phase: "before-cut" };
  const partOf = (url: string) => Number(/\/parts\/(\d+)$/.exec(new URL(url).pathname)?.[1] ?? Number.NaN);
  page.on("response", async (response) => {
    const request = response.request();
    const url = new URL(request.url());
    const uploadId = traffic.reservation?.id;
    if (request.method() === "PUT" && url.pathname.includes("/parts/")) {
      const at = traffic.phase;
      const etag = (await response.allHeaders()).etag;
      traffic.parts.push({ part: partOf(request.url()), at, outcome: response.status(), etag });
    } else if (request.method() === "POST" && url.pathname.endsWith("/media-uploads")) {
      traffic.reservation = await expectJson<Reservation>(response, 201);
    } else if (request.method() === "GET" && uploadId && url.pathname.endsWith(`/media-uploads/${uploadId}`)) {
      traffic.resumeReads.push(await expectJson(response, 200));
    }
  });
  page.on("requestfailed", (request) => {
    if (request.method() === "PUT" && request.url().includes("/parts/")) {
      traffic.parts.push({ part: partOf(request.url()), at: traffic.phase, outcome: "failed" });
    }
  });
  return traffic;
}

/**
 * Whether the server still stores part `part` for a PUT the cut broke: the part stays leased to that PUT
 * until its body has failed or been stored. Asked with a PUT whose Content-Length is wrong, which stores
 * nothing: a leased part answers 409 before the length is checked, a free one 422.
 */
async function partStillLeased(reservation: Reservation, part: number): Promise<boolean> {
  const response = await fetch(reservation.multipart.part_url.replace("{part_number}", String(part)), {
    method: "PUT",
    headers: { ...reservation.upload_request.headers, "Content-Type": "video/mp4" },
    body: "x",
  });
  if (response.status === 409) return true;
  await expectStatus(response, 422);
  return false;
}

/**
 * Waits until the server has settled every part PUT the cut broke (stored it or dropped it). Restoring the
 * network before that makes the client re-send those parts into a 409, and its first resume read miss
 * the ones still being stored.
 */
async function untilCutPartsSettle(traffic: UploadTraffic): Promise<void> {
  const reservation = traffic.reservation;
  if (!reservation) throw new Error("the page cut off before prepare answered");
  // Asked again each round: the browser reports the PUTs the cut broke one by one.
  const broken = () => [...new Set(traffic.parts.filter((e) => e.outcome === "failed").map((e) => e.part))];
  await poll(
    () => Promise.all(broken().map(async (part) => ({ part, leased: await partStillLeased(reservation, part) }))),
    (parts) => parts.length > 0 && parts.every((part) => !part.leased),
    { what: "every part the cut broke settled on the server", timeoutMs: 30_000 },
  );
}

/**
 * The resume after the cut: the client asked the API which parts it holds, the API named those stored
 * before, the client sent none of those again, and every part was stored exactly once.
 */
function expectResumedWithoutResending(traffic: UploadTraffic, storedBeforeRestore: Set<number>, partCount: number) {
  const { parts, resumeReads } = traffic;
  // After the cut the client asked the API which parts it holds; the API's answer named those stored before.
  expect(resumeReads.length).toBeGreaterThanOrEqual(1);
  const heldAtResume = new Map(resumeReads[0]?.parts.map((part) => [part.part_number, part.etag]));
  for (const part of storedBeforeRestore) {
    expect(heldAtResume.get(part), `part ${part}`).toBe(parts.find((e) => e.part === part && e.outcome === 204)?.etag);
  }
  // ...and sent none of those again. A part whose 204 the cut swallowed was stored all the same: the API
  // listed it, so it was not sent again either. No part was stored twice, none is missing.
  const resent = parts.filter((event) => event.at === "after-cut" && heldAtResume.has(event.part));
  expect(resent).toEqual([]);
  const answered = parts.filter((event) => event.outcome === 204).map((event) => event.part);
  expect(new Set(answered).size).toBe(answered.length);
  const stored = [...new Set([...answered, ...heldAtResume.keys()])].sort((a, b) => a - b);
  expect(stored).toEqual(Array.from({ length: partCount }, (_, i) => i + 1));
}

describe.skipIf(!browserAvailable)("a 300 MB upload from a browser on another origin survives a cut connection", () => {
  let browser: Browser;
  let dir: string;
  const store = { id: randomUUID(), token: `e2e-multipart-${randomUUID()}` };

  beforeAll(async () => {
    browser = await launchBrowser();
    dir = await mkdtemp(join(tmpdir(), "multipart-e2e-"));
    // A store that hosts product videos: its limit raised past the single-PUT ceiling.
    await loadFixture(baseUrl, {
      stores: [{ id: store.id, name: "Video shop", plan_active: true, upload_limit_bytes: 1_000_000_000 }],
      tokens: [{ token: store.token, store_ids: [store.id], abilities: ["media:write"] }],
    });
  });

  afterAll(async () => {
    await browser?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("CORS: any origin may preflight a part PUT with X-Upload-Token, and read its ETag", async () => {
    const preflight = await fetch(`${baseUrl}/api/v1/media-uploads/${randomUUID()}/parts/1`, {
      method: "OPTIONS",
      headers: {
        Origin: "https://any-shop.example",
        "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "x-upload-token, content-type",
      },
    });
    await expectStatus(preflight, 204);
    // The byte PUT's open policy must cover its parts too (src/http/cors.ts).
    expect(preflight.headers.get("Access-Control-Allow-Origin"), "part PUTs take the byte PUT's CORS policy").toBe("*");
    expect(preflight.headers.get("Access-Control-Allow-Headers")?.toLowerCase()).toContain("x-upload-token");
    const put = await fetch(`${baseUrl}/api/v1/media-uploads/${randomUUID()}/parts/1`, {
      method: "PUT",
      body: "x",
      headers: { Origin: "https://any-shop.example", "X-Upload-Token": "x" },
    });
    expect(put.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(put.headers.get("Access-Control-Expose-Headers")).toContain("ETag");
  });

  it("Uppy resumes after the network comes back, sends only the parts not stored, and the hosted bytes are the file's", async () => {
    const path = join(dir, "clip.mp4");
    const fileHash = await writeVideo(path, FILE_BYTES);
    const context: BrowserContext = await browser.newContext();
    const page: Page = await context.newPage();
    const traffic = watchUploadTraffic(page);
    const { parts } = traffic;

    const query = new URLSearchParams({ api: `${baseUrl}/api/v1`, token: store.token, store: store.id });
    await page.goto(`${pageUrl}/?${query}`);
    await page.setInputFiles("#file", path);
    await page.click("#submit");

    // Cut the network once a few parts are stored and more are on their way.
    await expect
      .poll(() => parts.filter((event) => event.outcome === 204).length, { timeout: 60_000, interval: 50 })
      .toBeGreaterThanOrEqual(PARTS_BEFORE_CUT);
    traffic.phase = "during-cut";
    await context.setOffline(true);
    await expect.poll(() => page.locator("#status").textContent(), { timeout: 10_000 }).toContain("Connection lost");
    await untilCutPartsSettle(traffic);
    const storedBeforeRestore = new Set(parts.filter((event) => event.outcome === 204).map((event) => event.part));
    traffic.phase = "after-cut";
    await context.setOffline(false);

    await expect
      .poll(() => page.locator("#status").textContent(), { timeout: 120_000, interval: 250 })
      .toBe("Hosted: clip.mp4");

    // The cut broke parts in flight, and stopped the upload short of the end.
    expect(parts.some((event) => event.at === "during-cut" && event.outcome === "failed")).toBe(true);
    const partCount = Math.ceil(FILE_BYTES / (8 * MiB));
    expect(storedBeforeRestore.size).toBeLessThan(partCount);
    expectResumedWithoutResending(traffic, storedBeforeRestore, partCount);

    const fileUrl = (await page.locator("#result code").textContent()) as string;
    expect(fileUrl).toBe(`${baseUrl}/media/${store.id}/${traffic.reservation?.id}.mp4`);
    expect(await page.locator("#hosted-video").count()).toBe(1);
    const hosted = await sha256Of(fileUrl);
    expect(hosted).toEqual({ hash: fileHash, bytes: FILE_BYTES, type: "video/mp4" });
    await context.close();
  }, 240_000);
});
