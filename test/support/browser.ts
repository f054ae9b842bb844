import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's Chromium, or the one CHROMIUM_PATH names (never a downloaded browser). */
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * Whether the browser tests run: CI installs Chromium and sets REQUIRE_BROWSER, so there a missing browser
 * fails the launch instead of skipping the tests.
 */
export const browserAvailable = existsSync(chromiumPath) || process.env.REQUIRE_BROWSER === "1";

/** Headless Chromium with the flags this machine's closed network needs (no background connections, no QUIC). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic"],
  });
}
