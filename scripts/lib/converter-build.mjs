// The converter Worker built as `wrangler deploy` would upload it (converter/wrangler.toml), into a throwaway
// folder: the API's tests bind it as an auxiliary Worker (vitest.config.ts), which the test runner
// cannot load from a wrangler configuration, only from a built script.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const projectRoot = fileURLToPath(new URL("../..", import.meta.url));
const wranglerBin = join(projectRoot, "node_modules/wrangler/bin/wrangler.js");

/** The converter's name, compatibility date and flags, as its configuration states them. */
export function converterSettings() {
  const toml = readFileSync(join(projectRoot, "converter/wrangler.toml"), "utf8");
  const value = (key) => new RegExp(`^${key} = (.*)$`, "m").exec(toml)?.[1];
  return {
    name: JSON.parse(value("name")),
    compatibilityDate: JSON.parse(value("compatibility_date")),
    compatibilityFlags: JSON.parse(value("compatibility_flags")),
  };
}

/** Runs `wrangler deploy --dry-run` for the converter into `outdir`; rejects with wrangler's output. */
function wranglerBuild(outdir) {
  const child = spawn(
    process.execPath,
    [wranglerBin, "deploy", "--dry-run", "--config", "converter/wrangler.toml", "--outdir", outdir],
    { cwd: projectRoot, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  );
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`building the converter failed (exit ${code}):\n${output}`)),
    );
  });
}

/** This process's build, made on the first call. */
let build;

/**
 * Builds the converter with wrangler (esbuild, its WebAssembly modules beside the script) and answers its
 * modules as the test runner's auxiliary Worker takes them, the entry first, named from their folder.
 * Built once per process: the test pool asks for its options once per test file (each file gets a workerd
 * of its own), and a build costs about 2 s of CPU, which 60 files would pay again for the same bytes. Not
 * blocking either: a synchronous build stalled every running test file's module loading with it.
 */
export function buildConverter() {
  build ??= (async () => {
    // A directory of this process's own, gone when it exits: test runs side by side never rebuild each other's.
    const converterBuildDir = mkdtempSync(join(tmpdir(), "storefront-converter-build-"));
    process.once("exit", () => rmSync(converterBuildDir, { recursive: true, force: true }));
    await wranglerBuild(converterBuildDir);
    const wasm = readdirSync(converterBuildDir).filter((name) => name.endsWith(".wasm"));
    return {
      modulesRoot: converterBuildDir,
      modules: [
        { type: "ESModule", path: join(converterBuildDir, "index.js") },
        ...wasm.map((name) => ({ type: "CompiledWasm", path: join(converterBuildDir, name) })),
      ],
    };
  })();
  return build;
}
