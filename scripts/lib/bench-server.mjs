// The bench's own `wrangler dev`s: the two Workers on a snapshot of the project with the bench fixture loaded,
// stopped however the step using them ends.
import { existsSync } from "node:fs";
import { cp, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { freePort, loadFixture, startDevServer } from "../dev-server.mjs";
import { benchFixture } from "./bench-fixture.mjs";
import { descendants, log, onAbort, projectRoot, step, withTimeout } from "./bench-run.mjs";

/** The Worker entry that counts D1 statements per request (see the file). */
export const countingEntry = join(projectRoot, "scripts/bench-worker.ts");

/**
 * Starts the two Workers with `wrangler dev` (loopback only; the converter, then the API, each a process of
 * its own: dev-server.mjs) on a throwaway persist directory with the bench fixture loaded.
 * The general, PUT and complete limits are lifted: the load generator sends far more than a client may,
 * and the limiter's refusals would otherwise be what gets measured. `entry` swaps the API Worker's entry
 * (scripts/bench-worker.ts, the counting wrapper); `vars` adds `--var NAME:VALUE`s (e.g. BENCH_DELAY_MS) to
 * the API. The result has the API's `inspectorPort` and the converter's `converterInspectorPort`.
 */
export async function startBenchServer({ entry, fixture, vars = {} } = {}) {
  const root = await mkdtemp(join(tmpdir(), "bench-server-"));
  const removeDir = () => rm(root, { recursive: true, force: true });
  const unregisterDir = onAbort(removeDir);
  const persistTo = join(root, "state");
  const project = await snapshotProject(join(root, "project"));
  const start = async () => {
    // wrangler's default inspector port may be taken by another `wrangler dev` on the machine.
    const inspectorPort = await freePort();
    const server = await startDevServer({
      port: await freePort(),
      persistTo,
      extraArgs: [
        ...(entry ? [join(project, relative(projectRoot, entry))] : []),
        ...["--inspector-port", String(inspectorPort)],
        ...["--var", "API_LIMIT_PER_MINUTE:1000000000"],
        ...["--var", "PUT_LIMIT_PER_MINUTE:1000000000"],
        ...["--var", "COMPLETE_LIMIT_PER_MINUTE:1000000000"],
        ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
      ],
      stdio: ["ignore", "ignore", "inherit"],
      // The snapshot's own configuration with two shards, as `npm run dev` runs: the fixture places its stores
      // on them, so every read and write measured goes to a store's home (docs/scaling.md).
      config: join(project, "wrangler.toml"),
    });
    return { server, inspectorPort };
  };
  let started;
  try {
    started = await start();
  } catch (error) {
    // The API's two ports are chosen free before the converter's process starts, which picks its own two the
    // same way: the converter (or any other process on the machine) may take one of them meanwhile, and the
    // API's wrangler dev then exits with "Address already in use". Once more, on other ports.
    log(`  wrangler dev did not start (${error.message}): once more on other ports`);
    started = await start().catch(async (again) => {
      await removeDir();
      unregisterDir();
      throw again;
    });
  }
  const { server, inspectorPort } = started;
  const unregisterServer = onAbort(server.stop);
  if (fixture) await loadFixture(server.url, fixture);
  return {
    ...server,
    persistTo,
    inspectorPort,
    async stop() {
      // workerd busy in a long synchronous call (the converter's, mid-conversion) may outlive wrangler (and
      // then no longer be below it): the processes of both are noted first and killed if still there once
      // wrangler has gone.
      const below = [server.child, server.converter].flatMap((child) => descendants(child.pid).map((p) => p.pid));
      await withTimeout(server.stop(), 15_000, "stopping wrangler dev").catch(() => {
        server.child.kill("SIGKILL");
        server.converter.kill("SIGKILL");
      });
      for (const pid of below) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      unregisterServer();
      await removeDir();
      unregisterDir();
    },
  };
}

/**
 * A copy of what `wrangler dev` builds the two Workers from (src, the bench Worker, the config, migrations, the
 * demo fixture the Worker imports its demo token from; the converter's configuration, sources and types, which
 * import src/converter/contract.ts and src/lib from the copied src), with node_modules linked. wrangler dev
 * watches its sources and config and reloads the Worker when one changes; on a tree others edit meanwhile that
 * gave a fresh isolate (or a failed build) in the middle of a measurement. The bench measures the code as it
 * was when its servers started. The converter's C sources (converter/wasm) and tests are not copied: its
 * build takes the compiled .wasm files from converter/src.
 */
async function snapshotProject(dir) {
  const paths = [
    "src",
    "converter/wrangler.toml",
    "converter/src",
    "converter/worker-configuration.d.ts",
    "migrations",
    "public",
    // The reference page pre-fills the demo token from it (src/dev/demo.ts).
    "fixtures/demo.json",
    "scripts/bench-worker.ts",
    "scripts/counting-bindings.ts",
    "wrangler.toml",
    "tsconfig.json",
    "package.json",
    "worker-configuration.d.ts",
    ".dev.vars",
    ".dev.vars.example",
  ];
  for (const path of paths) {
    if (!existsSync(join(projectRoot, path))) continue;
    await cp(join(projectRoot, path), join(dir, path), { recursive: true });
  }
  await symlink(join(projectRoot, "node_modules"), join(dir, "node_modules"), "dir");
  return dir;
}

/** Runs `fn(server)` with a bench server, stopping it however `fn` ends. */
export async function withBenchServer(options, fn) {
  const server = await step("start wrangler dev", 240_000, () => startBenchServer(options));
  try {
    return await fn(server);
  } catch (error) {
    for (const [name, child] of [
      ["the API's", server.child],
      ["the converter's", server.converter],
    ]) {
      const code = child.exitCode ?? child.signalCode;
      if (code === null) continue;
      throw new Error(`${name} wrangler dev exited (${code}) during the step, see its output above: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  } finally {
    await server.stop();
  }
}

/**
 * Runs `fn(dev)` with a throwaway directory for `wrangler dev --persist-to` (`dev.persistTo`, kept with `keep`)
 * and at most one dev server on it at a time: `dev.start(options)` stops the one running and starts another
 * (a free port, the directory, only its errors shown, then `options`), `dev.stop()` stops it. Whatever is
 * running is stopped, and the directory removed, when `fn` ends or the run is aborted.
 */
export async function withPersistedDevServer(prefix, { keep = false } = {}, fn) {
  const persistTo = await mkdtemp(join(tmpdir(), `${prefix}-`));
  let server = null;
  const stop = async () => {
    await server?.stop();
    server = null;
  };
  const cleanUp = async () => {
    await stop();
    if (!keep) await rm(persistTo, { recursive: true, force: true });
  };
  const unregister = onAbort(cleanUp);
  try {
    log(`persist directory ${persistTo}`);
    const start = async (options = {}) => {
      await stop();
      server = await startDevServer({
        port: await freePort(),
        persistTo,
        stdio: ["ignore", "ignore", "inherit"],
        ...options,
      });
      return server;
    };
    return await fn({ persistTo, start, stop });
  } finally {
    await cleanUp();
    unregister();
  }
}

/**
 * Runs `fn(server)` on bench servers loaded with the whole bench fixture: the API's own entry, or with `counting`
 * the counting Worker (scripts/bench-worker.ts: every answer says the D1 statements and round trips it made).
 */
export function withBenchStore({ counting = false, vars } = {}, fn) {
  return withBenchServer({ ...(counting ? { entry: countingEntry } : {}), fixture: benchFixture(), vars }, fn);
}
