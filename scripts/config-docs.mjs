// Two tables written from src/config.ts, so that a default is stated by its parser alone: docs/configuration.md's
// (every variable and secret: its default, what its parser makes of no value; the values it accepts; its
// meaning) and docs/limits.md's (the limits a variable sets, with their defaults).
//
//   npm run config:docs          rewrites both tables, each between its markers;
//   npm run config:docs:check    (part of `npm run lint`) fails when either is not what src/config.ts says.
//
// `--docs DIR` works on copies of the two pages in DIR (the tests use it).
import { readFile, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { importSource } from "./lib/import-source.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const end = "<!-- config-docs:end -->";
const start = (table) =>
  `<!-- config-docs:${table}: written by \`npm run config:docs\` from src/config.ts; do not edit -->`;

/** src/config.ts's parsers, bundled with what they import (as the benches load src/), in this Node process. */
async function settingParsers() {
  const code = await importSource('export { settingParsers } from "./src/config.ts";');
  return code.settingParsers;
}

/** The default as a reader would type it: what the parser makes of an unset variable, written back. */
function defaultText(parser) {
  const parsed = parser.safeParse(undefined);
  if (!parsed.success) return "none: must be set";
  const value = parsed.data;
  const text =
    typeof value === "boolean" ? (value ? "on" : "off") : Array.isArray(value) ? value.join(",") : String(value);
  return text === "" ? "empty" : `\`${text}\``;
}

const cell = (text) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

/** docs/configuration.md's table: every setting, in src/config.ts's order. */
function configurationTable(parsers) {
  const rows = Object.entries(parsers).map(([name, parser]) => {
    const { accepted = "any text", meaning, secret = false } = parser.meta() ?? {};
    if (!meaning) throw new Error(`src/config.ts: ${name} has no meaning (documented(..., { meaning }))`);
    return `| \`${name}\`${secret ? " (secret)" : ""} | ${defaultText(parser)} | ${cell(accepted)} | ${cell(meaning)} |`;
  });
  return ["| Name | Default | Accepted | Meaning |", "|---|---|---|---|", ...rows].join("\n");
}

/** docs/limits.md's table: the settings that are limits, with their defaults. */
function limitsTable(parsers) {
  const rows = Object.entries(parsers).flatMap(([name, parser]) => {
    const { limit } = parser.meta() ?? {};
    return limit ? [`| ${cell(limit)} | ${defaultText(parser)} | [\`${name}\`](configuration.md) |`] : [];
  });
  return ["| Limit | Default | Set by |", "|---|---|---|", ...rows].join("\n");
}

/** `page` with the text between the markers of `table` replaced by `text`. */
function withTable(page, table, text, shown) {
  const from = page.indexOf(start(table));
  const to = page.indexOf(end, from);
  if (from === -1 || to === -1) throw new Error(`${shown} has no table markers:\n${start(table)}\n${end}`);
  return `${page.slice(0, from + start(table).length)}\n${text}\n${page.slice(to)}`;
}

async function main(argv) {
  const check = argv.includes("--check");
  const docsIndex = argv.indexOf("--docs");
  const docs = docsIndex === -1 ? join(root, "docs") : argv[docsIndex + 1];
  const parsers = await settingParsers();
  const pages = [
    { file: "configuration.md", table: "table", text: configurationTable(parsers) },
    { file: "limits.md", table: "limits", text: limitsTable(parsers) },
  ];
  let stale = 0;
  for (const { file, table, text } of pages) {
    const path = join(docs, file);
    const shown = relative(root, path).startsWith("..") ? path : relative(root, path);
    const page = await readFile(path, "utf8");
    const current = withTable(page, table, text, shown);
    if (current === page) {
      console.log(`${shown}: the table is current`);
    } else if (check) {
      console.error(`${shown}: the table is not what src/config.ts says: run \`npm run config:docs\` and commit it.`);
      stale += 1;
    } else {
      await writeFile(path, current);
      console.log(`${shown}: table written`);
    }
  }
  if (stale > 0) process.exit(1);
}

await main(process.argv.slice(2));
