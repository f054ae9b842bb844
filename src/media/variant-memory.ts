import { Lru } from "../lib/lru";

/**
 * The isolate's own copy of the widths it served last: the first tier of a `?width=` read, before the edge
 * cache. A width of an image never changes once made (media is immutable and a width is made once), so a
 * copy is never stale; it only has to be bounded. The edge cache (Cache API) is a subrequest per read even
 * when it hits; a phone scrolling a product list asks the same few widths again and again, and reading them
 * from the isolate's memory makes those reads as cheap as the router's trivial route.
 *
 * Bounded by bytes, oldest use first out. The bound is part of the isolate's memory plan
 * (docs/conversion.md, "Two WebAssembly instances and their shares"): a conversion's peak stays under 90 MiB,
 * and 4 MiB of widths beside it keeps the isolate under the 110 MiB target.
 */

/** Bytes of widths kept per isolate. */
const VARIANT_MEMORY_BYTES = 4 * 1024 * 1024;
/** A width larger than this is not kept (a 1920-px photo is ~110 KiB; a rare huge one would evict dozens). */
const VARIANT_MEMORY_ENTRY_BYTES = 256 * 1024;

export type RememberedVariant = { bytes: Uint8Array; etag: string };

export class VariantMemory {
  private readonly entries: Lru<string, RememberedVariant>;
  private readonly maxEntryBytes: number;

  constructor(maxBytes = VARIANT_MEMORY_BYTES, maxEntryBytes = VARIANT_MEMORY_ENTRY_BYTES) {
    this.entries = new Lru(maxBytes, (entry) => entry.bytes.byteLength);
    this.maxEntryBytes = Math.min(maxEntryBytes, maxBytes);
  }

  /** Bytes held now. */
  get size(): number {
    return this.entries.weight;
  }

  get(key: string): RememberedVariant | undefined {
    return this.entries.get(key);
  }

  /** Whether a variant of `size` bytes would be kept. */
  fits(size: number): boolean {
    return size <= this.maxEntryBytes;
  }

  remember(key: string, entry: RememberedVariant): void {
    if (this.fits(entry.bytes.byteLength)) this.entries.set(key, entry);
  }

  /** Drops every entry (tests use it to reach the edge cache and R2 behind this tier). */
  clear(): void {
    this.entries.clear();
  }
}
