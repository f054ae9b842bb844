// `npm run lint`: fails on an export of either Worker's source (src/, converter/src/) that no other file names
// (src/, converter/, test/, scripts/). Such an export
// is either dead or private to its file, and then it is not exported. A name is "used" when it stands as a
// whole word in another file: a namesake can hide an unused export, but nothing used is ever reported.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const files = execFileSync(
  "git",
  ["ls-files", "--cached", "--others", "--exclude-standard", "src", "converter", "test", "scripts"],
  {
    encoding: "utf8",
  },
)
  .split("\n")
  .filter((file) => /\.(ts|mts|mjs|js)$/.test(file));
const texts = new Map(files.map((file) => [file, readFileSync(file, "utf8")]));
const declaration =
  /^export\s+(?:declare\s+)?(?:async\s+)?(?:const|let|function\*?|class|type|interface|enum)\s+([A-Za-z_$][\w$]*)/gm;

const isSource = (file) => file.startsWith("src/") || file.startsWith("converter/src/");
const unused = [];
for (const [file, text] of texts) {
  if (!isSource(file)) continue;
  for (const [, name] of text.matchAll(declaration)) {
    const word = new RegExp(`(?<![\\w$])${name.replace(/\$/g, "\\$")}(?![\\w$])`);
    if (![...texts].some(([other, otherText]) => other !== file && word.test(otherText)))
      unused.push(`${file}: ${name}`);
  }
}
if (unused.length > 0) {
  console.error(`Exported but named by no other file (drop the export, or the code):\n  ${unused.join("\n  ")}`);
  process.exit(1);
}
console.log(`unused exports: none in ${[...texts.keys()].filter(isSource).length} files of src/ and converter/src/`);
