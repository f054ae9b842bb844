import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));
const script = join(root, "scripts/config-docs.mjs");

/** `node scripts/config-docs.mjs ...args` with the project's Node, its exit code and output. */
async function configDocs(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [script, ...args], { cwd: root, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe("npm run config:docs: docs/configuration.md and docs/limits.md written from src/config.ts", () => {
  let docs: string;

  beforeEach(async () => {
    docs = await mkdtemp(join(tmpdir(), "config-docs-"));
    for (const page of ["configuration.md", "limits.md"]) await cp(join(root, "docs", page), join(docs, page));
  });

  afterEach(async () => {
    await rm(docs, { recursive: true, force: true });
  });

  it("the committed tables are what src/config.ts says (the check of npm run lint passes)", async () => {
    const result = await configDocs("--check");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
  });

  it("a default changed by hand in docs/configuration.md fails the check, naming the page", async () => {
    const page = join(docs, "configuration.md");
    const committed = await readFile(page, "utf8");
    const stale = committed.replace("| `UPLOAD_TTL_SECONDS` | `900` |", "| `UPLOAD_TTL_SECONDS` | `600` |");
    expect(stale).not.toBe(committed);
    await writeFile(page, stale);

    const result = await configDocs("--check", "--docs", docs);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("configuration.md: the table is not what src/config.ts says");
    expect(result.stderr).not.toContain("limits.md");
    // The check writes nothing.
    expect(await readFile(page, "utf8")).toBe(stale);
  });

  it("a limit missing from docs/limits.md fails the check", async () => {
    const page = join(docs, "limits.md");
    const committed = await readFile(page, "utf8");
    const stale = committed
      .split("\n")
      .filter((line) => !line.includes("[`COMPLETE_LIMIT_PER_MINUTE`]"))
      .join("\n");
    expect(stale).not.toBe(committed);
    await writeFile(page, stale);

    const result = await configDocs("--check", "--docs", docs);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("limits.md: the table is not what src/config.ts says");
  });

  it("a page without its markers fails, saying which markers to add", async () => {
    const page = join(docs, "limits.md");
    await writeFile(page, (await readFile(page, "utf8")).replace("<!-- config-docs:limits:", "<!-- limits:"));
    const result = await configDocs("--check", "--docs", docs);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("has no table markers");
  });

  it("without --check it writes the tables back as src/config.ts says, leaving the prose around them", async () => {
    const page = join(docs, "configuration.md");
    const committed = await readFile(page, "utf8");
    await writeFile(page, committed.replace(/\| `IMAGE_WIDTHS` \|[^\n]*\n/, ""));

    expect((await configDocs("--docs", docs)).code).toBe(0);
    expect(await readFile(page, "utf8")).toBe(committed);
    expect((await configDocs("--check", "--docs", docs)).code).toBe(0);
  });

  it("lists every variable of wrangler.toml [vars] and every secret, each with its default", async () => {
    const wrangler = await readFile(join(root, "wrangler.toml"), "utf8");
    const vars = /^\[vars\]\n([\s\S]*?)\n\n/m.exec(wrangler)?.[1] ?? "";
    const names = [...vars.matchAll(/^([A-Z0-9_]+) = ""$/gm)].map(([, name]) => name);
    expect(names.length).toBeGreaterThan(20);
    const page = await readFile(join(root, "docs/configuration.md"), "utf8");
    for (const name of [...names, "FILE_SIGNING_SECRET", "PLATFORM_API_SECRET", "STORE_MOVE_SECRET"]) {
      expect(page).toMatch(new RegExp(`^\\| \`${name}\`( \\(secret\\))? \\| [^|]+ \\| [^|]+ \\| .+ \\|$`, "m"));
    }
    expect(page).toContain("| `UPLOAD_TTL_SECONDS` | `900` | a whole number, 1 or more |");
    expect(page).toContain("| `FILE_SIGNING_SECRET` (secret) | none: must be set |");
  });
});
