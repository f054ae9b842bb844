import type { CoordinatorStub } from "./coordinator";
import { stagedKey } from "./keys";
import type { Outcome } from "./store-coordinator";
import type { UploadRecord } from "./upload-state";

/**
 * Whether storing failed because of the body rather than the storage: it was not Content-Length bytes
 * long (the FixedLengthStream's own errors), or the client went away mid-body. workerd (2026-11-02)
 * reports a client gone mid-body to the R2 put as `TypeError: Can't read from request stream because
 * client disconnected.` once it has noticed, or as `Error: Network connection lost.` when the body's
 * connection breaks under a read in progress (the same error a caller's aborted or failed body stream
 * gives a Worker it calls). Telling them apart by the error keeps the body on workerd's native pipe: a JS
 * byte counter in the stream doubled the PUT's memory growth and halved its throughput
 * (docs/benchmarks.md, part 3).
 */
export function isBodyFailure(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /FixedLengthStream|client disconnected|Network connection lost/i.test(message);
}

/** Whether the body was stored, with the coordinator's outcome, or why not. */
export type StoreResult = { stored: true; finished: Outcome } | { stored: false; cause: "body" | "storage" };

/**
 * Streams the body into the upload's staged key and records the outcome with the coordinator; a failed
 * body or write leaves no object behind and the upload `reserved` again.
 */
export async function storeBody(
  env: Env,
  coordinator: CoordinatorStub,
  storeId: string,
  upload: UploadRecord,
  body: ReadableStream,
  requestId: string,
): Promise<StoreResult> {
  // The declared size is known, so the body streams into R2 without ever being held in memory.
  const key = stagedKey(storeId, upload.id);
  try {
    await env.BUCKET.put(key, body.pipeThrough(new FixedLengthStream(upload.size)), {
      httpMetadata: { contentType: upload.contentType },
    });
  } catch (error) {
    await env.BUCKET.delete(key).catch(() => {});
    const cause = isBodyFailure(error) ? "body" : "storage";
    if (cause === "storage") {
      console.error(
        JSON.stringify({
          level: "error",
          message: "upload: storing bytes failed",
          request_id: requestId,
          upload_id: upload.id,
          error: String(error),
        }),
      );
    }
    await coordinator.finishPut(upload.id, false);
    return { stored: false, cause };
  }
  const finished = await coordinator.finishPut(upload.id, true);
  // The reservation lapsed while the bytes streamed in: keep nothing of it.
  if (!finished.ok) await env.BUCKET.delete(key);
  return { stored: true, finished };
}
