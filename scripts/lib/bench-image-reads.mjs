// Reads of a hosted image's served variants (`?width=N`, `?format=avif`), shared by the image benches
// (bench-widths.mjs, bench-avif.mjs): cold first requests of a freshly hosted photo beside sharp doing the same
// work, and warm reads beside the Worker's trivial route under load and alone.
import sharp from "sharp";
import { hostImage, loadRoute, sequentialGets, timedGet } from "./bench-http.mjs";
import { num, stats } from "./bench-report.mjs";
import { log } from "./bench-run.mjs";

/** The large photo as the image benches host it. */
export const hostPhoto = (server, jpeg, hasField) =>
  hostImage(server, { bytes: jpeg, filename: "photo.jpg", contentType: "image/jpeg" }, hasField);

/**
 * `rounds` rounds, each hosting the photo anew so every timed request is a real first one: per width, the Worker's
 * first `?{query(width)}` timed from here, then `sharpOnce(hostedWebp, width, height)` doing the same from the
 * hosted WebP, paired. The isolate's first variant (`warmQuery`) creates the codec instances: not timed. Per
 * width: the Worker's and sharp's times, their ratio within each round, and the bytes of the first round. With
 * `exactWidth` the variant must be as wide as asked.
 */
export async function coldBesideSharp(
  server,
  jpeg,
  { rounds, widths, query, warmQuery, sharpOnce, hasField, label, exactWidth = true },
) {
  const first = await hostPhoto(server, jpeg, hasField);
  await timedGet(`${first.file_url}?${warmQuery}`);
  const runs = new Map(widths.map((width) => [width, []]));
  for (let round = 0; round < rounds; round++) {
    const hosted = await hostPhoto(server, jpeg, hasField);
    const { bytes: hostedBytes } = await timedGet(hosted.file_url);
    for (const width of widths) {
      const worker = await timedGet(`${hosted.file_url}?${query(width)}`);
      const { width: w, height: h } = await sharp(worker.bytes).metadata();
      if (exactWidth && w !== width) throw new Error(`?${query(width)} answered ${w} px wide`);
      const native = await sharpOnce(hostedBytes, w, h);
      runs
        .get(width)
        .push({ worker: worker.ms, sharp: native.ms, height: h, bytes: worker.bytes.length, sharpBytes: native.bytes });
      log(`  cold ${label} ${width}: worker ${num(worker.ms)} ms, sharp ${num(native.ms)} ms`);
    }
  }
  return widths.map((width) => {
    const of = runs.get(width);
    return {
      width,
      height: of[0].height,
      worker: stats(of.map((r) => r.worker)),
      sharp: stats(of.map((r) => r.sharp)),
      ratio: stats(of.map((r) => r.worker / r.sharp)),
      bytes: of[0].bytes,
      sharpBytes: of[0].sharpBytes,
    };
  });
}

/**
 * Warm reads of `url` (a variant, made once first so every later read is warm) beside `GET /api/v1/_dev/ping`:
 * a warm-up of `warmupSeconds` each, then `rounds` rounds of `loadSeconds` of autocannon over `connections`, the
 * two taking turns; with `sequential`, that many one-at-a-time reads after each load (p50 `alone`). Per round, per
 * route (`ping`, and `name` for the variant): req/s and p50 under load, and `alone`.
 */
export async function warmBesidePing(
  server,
  url,
  { name, rounds, connections, loadSeconds, warmupSeconds, sequential },
) {
  const routes = [
    { name: "ping", url: `${server.url}/api/v1/_dev/ping` },
    { name, url },
  ];
  await timedGet(url);
  for (const route of routes) await loadRoute(route.url, { connections, seconds: warmupSeconds });
  const figures = [];
  for (let round = 0; round < rounds; round++) {
    const figure = {};
    for (let k = 0; k < routes.length; k++) {
      const route = routes[(round + k) % routes.length];
      const { rps, p50 } = await loadRoute(route.url, { connections, seconds: loadSeconds });
      const alone = sequential
        ? (await sequentialGets(route.url, { count: sequential, accept: (status) => status < 300 })).p50
        : undefined;
      figure[route.name] = { rps, p50, alone };
      log(
        `  warm round ${round + 1} ${route.name}: ${num(rps)} req/s${sequential ? `, alone p50 ${num(alone)} ms` : ""}`,
      );
    }
    figures.push(figure);
  }
  return figures;
}
