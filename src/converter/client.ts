import { log } from "../lib/log";
import type { ConverterService, SourceBytes } from "./contract";

/**
 * The API Worker's side of the converter: every call over the `CONVERTER` binding goes through
 * {@link askConverter}, so that a converter that is missing, not running or failing is one kind of error,
 * which each caller answers as its contract says (complete and `?width=`: 503 with `Retry-After`).
 */

/** Seconds a 503 asks the client to wait: a converter restarting or being deployed is back within seconds. */
export const converterRetryAfterSeconds = 2;

/** The converter could not do what it was asked; `reason` says why in words a client may read. */
export class ConverterUnavailableError extends Error {
  override name = "ConverterUnavailableError";
  constructor(readonly reason: string) {
    super(`the image converter is unavailable: ${reason}`);
  }
}

/** Why a call over the binding failed, from the runtime's error: what an operator would look for first. */
function causeOf(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  if (/exceeded cpu|cpu time limit/i.test(text)) return "it ran out of CPU time";
  if (/memory limit|out of memory/i.test(text)) return "it ran out of memory";
  // wrangler dev without the converter's process: "Couldn't find a local dev session for … to proxy to";
  // deployed without the converter: the service is not found.
  if (/local dev session|not found|no such (service|worker)|not deployed|connect/i.test(text))
    return "it is not running";
  return "it failed";
}

/**
 * Calls the converter through the API Worker's binding (`env.CONVERTER`). Any failure (no binding, the converter not running,
 * an exception in it, its isolate out of CPU or memory) is logged with the runtime's words and thrown as a
 * {@link ConverterUnavailableError} naming the cause.
 */
export async function askConverter<T>(
  binding: ConverterService | undefined,
  context: Record<string, unknown>,
  ask: (converter: ConverterService) => Promise<T>,
): Promise<T> {
  if (!binding) throw new ConverterUnavailableError("the API Worker has no CONVERTER binding");
  try {
    return await ask(binding);
  } catch (error) {
    log.error("converter: the call failed", { ...context, error: String(error) });
    throw new ConverterUnavailableError(causeOf(error));
  }
}

/**
 * An R2 object as the converter reads it: its size, and a GET of its body on every `open` (the converter calls
 * it back over the binding; a decoder that reads the file twice, as a GIF's scan then its decoding, opens it
 * twice).
 */
export function r2Source(bucket: R2Bucket, key: string, size: number): SourceBytes {
  return {
    size,
    async open() {
      const object = await bucket.get(key);
      if (!object) throw new Error(`the object at ${key} is gone`);
      return object.body;
    },
  };
}
