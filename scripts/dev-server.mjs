// Starts `wrangler dev` for local development and for the end-to-end tests: applies the D1
// migrations to the persist directory first, then waits until the Worker answers.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createServer } from "node:net";

const require = createRequire(import.meta.url);
const wranglerBin = require.resolve("wrangler/bin/wrangler.js");

/** Runs wrangler with the Node binary that runs this script (Node 22 from the project). */
export function wrangler(args, options = {}) {
  return spawn(process.execPath, [wranglerBin, ...args], {
    stdio: options.stdio ?? ["ignore", "inherit", "inherit"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", ...options.env },
  });
}

function finished(child) {
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`wrangler exited with ${code}`))));
  });
}

/** A free TCP port on the loopback interface. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Applies every migration in migrations/ to the local D1 database kept in `persistTo`. */
export async function applyLocalMigrations(persistTo, stdio) {
  const args = ["d1", "migrations", "apply", "DB", "--local"];
  if (persistTo) args.push("--persist-to", persistTo);
  await finished(wrangler(args, { stdio }));
}

async function waitUntilServing(url, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error("wrangler dev exited before it served requests");
    try {
      const response = await fetch(`${url}/api/v1/openapi.json`);
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`wrangler dev did not answer at ${url} within ${timeoutMs} ms`);
}

/**
 * Starts `wrangler dev` with the development fixtures enabled. Returns its base URL and a stop
 * function. `extraArgs` go to `wrangler dev` unchanged.
 */
export async function startDevServer({ port, persistTo, extraArgs = [], stdio, timeoutMs = 90_000 } = {}) {
  await applyLocalMigrations(persistTo, stdio);
  const args = [
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--var",
    "DEV_FIXTURES:on",
    "--show-interactive-dev-session=false",
  ];
  if (persistTo) args.push("--persist-to", persistTo);
  const child = wrangler([...args, ...extraArgs], { stdio });
  const url = `http://127.0.0.1:${port}`;
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once("exit", resolve);
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
    });
  try {
    await waitUntilServing(url, child, timeoutMs);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, child, stop };
}

/** Loads a fixture document through the development route. */
export async function loadFixture(url, document) {
  const response = await fetch(`${url}/api/v1/_dev/fixtures`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(document),
  });
  const body = await response.json();
  if (response.status !== 201)
    throw new Error(`loading the fixture failed (${response.status}): ${JSON.stringify(body)}`);
  return body.loaded;
}
