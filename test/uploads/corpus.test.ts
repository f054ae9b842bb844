// The real-world corpus (test/fixtures/corpus/README.md): files from the public test suites of image libraries,
// each with the outcome the project's rules give it in manifest.json. Converted files are compared with what
// libvips or Chromium shows of them (reference.json, written by scripts/corpus-reference.mjs) as a coarse grid
// of per-channel means at the output size; refused ones must be refused with a message naming the problem;
// animated ones are hosted unchanged through the API. `deviations` lists the files that do not meet their
// expectation yet, each with the reason: each must still deviate, so a fix that makes one pass fails here
// until its entry is removed.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  convertToWebp,
  ImageTooLargeError,
  type StillImageKind,
  UnconvertibleImageError,
} from "../../converter/src/convert";
import { decodeWebp } from "../../converter/test/images";
import { type Grid, grid, gridDifference } from "../../scripts/lib/corpus-grid.mjs";
import { uploadMessages } from "../../src/uploads/messages";
import manifestJson from "../fixtures/corpus/manifest.json";
import referenceJson from "../fixtures/corpus/reference.json";
import { json } from "../support/http";
import { complete, servedBytes, stage } from "../support/uploads";

type Entry = {
  expect: "converted" | "refused" | "hosted";
  case: string;
  maxEdge?: number;
  tolerance?: number;
  reference?: "libvips";
  /** For refusals: a regular expression the message must match. */
  message?: string;
};
/** `tolerance`: the manifest's margin plus what libvips's own WebP at the Worker's settings loses of the reference. */
type Reference = { width: number; height: number; by: string; tolerance: number; grid: Grid };

type Manifest = {
  maxEdge: number;
  tolerance: number;
  files: Record<string, Entry>;
  deviations: Record<string, string>;
};
// The two JSON files as their types, once their outline is checked (an import of JSON is typed by its contents).
const manifest = z
  .custom<Manifest>(
    (value) =>
      z
        .object({
          maxEdge: z.number(),
          tolerance: z.number(),
          files: z.record(z.string(), z.object({ expect: z.string() })),
        })
        .safeParse(value).success,
  )
  .parse(manifestJson);
const reference = z
  .custom<Record<string, Reference>>(
    (value) => z.record(z.string(), z.object({ width: z.number(), height: z.number() })).safeParse(value).success,
  )
  .parse(referenceJson);

const prefix = "../fixtures/corpus/";
/** Every image of the corpus, as a data: URL (Vite inlines them; workerd has no file system). */
const inlined = import.meta.glob<string>("../fixtures/corpus/*/*.{png,jpg,gif,webp,bmp}", {
  query: "?inline",
  import: "default",
  eager: true,
});
const files = new Map(Object.entries(inlined).map(([path, url]) => [path.slice(prefix.length), url]));

