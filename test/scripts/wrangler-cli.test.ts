import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { deploy, dryRun, readWranglerConfig } from "../../scripts/deploy.mjs";
import { runWrangler, type WranglerResult } from "../../scripts/lib/wrangler.mjs";
import { createToken } from "../../scripts/token-create.mjs";
import { FakeCloudflare } from "./fake-cloudflare";

/** The wrangler commands the scripts use, longest first, so a call is matched to its own help page. */
const commands = [
  ["d1", "migrations", "apply"],
  ["r2", "bucket", "list"],
  ["r2", "bucket", "create"],
  ["queues", "info"],
  ["queues", "create"],
  ["d1", "execute"],
  ["d1", "create"],
  ["d1", "list"],
  ["secret", "list"],
  ["whoami"],
  ["deploy"],
];

/** Every command and flag the deploy and token scripts issue, collected by running them against fakes. */
async function issuedCalls(): Promise<string[][]> {
  const config = await readWranglerConfig();
  const dir = await mkdtemp(join(tmpdir(), "wrangler-cli-"));
  try {
    const varsFile = join(dir, "deploy.vars");
    await writeFile(varsFile, "CORS_ORIGINS=https://shop.example\n");
    const account = new FakeCloudflare();
    await deploy({ varsFile }, { run: account.run, print: () => {}, env: {}, config });
    await dryRun({ varsFile }, { run: account.run, print: () => {}, config });
    const calls = account.calls.map((call) => call.args);
    const d1 = async (args: string[]): Promise<WranglerResult> => {
      calls.push(args);
      return { code: 0, stdout: '[{"results":[],"success":true}]', stderr: "", outputs: [] };
    };
    const base = { help: false as const, abilities: ["products:read"], json: false };
    await createToken({ ...base, storeIds: [], name: "S", local: false, persistTo: undefined }, { run: d1 });
    await createToken(
      { ...base, storeIds: [crypto.randomUUID()], name: "S", local: true, persistTo: dir },
      { run: d1 },
    );
    return calls;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("the scripts speak the installed wrangler's language", () => {
  it("every command they issue exists, with every flag they pass to it (wrangler --help)", async () => {
    const calls = await issuedCalls();
    const used = new Map<string, Set<string>>();
    for (const args of calls) {
      const command = commands.find((words) => words.every((word, i) => args[i] === word));
      expect(command, `unknown command: wrangler ${args.join(" ")}`).toBeDefined();
      const key = command?.join(" ") ?? "";
      const flags = used.get(key) ?? new Set<string>();
      for (const arg of args) if (arg.startsWith("--")) flags.add(arg);
      used.set(key, flags);
    }
    expect([...used.keys()].sort()).toEqual(commands.map((words) => words.join(" ")).sort());
    const pages = await Promise.all(
      [...used.keys()].map(async (key) => [key, await runWrangler([...key.split(" "), "--help"])] as const),
    );
    for (const [key, page] of pages) {
      expect(page.code, `wrangler ${key} --help`).toBe(0);
      for (const flag of used.get(key) ?? []) {
        expect(page.stdout, `wrangler ${key} ${flag}`).toMatch(new RegExp(`\\s${flag}\\b`));
      }
    }
  });
});
