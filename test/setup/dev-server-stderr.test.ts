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

  it("hides wrangler's reports of the part PUTs a test cut on purpose, and the log-file note they cause; shows any other", () => {
    const red = (text: string) => `\x1b[31m${text}\x1b[0m`;
    const cut = (part: number) =>
      red(
        `✘ [ERROR] Error inside ProxyWorker (the affected request failed; the dev server continues): PUT http://127.0.0.1:44551/api/v1/media-uploads/49000cb6-e20d-483a-9a06-f603e9c4edd9/parts/${part} (failed after 1 attempt): Network connection lost.`,
      );
    const note = '🪵  Logs were written to "/root/.config/.wrangler/logs/wrangler-2026-11-28_18-48-08_987.log"';
    expect(shown(devServerStderrFilter(), [cut(10), "", "", cut(11), "", "", note])).toEqual([]);

    const otherRoute =
      "✘ [ERROR] Error inside ProxyWorker (the affected request failed; the dev server continues): GET http://127.0.0.1:44551/api/v1/products/x (failed after 1 attempt): Network connection lost.";
    const otherCause =
      "✘ [ERROR] Error inside ProxyWorker (the affected request failed; the dev server continues): PUT http://127.0.0.1:44551/api/v1/media-uploads/49000cb6-e20d-483a-9a06-f603e9c4edd9/parts/3 (failed after 1 attempt): internal error";
    expect(shown(devServerStderrFilter(), [otherRoute, otherCause, "", note])).toEqual([
      otherRoute,
      otherCause,
      "",
      note,
    ]);
  });
});
