// The converter Worker built as `wrangler deploy` would upload it (converter/wrangler.toml), into a throwaway
// folder: the API's tests bind it as an auxiliary Worker (vitest.config.ts), which the test runner
// cannot load from a wrangler configuration, only from a built script.
import { spawnSync } from "node:child_process";
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

/**
 * Builds the converter with wrangler (esbuild, its WebAssembly modules beside the script) and returns its
 * modules as the test runner's auxiliary Worker takes them, the entry first, named from their folder.
 */
export function buildConverter() {
  // A directory of this process's own, gone when it exits: test runs side by side never rebuild each other's.
  const converterBuildDir = mkdtempSync(join(tmpdir(), "storefront-converter-build-"));
  process.once("exit", () => rmSync(converterBuildDir, { recursive: true, force: true }));
  const result = spawnSync(
    process.execPath,
    [wranglerBin, "deploy", "--dry-run", "--config", "converter/wrangler.toml", "--outdir", converterBuildDir],
    { cwd: projectRoot, encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  );
  if (result.status !== 0) throw new Error(`building the converter failed:\n${result.stdout}\n${result.stderr}`);
  const wasm = readdirSync(converterBuildDir).filter((name) => name.endsWith(".wasm"));
  return {
    modulesRoot: converterBuildDir,
    modules: [
      { type: "ESModule", path: join(converterBuildDir, "index.js") },
      ...wasm.map((name) => ({ type: "CompiledWasm", path: join(converterBuildDir, name) })),
    ],
  };
}
