// The placeholder's cost per complete for `npm run bench:avif` (scripts/bench-avif.mjs): the converter's ThumbHash
// and colour (converter/src/convert/placeholder.ts) and the API's placeholder_url (src/uploads/placeholder-url.ts),
// bundled with esbuild and run in this Node process (workerd's timers do not advance while code runs).
import { loadImageHelpers } from "./lib/bench-images.mjs";
import { num, percentile, spread, stats } from "./lib/bench-report.mjs";
import { importSource } from "./lib/import-source.mjs";

const PLACEHOLDER_RUNS = 60;
const GOAL_MS = 2;

/** The placeholder code of both Workers, bundled for Node. */
async function placeholderCode() {
  return importSource(
    `export { placeholderOf } from "./converter/src/convert/placeholder.ts";
export { placeholderUrl } from "./src/uploads/placeholder-url.ts";`,
    { platform: "node" },
  );
}

export async function measurePlaceholder() {
  const { placeholderOf, placeholderUrl } = await placeholderCode();
  const images = await loadImageHelpers();
  const [width, height] = [2560, 1920];
  const photo = images.photoLike(width, height);
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0, j = 0; i < rgba.length; i += 4, j += photo.length === rgba.length ? 4 : 3) {
    rgba.set(photo.subarray(j, j + 3), i);
    rgba[i + 3] = 255;
  }
  const converter = [];
  const api = [];
  let made;
  for (let run = 0; run < PLACEHOLDER_RUNS + 10; run++) {
    const start = performance.now();
    made = placeholderOf(rgba, width, height);
    const middle = performance.now();
    const url = placeholderUrl(made.placeholder);
    const end = performance.now();
    if (run >= 10) {
      converter.push(middle - start);
      api.push(end - middle);
    }
    if (url.length > 1000) throw new Error(`placeholder_url of ${url.length} characters`);
  }
  const sorted = (values) => [...values].sort((a, b) => a - b);
  return {
    converter: stats(converter),
    api: stats(api),
    total: stats(converter.map((value, i) => value + api[i])),
    p95: percentile(sorted(converter.map((value, i) => value + api[i])), 95),
    urlLength: placeholderUrl(made.placeholder).length,
  };
}

export function placeholderPart(placeholder) {
  return `**Placeholder per complete** (2560 × 1920 target, ${PLACEHOLDER_RUNS} runs after 10 untimed): the converter's ThumbHash and colour ${spread(placeholder.converter)} ms, the API's placeholder_url ${spread(placeholder.api)} ms, together ${spread(placeholder.total)} ms (p95 ${num(placeholder.p95)} ms); placeholder_url ${placeholder.urlLength} characters. Goal ≤ ${GOAL_MS} ms.`;
}
