// Starts both Workers with `wrangler dev` for local development, the end-to-end tests and the benches: the
// converter (converter/wrangler.toml) as a process of its own, then the API, after applying the D1 migrations
// to the persist directory; it waits until both answer. Two processes, not one `wrangler dev` with two
// configurations: one process runs all its Workers on one thread, so a conversion would stall the API's
// requests, which production's separate isolates never do.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { localShardCount, shardBinding, shardedConfigPath, writeShardedConfig } from "./lib/shards.mjs";

// wrangler's package exports do not include its bin script, so it is found by path.
const wranglerBin = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));

const projectRoot = fileURLToPath(new URL("..", import.meta.url));

/**
 * Development values of the secrets from .dev.vars.example, used only when the developer has no
 * .dev.vars of their own; wrangler reads secrets from the environment too.
 */
function exampleSecrets() {
  if (existsSync(`${projectRoot}/.dev.vars`)) return {};
  const lines = readFileSync(`${projectRoot}/.dev.vars.example`, "utf8").split("\n");
  const entries = lines
    .map((line) => /^([A-Z0-9_]+)=(.*)$/.exec(line.trim()))
    .filter(Boolean)
    .map(([, name, value]) => [name, value]);
  return Object.fromEntries(entries.filter(([name]) => process.env[name] === undefined));
}

/**
 * Runs wrangler with the Node binary that runs this script (Node 22 from the project). The API never reads
 * `request.cf`, so the local runtime is not sent to fetch one from workers.cloudflare.com (offline that fetch
 * fails with a warning on every start and reload); set CLOUDFLARE_CF_FETCH_ENABLED=true to have it anyway.
 */
export function wrangler(args, options = {}) {
  return spawn(process.execPath, [wranglerBin, ...args], {
    stdio: options.stdio ?? ["ignore", "inherit", "inherit"],
    env: {
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      ...exampleSecrets(),
      ...process.env,
      WRANGLER_SEND_METRICS: "false",
      ...options.env,
    },
  });
}

function finished(child) {
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    // "close" comes after the piped output has been read to its end.
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`wrangler exited with ${code}`))));
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

/**
 * Applies every migration in migrations/ to each local D1 database kept in `persistTo`: the global DB and, with
 * `shards`, each shard of wrangler.shards.toml. wrangler's tables of migrations (printed twice, with a
 * confirmation it answers itself) are kept back unless applying fails.
 */
export async function applyLocalMigrations(persistTo, { shards = localShardCount, config: baseConfig } = {}) {
  const config = await configArgs(shards, baseConfig);
  for (const binding of ["DB", ...Array.from({ length: shards }, (_, n) => shardBinding(n))]) {
    const args = ["d1", "migrations", "apply", binding, "--local", ...config];
    if (persistTo) args.push("--persist-to", persistTo);
    const child = wrangler(args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    try {
      await finished(child);
    } catch (error) {
      throw new Error(`applying the local D1 migrations to ${binding} failed (${error.message}):\n${output}`);
    }
  }
}

/**
 * The `--config` of a local run: the project's wrangler.toml (or `baseConfig`, a copy's) as it is without
 * shards, else the sharded copy written beside it.
 */
async function configArgs(shards, baseConfig) {
  if (shards > 0) {
    const path = baseConfig ? join(dirname(baseConfig), "wrangler.shards.toml") : shardedConfigPath;
    return ["--config", await writeShardedConfig(shards, undefined, path)];
  }
  return baseConfig ? ["--config", baseConfig] : [];
}

/** Waits until `ready(url)` answers true for a request to the Worker `child` serves at `url`. */
async function waitUntilServing(url, child, timeoutMs, ready = (response) => response.ok) {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error(`wrangler dev exited before it served requests at ${url}`);
    try {
      if (await ready(await fetch(url))) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`wrangler dev did not answer at ${url} within ${timeoutMs} ms`);
}

/** Stops a `wrangler dev` child: SIGTERM, then SIGKILL if it has not gone within five seconds. */
function stopChild(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", resolve);
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
  });
}

/**
 * Starts the converter Worker as a `wrangler dev` process of its own, on free ports, sharing `persistTo` (its
 * local R2 bucket is the API's) and the dev registry `registry` through which the API's CONVERTER binding
 * finds it. It has no routes: any answer on its port means it is serving.
 */
async function startConverter({ projectDir, persistTo, registry, stdio, timeoutMs }) {
  const port = await freePort();
  const inspectorPort = await freePort();
  const args = ["dev", "--config", join(projectDir, "converter/wrangler.toml"), "--ip", "127.0.0.1"];
  args.push("--port", String(port), "--inspector-port", String(inspectorPort));
  args.push("--show-interactive-dev-session=false");
  if (persistTo) args.push("--persist-to", persistTo);
  const child = wrangler(args, { stdio, env: { WRANGLER_REGISTRY_PATH: registry } });
  try {
    await waitUntilServing(`http://127.0.0.1:${port}/`, child, timeoutMs, () => true);
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  return { child, inspectorPort };
}

/**
 * Starts the converter and the API with `wrangler dev`: the API with the development fixtures enabled, events
 * allowed to plain `http:` receivers and `shards` local shards (wrangler.shards.toml). `config` is another
 * wrangler.toml to run (a copy of the project's: the benches), whose converter is the one beside it; its
 * sharded copy is written beside it. Returns the API's base URL, both processes, the converter's inspector
 * port (the benches read its isolate's memory there) and a stop function that stops both. `extraArgs` go to the API's `wrangler dev` unchanged. The two processes find each other through a dev
 * registry of their own (in `persistTo`, else in the project's .wrangler/), so that two instances side by side
 * never bind each other's converter.
 */
export async function startDevServer({
  port,
  persistTo,
  extraArgs = [],
  stdio,
  timeoutMs = 90_000,
  shards = localShardCount,
  config,
} = {}) {
  // The Worker runs with `shards` local shards (two: SHARD_0, SHARD_1, as in the tests) beside DB; none binds DB
  // only (every store in DB), as plain `wrangler dev` does.
  await applyLocalMigrations(persistTo, { shards, config });
  const projectDir = config ? dirname(config) : projectRoot;
  const registry = join(persistTo ?? join(projectDir, ".wrangler"), "dev-registry");
  const { child: converter, inspectorPort: converterInspectorPort } = await startConverter({
    projectDir,
    persistTo,
    registry,
    stdio,
    timeoutMs,
  });
  const args = [
    "dev",
    ...(await configArgs(shards, config)),
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--var",
    "DEV_FIXTURES:on",
    // Local receivers listen on plain http://127.0.0.1; deployments deliver to https: only.
    "--var",
    "WEBHOOK_ALLOW_HTTP:on",
    "--show-interactive-dev-session=false",
  ];
  if (persistTo) args.push("--persist-to", persistTo);
  const child = wrangler([...args, ...extraArgs], { stdio, env: { WRANGLER_REGISTRY_PATH: registry } });
  const url = `http://127.0.0.1:${port}`;
  const stop = () => Promise.all([stopChild(child), stopChild(converter)]).then(() => {});
  // Either process gone ends the other: a half-started service is never left serving.
  for (const worker of [child, converter]) worker.once("exit", () => stop());
  try {
    await waitUntilServing(`${url}/api/v1/openapi.json`, child, timeoutMs);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, child, converter, converterInspectorPort, stop };
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
