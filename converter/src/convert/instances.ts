import turboWasm from "@cwasm/jpeg-turbo/jpeg-turbo.wasm";
import { releaseAvif } from "./avif";
import { largeJpegScratchBytes, libjpegOverheadBytes, scratchShareBytes } from "./budget";
import { ImageTooLargeError } from "./errors";
import type { StillImageKind } from "./input";
import { arenaAlloc, createJpegTurbo, type JpegTurbo } from "./native";
import { createWebpCodec, type WebpCodec } from "./webp-codec";
import codecWasm from "./webp-codec.wasm";

/**
 * The two WebAssembly instances an isolate keeps, and what each one's memory holds. WebAssembly memory
 * never shrinks, so the isolate carries each instance's high-water mark; admission keeps each under its
 * share whatever the sequence of images (docs/conversion.md):
 * - `codec` (our build of libwebp, zlib's inflate, libjpeg-turbo's decoder, png.c, gif.c, jpeg.c and resize.c):
 *   the target image, the resizer, the PNG, GIF and baseline JPEG decoders (a baseline JPEG file too) and an
 *   interlaced image's even rows, the WebP input file, and the encoder's work. The target is written there by
 *   the resizer, so the encoder takes it in place and frees it.
 * - `turbo` (the prebuilt libjpeg-turbo, created for the first progressive JPEG): the scratch arena of the
 *   progressive decoder: the file and its coefficients. One block malloc'd at creation and handed out
 *   by a bump pointer per conversion, because libjpeg's small lifelong allocations between large freed
 *   buffers fragmented the heap (measured: 46 MB instead of ~31 over a sequence).
 */
export type Codecs = {
  readonly turbo: JpegTurbo;
  readonly scratch: number;
  /** The scratch block's size: `scratchBlockBytes`, or more once a large JPEG grew it. */
  readonly scratchBytes: number;
  readonly codec: WebpCodec;
  /** Lets go of the scratch instance now (a conversion that needs none and whose codec grows past its share). */
  releaseScratch(): void;
  /**
   * Grows the scratch block to `bytes` (at most `largeJpegScratchBlockBytes`), its contents kept: the block is
   * the last one in libjpeg's heap, so freeing it and asking for more extends it in place. The isolate then
   * holds a scratch past its share: the next conversion that is not a JPEG lets go of it (`getCodecs`).
   */
  growScratch(bytes: number): void;
};

type JpegInstance = { turbo: JpegTurbo; scratch: number; scratchBytes: number };

const scratchBlockBytes = scratchShareBytes - libjpegOverheadBytes;
/** The scratch block a large JPEG may grow it to (budget.ts, `largeJpegScratchBytes`). */
export const largeJpegScratchBlockBytes = largeJpegScratchBytes - libjpegOverheadBytes;

function createTurbo(): JpegInstance {
  const turbo = createJpegTurbo(turboWasm);
  const scratch = arenaAlloc(turbo, scratchBlockBytes);
  if (scratch === null) throw new Error("could not reserve the conversion scratch arena");
  return { turbo, scratch, scratchBytes: scratchBlockBytes };
}

let jpegInstance: JpegInstance | null = null;
/**
 * Whether the scratch's memory has grown past its share (a large JPEG). Later JPEGs keep using it (their codec
 * stays small); any other conversion lets go of it first, so a grown scratch is never held beside a codec
 * that may fill its share.
 */
let scratchGrown = false;
let codecInstance: WebpCodec | null = null;
/**
 * Whether the codec's memory has grown past its share (a large WebP, which let go of the scratch instance).
 * Conversions that need no scratch keep using it; a JPEG lets go of it first, so the scratch is never held
 * beside a grown codec.
 */
let codecGrown = false;

/**
 * This isolate's instances for one conversion (inside the conversion lock, so by one request): the codec at
 * once, the scratch instance on first use (a conversion that decodes no JPEG never creates it). `"avif"` is an
 * AVIF job (a hosted WebP decoded for the AVIF encoder, avif.ts): it lets go of the scratch and of a grown codec,
 * so the encoder's memory sits beside a codec within its share only; every other job lets go of the encoder
 * (docs/conversion.md, "AVIF"). Each stays
 * fixed for the conversion, even if a stalled conversion's successor lets go of them meanwhile
 * (`releaseInstances`); `releaseScratch` drops this conversion's hold on the scratch too, so it is garbage
 * while the conversion runs.
 */
