import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ConverterService } from "../../src/converter/contract";
import { mediaKey } from "../../src/storage/keys";
import { uploadMessages } from "../../src/uploads/messages";
import { api, expectJson, fetchApp } from "../support/http";
import { captureServiceLogs } from "../support/logs";
import { isoMedia, png } from "../support/media-bytes";
import { complete, stage } from "../support/uploads";

/**
 * The converter Worker unreachable or failing (docs/uploads.md, "The converter"): complete answers 503 naming
 * the cause with Retry-After, the upload stays stored, and a retry with the converter back completes it.
 */

const pngUpload = { filename: "photo.png", content_type: "image/png" };

/** Completes with `converter` in place of the CONVERTER binding (undefined: no binding at all). */
function completeWith(converter: Partial<ConverterService> | undefined, staged: Awaited<ReturnType<typeof stage>>) {
  const { token, storeId, reservation } = staged;
  return api(`/media-uploads/${reservation.id}/complete`, {
    method: "POST",
    token,
    store: storeId,
    env: { CONVERTER: converter },
  });
}

async function uploadState(staged: Awaited<ReturnType<typeof stage>>): Promise<string> {
  const { token, storeId, reservation } = staged;
  const status = await api(`/media-uploads/${reservation.id}`, { token, store: storeId });
  return (await expectJson<{ state: string }>(status, 200)).state;
}

/** The real converter's calls, one of them replaced. */
function converterWith(overrides: Partial<ConverterService>): ConverterService {
  return {
    convert: (job) => env.CONVERTER.convert(job),
    makeWidth: (job) => env.CONVERTER.makeWidth(job),
    makeAvif: (job) => env.CONVERTER.makeAvif(job),
    describe: (key) => env.CONVERTER.describe(key),
    ...overrides,
  };
}

// Every failure these tests provoke is logged by the API; the lines are captured and checked.
const logs = captureServiceLogs();

describe("complete without the converter: a missing binding, runtime errors and a lost answer", () => {
  it("no CONVERTER binding: 503 naming it, Retry-After, the upload stays stored; a retry with it completes", async () => {
    const staged = await stage(await png(64, 48), pngUpload);
    const refused = await completeWith(undefined, staged);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("Retry-After")).toBe("2");
    expect(await refused.json()).toEqual({
      message: uploadMessages.converterUnavailable("the API Worker has no CONVERTER binding"),
    });
    expect(await uploadState(staged)).toBe("stored");
    const retried = await complete(staged.token, staged.storeId, staged.reservation.id);
    expect(await expectJson(retried, 201)).toMatchObject({ type: "image", width: 64, height: 48 });
  });

  for (const [runtimeError, reason] of [
    ["Worker exceeded CPU time limit.", "it ran out of CPU time"],
    ["Worker exceeded memory limit.", "it ran out of memory"],
    // What plain `wrangler dev` without the converter's process says (and an older wrangler's words).
    ['Worker "storefront-checkout-converter" not found. Make sure it is running locally.', "it is not running"],
    [
      'Couldn\'t find a local dev session for the "Converter" entrypoint of service "storefront-checkout-converter" to proxy to',
      "it is not running",
    ],
    ["Error: something broke inside", "it failed"],
  ] as const) {
    it(`a converter call that fails with "${runtimeError}" answers 503 saying ${reason}; the retry completes`, async () => {
      const staged = await stage(await png(40, 30), pngUpload);
      const failing = converterWith({ convert: () => Promise.reject(new Error(runtimeError)) });
      const refused = await completeWith(failing, staged);
      expect(refused.status).toBe(503);
      expect(refused.headers.get("Retry-After")).toBe("2");
      expect(await refused.json()).toEqual({ message: uploadMessages.converterUnavailable(reason) });
      logs.expectLogged("error", { message: "converter: the call failed", error: `Error: ${runtimeError}` });
      expect(await uploadState(staged)).toBe("stored");
      const retried = await complete(staged.token, staged.storeId, staged.reservation.id);
      expect(await expectJson(retried, 201)).toMatchObject({ type: "image", width: 40, height: 30 });
    });
  }

  it("a converter call whose answer is lost after converting: nothing is hosted, and the retry completes", async () => {
    const staged = await stage(await png(80, 60), pngUpload);
    const answerLost = converterWith({
      convert: async (job) => {
        await env.CONVERTER.convert(job);
        throw new Error("Network connection lost.");
      },
    });
    expect((await completeWith(answerLost, staged)).status).toBe(503);
    logs.expectLogged("error", { message: "converter: the call failed", error: "Error: Network connection lost." });
    expect(await env.BUCKET.head(mediaKey(staged.storeId, staged.reservation.id, "webp"))).toBeNull();
    expect(await uploadState(staged)).toBe("stored");
    const retried = await complete(staged.token, staged.storeId, staged.reservation.id);
    const result = await expectJson<{ file_url: string; width: number }>(retried, 201);
    expect(result.width).toBe(80);
    const served = await fetchApp(result.file_url);
    expect(served.headers.get("Content-Type")).toBe("image/webp");
  });
});

