import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { devServerStderrFilter } from "./dev-server-stderr";

/** esbuild's dump as the e2e server's teardown printed it (wrangler dev stopped mid-rebuild). */
const deadlockDump = readFileSync(new URL("./fixtures/esbuild-deadlock.txt", import.meta.url), "utf8")
  .trimEnd()
  .split("\n");

/** A real failure of wrangler dev, as it prints one. */
const wranglerError = [
  "✘ [ERROR] Uncaught TypeError: Cannot read properties of undefined (reading 'prepare')",
  "",
  "      at null.<anonymous> (index.js:12:7)",
];

const shown = (filter: ReturnType<typeof devServerStderrFilter>, lines: string[]) =>
  lines.filter((line) => filter.shows(line));

describe("the e2e server's stderr", () => {
  it("hides esbuild's deadlock dump once the server is being stopped", () => {
    const filter = devServerStderrFilter();
    filter.stopping();
    expect(deadlockDump.length).toBeGreaterThan(50);
    expect(shown(filter, deadlockDump)).toEqual([]);
  });

  it("shows the dump while the server runs: esbuild dying then is a real failure", () => {
    expect(shown(devServerStderrFilter(), deadlockDump)).toEqual(deadlockDump);
  });

  it("shows every other line, a wrangler error right after the dump too", () => {
    const filter = devServerStderrFilter();
    expect(shown(filter, wranglerError)).toEqual(wranglerError);
    filter.stopping();
    expect(shown(filter, [...deadlockDump, ...wranglerError])).toEqual(wranglerError);
  });
});