export function getCodecs(kind: StillImageKind | "avif"): Codecs {
  if (kind === "avif") {
    if (codecGrown) releaseInstances();
    jpegInstance = null;
    scratchGrown = false;
  } else releaseAvif();
  if (codecGrown && kind === "jpeg") releaseInstances();
  if (scratchGrown && kind !== "jpeg") {
    jpegInstance = null;
    scratchGrown = false;
  }
  codecInstance ??= createWebpCodec(codecWasm);
  const codec = codecInstance;
  let jpeg: JpegInstance | null = null;
  const ownJpeg = () => {
    if (!jpeg) {
      jpegInstance ??= createTurbo();
      jpeg = jpegInstance;
    }
    return jpeg;
  };
  return {
    get turbo() {
      return ownJpeg().turbo;
    },
    get scratch() {
      return ownJpeg().scratch;
    },
    get scratchBytes() {
      return ownJpeg().scratchBytes;
    },
    codec,
    releaseScratch() {
      jpeg = null;
      jpegInstance = null;
    },
    growScratch(bytes) {
      const instance = ownJpeg();
      if (bytes <= instance.scratchBytes) return;
      if (bytes > largeJpegScratchBlockBytes) throw new RangeError("the scratch cannot grow that far");
      const { exports } = instance.turbo;
      exports.free(instance.scratch);
      const grown = exports.malloc(bytes);
      scratchGrown = true;
      if (grown !== instance.scratch) {
        // Not where the block was: its contents are gone and the memory grew by the whole block. Never seen
        // (nothing of libjpeg's outlives a decode above the block); this instance is not used again.
        jpeg = null;
        jpegInstance = null;
        scratchGrown = false;
        throw new ImageTooLargeError("The image is too large to convert: there is not enough memory.");
      }
      instance.scratchBytes = bytes;
    },
  };
}

/** Lets go of every instance (the AVIF encoder's too): the next conversion starts from fresh ones. */
export function releaseInstances(): void {
  releaseAvif();
  jpegInstance = null;
  codecInstance = null;
  codecGrown = false;
  scratchGrown = false;
}

/**
 * Records that this conversion's codec grows past its share (a large WebP or baseline JPEG): the scratch
 * instance is let go now, and the grown codec by the next JPEG conversion, so the two are never held together.
 */
export function growCodecPastShare(codecs: Codecs): void {
  codecs.releaseScratch();
  codecGrown = true;
}

/**
 * One conversion at a time per isolate, because the instances and their arena are shared. A waiter polls
 * with its own timer rather than awaiting the holder's promise: Workers refuse I/O from code that a promise
 * of another request resumed ("Cannot perform I/O on behalf of a different request"), which is how a shared
 * promise queue made concurrent completes fail. A holder that shows no progress for `stalledMs` (its
 * request was cancelled while it awaited the upload's bytes) loses the lock; the next holder starts from
 * fresh instances, since the abandoned conversion may have left buffers behind.
 */
const lock = { holder: 0, issued: 0, lastProgress: 0 };
/** Longer than any synchronous step may run (a Worker's CPU limit ends a request before). */
const stalledMs = 30_000;
const pollMs = 5;

async function acquireLock(): Promise<number> {
  while (lock.holder !== 0) {
    if (Date.now() - lock.lastProgress > stalledMs) {
      lock.holder = 0;
      releaseInstances();
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  lock.issued += 1;
  lock.holder = lock.issued;
  lock.lastProgress = Date.now();
  return lock.holder;
}

/** Marks progress of the conversion holding `ticket`; throws if it lost the lock meanwhile. */
function progress(ticket: number): void {
  if (lock.holder !== ticket) throw new Error("the conversion lost its lock after stalling");
  lock.lastProgress = Date.now();
}

function releaseLock(ticket: number): void {
  if (lock.holder === ticket) lock.holder = 0;
}

/** Runs `convert` holding the conversion lock; `tick` marks its progress (`progress`). */
export async function underConversionLock<T>(convert: (tick: () => void) => Promise<T>): Promise<T> {
  const ticket = await acquireLock();
  try {
    return await convert(() => progress(ticket));
  } finally {
    releaseLock(ticket);
  }
}

/** The codec's memory when the last conversion ended: its high-water mark then. */
let lastCodecBytes = 0;

/**
 * Current linear-memory sizes of this isolate's instances in bytes (0 for one not created), and the codec's
 * size at the end of the last conversion (for tests).
 */
export function codecMemory(): { scratch: number; codec: number; lastConversionCodec: number } {
  return {
    scratch: jpegInstance?.turbo.exports.memory.buffer.byteLength ?? 0,
    codec: codecInstance?.memoryBytes() ?? 0,
    lastConversionCodec: lastCodecBytes,
  };
}

/** Notes the codec's memory at the end of a conversion (`codecMemory`). */
export function recordCodecBytes(bytes: number): void {
  lastCodecBytes = bytes;
}
