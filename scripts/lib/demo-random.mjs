// Seeded randomness of the demo fixture (scripts/make-demo-fixture.mjs): one independent stream per part.

const SEED = 20261101;

/** mulberry32: tiny, fast and good enough for fixture data; returns floats in [0, 1). */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a, to derive one independent stream per section from the single seed. */
function hashString(text) {
  let hash = 0x811c9dc5;
  for (const char of text) hash = Math.imul(hash ^ char.codePointAt(0), 0x01000193) >>> 0;
  return hash;
}

/**
 * A random source for one part of the document. Separate streams mean that adding, say, a customer
 * field does not reshuffle every subscription generated after it.
 */
export function randomSource(stream) {
  const next = mulberry32(SEED ^ hashString(stream));
  const int = (min, max) => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    chance: (probability) => next() < probability,
    pick: (items) => items[Math.floor(next() * items.length)],
    /** Picks a key of `weights` ({key: weight}) proportionally to its weight. */
    weighted(weights) {
      const entries = Object.entries(weights);
      let roll = next() * entries.reduce((sum, [, weight]) => sum + weight, 0);
      for (const [key, weight] of entries) {
        roll -= weight;
        if (roll < 0) return key;
      }
      return entries[entries.length - 1][0];
    },
    /** A UUID v4-shaped id (version nibble 4, variant nibble 8..b) built from the stream. */
    uuid() {
      const bytes = Array.from({ length: 16 }, () => int(0, 255));
      bytes[6] = (bytes[6] & 0x0f) | 0x40;
      bytes[8] = (bytes[8] & 0x3f) | 0x80;
      const hex = bytes.map((byte) => byte.toString(16).padStart(2, "0")).join("");
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    },
    alphanumeric(length) {
      const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
      return Array.from({ length }, () => alphabet[int(0, alphabet.length - 1)]).join("");
    },
  };
}
