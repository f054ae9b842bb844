import { describe, expect, it } from "vitest";
import { VariantMemory } from "../../src/media/variant-memory";

const variant = (size: number, fill = 1) => ({ bytes: new Uint8Array(size).fill(fill), etag: `"${size}-${fill}"` });

describe("the isolate's memory of widths (docs/responsive-images.md, reads)", () => {
  it("answers what it was given, unchanged", () => {
    const memory = new VariantMemory(1000, 500);
    memory.remember("a", variant(100, 7));
    expect(memory.get("a")).toEqual(variant(100, 7));
    expect(memory.get("b")).toBeUndefined();
  });

  it("never holds more bytes than its bound: the least recently read goes first", () => {
    const memory = new VariantMemory(1000, 500);
    memory.remember("a", variant(400));
    memory.remember("b", variant(400));
    memory.get("a"); // b is now the least recently used
    memory.remember("c", variant(400));
    expect(memory.size).toBe(800);
    expect(memory.get("b")).toBeUndefined();
    expect(memory.get("a")).toBeDefined();
    expect(memory.get("c")).toBeDefined();
  });

  it("keeps no entry larger than its entry bound, and counts a replaced entry once", () => {
    const memory = new VariantMemory(1000, 500);
    expect(memory.fits(501)).toBe(false);
    memory.remember("big", variant(501));
    expect(memory.get("big")).toBeUndefined();
    memory.remember("a", variant(300, 1));
    memory.remember("a", variant(200, 2));
    expect(memory.size).toBe(200);
    expect(memory.get("a")?.etag).toBe('"200-2"');
  });
});