function bytesOf(name: string): Uint8Array {
  const url = files.get(name);
  if (!url) throw new Error(`${name} is not in test/fixtures/corpus`);
  const binary = atob(url.slice(url.indexOf(",") + 1));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

const kinds: Record<string, StillImageKind> = { png: "png", jpg: "jpeg", gif: "gif", webp: "webp", bmp: "bmp" };
const kindOf = (name: string) => kinds[name.slice(name.lastIndexOf(".") + 1)] as StillImageKind;

/** How a converted file's WebP departs from its reference, or null when it meets it. */
async function convertedOutcome(name: string, entry: Entry): Promise<string | null> {
  const expected = reference[name];
  if (!expected) return "no reference in reference.json (run scripts/corpus-reference.mjs)";
  let out: Awaited<ReturnType<typeof convertToWebp>>;
  try {
    out = await convertToWebp(bytesOf(name), kindOf(name), { maxEdge: entry.maxEdge ?? manifest.maxEdge });
  } catch (error) {
    return `refused: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
  }
  if (Math.abs(out.width - expected.width) > 1 || Math.abs(out.height - expected.height) > 1)
    return `${out.width} × ${out.height}, expected ${expected.width} × ${expected.height}`;
  const decoded = await decodeWebp(out.bytes);
  // A size off by one from rounding is compared by its grid, which covers the same picture.
  const error = gridDifference(grid(decoded.data, decoded.width, decoded.height), expected.grid);
  const tolerance = entry.tolerance ?? expected.tolerance;
  return Math.max(...error) > tolerance
    ? `mean error R, G, B, A ${error.join(", ")} beyond ${tolerance} (reference: ${expected.by})`
    : null;
}

/** How a refused file's conversion departs from a refusal naming the problem, or null. */
async function refusedOutcome(name: string, entry: Entry): Promise<string | null> {
  try {
    const out = await convertToWebp(bytesOf(name), kindOf(name), { maxEdge: manifest.maxEdge });
    return `converted to ${out.width} × ${out.height} instead of being refused`;
  } catch (error) {
    if (!(error instanceof UnconvertibleImageError || error instanceof ImageTooLargeError))
      return `threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}, not a refusal`;
    return new RegExp(entry.message ?? ".").test(error.message)
      ? null
      : `refused with "${error.message}", expected a message matching /${entry.message}/`;
  }
}

/** How an animated file's complete departs from hosting it unchanged under its own extension, or null. */
async function hostedOutcome(name: string): Promise<string | null> {
  const bytes = bytesOf(name);
  const ext = name.slice(name.lastIndexOf(".") + 1);
  const { storeId, token, reservation } = await stage(bytes, {
    filename: name.split("/").pop(),
    content_type: `image/${ext}`,
  });
  const response = await complete(token, storeId, reservation.id);
  if (response.status !== 201) return `complete answered ${response.status}: ${await response.text()}`;
  const body = await json<{ file_url: string; type: string }>(response);
  if (body.type !== "image" || !body.file_url.endsWith(`/${reservation.id}.${ext}`))
    return `hosted as ${body.type} at ${body.file_url}`;
  const stored = await servedBytes(body.file_url);
  return stored.length === bytes.length && stored.every((b, i) => b === bytes[i]) ? null : "hosted bytes differ";
}

function outcome(name: string): Promise<string | null> {
  const entry = manifest.files[name] as Entry;
  if (entry.expect === "converted") return convertedOutcome(name, entry);
  if (entry.expect === "refused") return refusedOutcome(name, entry);
  return hostedOutcome(name);
}

const deviating = Object.entries(manifest.deviations);
const meeting = Object.entries(manifest.files).filter(([name]) => !(name in manifest.deviations));

describe("the real-world corpus (test/fixtures/corpus)", () => {
  it("has a manifest entry for every file, a file for every entry, and a reference for every converted one", () => {
    expect([...files.keys()].sort()).toEqual(Object.keys(manifest.files).sort());
    const converted = Object.keys(manifest.files).filter((name) => manifest.files[name]?.expect === "converted");
    expect(Object.keys(reference).sort()).toEqual(converted.sort());
    for (const name of deviating.map(([name]) => name)) expect(manifest.files, name).toHaveProperty([name]);
  });

  it.each(meeting.map(([name, entry]) => [name, entry.case, entry.expect]))(
    "%s (%s): %s",
    { timeout: 60_000 },
    async (name) => {
      const deviation = await outcome(name);
      if (deviation !== null) expect.fail(deviation);
    },
  );

  it.each(deviating)(
    "%s still deviates (%s): remove it from deviations once it is fixed",
    { timeout: 60_000 },
    async (name) => {
      expect(await outcome(name), "meets its expectation now").not.toBeNull();
    },
  );
});

describe("corpus refusals through the API", () => {
  // A few refusals end to end: complete answers 422 with the conversion's message, and nothing is hosted.
  const refusals = [
    "libjpeg-turbo/testorig12.jpg",
    "made/basn6a08-cut.png",
    "made/test-cut.webp",
    "made/treescap-cut.gif",
  ];

  it.each(refusals)("%s: complete answers 422 with the refusal's message and hosts nothing", async (name) => {
    const bytes = bytesOf(name);
    let reason = "";
    try {
      await convertToWebp(bytes, kindOf(name), { maxEdge: manifest.maxEdge });
    } catch (error) {
      reason = (error as Error).message;
    }
    expect(reason, "the conversion refuses it").not.toBe("");
    const ext = name.slice(name.lastIndexOf(".") + 1);
    const { storeId, token, reservation } = await stage(bytes, { filename: `f.${ext}`, content_type: `image/${ext}` });
    const response = await complete(token, storeId, reservation.id);
    expect(response.status).toBe(422);
    expect((await json<{ message: string }>(response)).message).toBe(uploadMessages.corrupt(reason));
    expect((await env.BUCKET.list({ prefix: `media/${storeId}/` })).objects).toEqual([]);
  });
});