describe("complete without the converter: a cut stream, what needs no conversion, and widths", () => {
  it("a WebP stream that cuts off half-way stores nothing: 503 with Retry-After, the upload stored, the retry completes", async () => {
    const staged = await stage(await png(120, 90), pngUpload);
    const cutOff = converterWith({
      convert: async (job) => {
        const outcome = await env.CONVERTER.convert(job);
        if (!("converted" in outcome)) return outcome;
        const reader = outcome.converted.body.getReader();
        let sent = 0;
        // Half the bytes, then the stream fails, as it does when the converter's isolate goes away.
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            const { value, done } = await reader.read();
            if (done || sent >= outcome.converted.size / 2)
              return controller.error(new Error("Network connection lost."));
            sent += value.length;
            controller.enqueue(value);
          },
        });
        return { converted: { ...outcome.converted, body } };
      },
    });
    const refused = await completeWith(cutOff, staged);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("Retry-After")).toBe("2");
    expect(await refused.json()).toEqual({ message: uploadMessages.convertedNotStored });
    logs.expectLogged("error", { message: "upload: storing the converted image failed" });
    expect(await env.BUCKET.head(mediaKey(staged.storeId, staged.reservation.id, "webp"))).toBeNull();
    expect(await uploadState(staged)).toBe("stored");
    const retried = await complete(staged.token, staged.storeId, staged.reservation.id);
    expect(await expectJson(retried, 201)).toMatchObject({ type: "image", width: 120, height: 90 });
  });

  it("hosts what needs no conversion (a video, a file) without the converter", async () => {
    const video = await stage(isoMedia("isom"), { filename: "clip.mp4", content_type: "video/mp4" });
    expect(await expectJson(await completeWith(undefined, video), 201)).toMatchObject({ type: "video" });
    const file = await stage(await png(8, 8), { ...pngUpload, type: "file" });
    expect(await expectJson(await completeWith(undefined, file), 201)).toMatchObject({ type: "image" });
  });

  it("a width asked while the converter is missing answers 503 with Retry-After, and is made once it is back", async () => {
    const staged = await stage(await png(400, 300), pngUpload);
    const hosted = await expectJson<{ file_url: string }>(
      await complete(staged.token, staged.storeId, staged.reservation.id),
      201,
    );
    const refused = await fetchApp(`${hosted.file_url}?width=160`, {}, { CONVERTER: undefined });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("Retry-After")).toBe("2");
    logs.expectLogged("error", { message: "media: making a width failed", width: 160 });
    const made = await fetchApp(`${hosted.file_url}?width=160`);
    expect(made.status).toBe(200);
    expect(made.headers.get("Content-Type")).toBe("image/webp");
  });
});
