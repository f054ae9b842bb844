import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const projectRoot = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The TypeScript modules `entry` re-exports (paths relative to the project's root, e.g.
 * `export { settingParsers } from "./src/config.ts";`), bundled by esbuild and loaded into this Node process:
 * how scripts run the Workers' own code (its parsers, its statement builders) without a Worker.
 */
export async function importSource(entry, { platform = "neutral" } = {}) {
  const result = await build({
    stdin: { contents: entry, resolveDir: projectRoot, loader: "ts" },
    bundle: true,
    format: "esm",
    platform,
    mainFields: ["module", "main"],
    write: false,
    logLevel: "silent",
  });
  return import(`data:text/javascript;base64,${Buffer.from(result.outputFiles[0].text).toString("base64")}`);
}
