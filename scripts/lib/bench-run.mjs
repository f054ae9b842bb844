// The runner's ground of every bench script: where the project is, a log with the run's clock, named steps
// with time limits, the watchdog that ends a run (stopping what it started), deadlines on every HTTP call,
// and child processes (run one to completion; find every one below a pid).
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

export const projectRoot = fileURLToPath(new URL("../..", import.meta.url));

const started = Date.now();
export const elapsedSeconds = () => (Date.now() - started) / 1000;
export const log = (message) => console.log(`[${elapsedSeconds().toFixed(1)} s] ${message}`);

/** Whether `moduleUrl` (a script's import.meta.url) is the script node was asked to run. */
export function isMain(moduleUrl) {
  return process.argv[1] !== undefined && moduleUrl === pathToFileURL(process.argv[1]).href;
}

// ---------------------------------------------------------------------------------------------
// Watchdog: the bench stops by itself
// ---------------------------------------------------------------------------------------------

const cleanups = new Set();

/** Registers work to undo when the run ends early (a server to stop, a directory to delete). */
export function onAbort(cleanup) {
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}

/** The steps under way, outermost first, so a timeout or the watchdog can say where the run was. */
const activeSteps = [];
export const currentStep = () => (activeSteps.length ? activeSteps.join(" > ") : "outside any step");

/**
 * Ends every process this run started that is still alive (wrangler, workerd, esbuild, curl): the
 * registered cleanups stop the servers they know of; this catches what was started and not yet
 * registered (a `wrangler d1 migrations apply` that hangs, a server still starting).
 */
function endChildren() {
  for (const child of descendants(process.pid).reverse()) {
    try {
      process.kill(child.pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
}

async function abort(reason, code) {
  console.error(`bench: ${reason}`);
  for (const cleanup of [...cleanups].reverse()) {
    await withTimeout(cleanup(), 15_000, "cleanup").catch(() => {});
  }
  endChildren();
  process.exit(code);
}

/** Ends the process (stopping every registered server) after `limitMs` or on Ctrl-C, naming the step. */
export function installWatchdog(limitMs) {
  const timer = setTimeout(
    () => abort(`gave up after ${Math.round(limitMs / 1000)} s, during step: ${currentStep()}`, 2),
    limitMs,
  );
  timer.unref();
  process.once("SIGINT", () => abort(`interrupted during step: ${currentStep()}`, 130));
  process.once("SIGTERM", () => abort(`terminated during step: ${currentStep()}`, 143));
}

/** Something did not finish in time; the message names it. */
export class StepTimeout extends Error {
  name = "StepTimeout";
}
/** A step failed; the message starts with the step's name, the original error is the cause. */
export class StepError extends Error {
  name = "StepError";
}

/** `promise`, or a StepTimeout naming `what` after `ms`. The work itself is not cancelled: callers stop it. */
export function withTimeout(promise, ms, what) {
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new StepTimeout(`${what}: no result within ${Math.round(ms / 1000)} s`)), ms);
  });
  return Promise.race([Promise.resolve(promise), expired]).finally(() => clearTimeout(timer));
}

/**
 * Runs `fn` as a named step of at most `limitMs`: a timeout or any error comes out as a StepError whose
 * message starts with the step's name (nested steps: "outer > inner"), the original as its cause.
 */
export async function step(name, limitMs, fn) {
  activeSteps.push(name);
  const path = currentStep();
  try {
    return await withTimeout(fn(), limitMs, `step "${path}" exceeded its limit`);
  } catch (error) {
    if (error instanceof StepError) throw error;
    throw new StepError(`step "${path}" failed: ${error?.message ?? error}`, { cause: error });
  } finally {
    const at = activeSteps.lastIndexOf(name);
    if (at !== -1) activeSteps.splice(at, 1);
  }
}

/**
 * Runs a bench script's body: an error (a step's failure or timeout) is printed with the step it came
 * from, every server and child process is stopped, and the process exits with 1.
 */
export async function runMain(fn) {
  try {
    await fn();
  } catch (error) {
    const cause = error?.cause?.stack ? `\n  caused by: ${error.cause.stack}` : "";
    await abort(`${error?.stack ?? error}${cause}`, 1);
  }
}

// Every HTTP call of the benches gets a deadline: Node's fetch has none of its own, and a Worker that
// stops answering must fail the step, not hang it. A caller's own signal wins.
export const HTTP_TIMEOUT_MS = 120_000;
const plainFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const what = `${init.method ?? input?.method ?? "GET"} ${typeof input === "string" ? input : (input?.url ?? input)}`;
  const signal = init.signal ?? AbortSignal.timeout(HTTP_TIMEOUT_MS);
  try {
    return await plainFetch(input, { ...init, signal });
  } catch (error) {
    if (error?.name === "TimeoutError") {
      throw new StepTimeout(`${what}: no answer within ${HTTP_TIMEOUT_MS / 1000} s`, { cause: error });
    }
    throw new Error(`${what}: ${error?.cause?.message ?? error?.message ?? error}`, { cause: error });
  }
};

// ---------------------------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------------------------

function processInfo(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const match = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat);
    const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
    return { pid, comm: match[1], ppid: Number(match[2]), args };
  } catch {
    return null; // gone meanwhile
  }
}

/** Every process below `pid` (children, grandchildren, …). */
export function descendants(pid) {
  const all = readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map((name) => processInfo(Number(name)))
    .filter(Boolean);
  const below = (parent) => all.filter((p) => p.ppid === parent).flatMap((p) => [p, ...below(p.pid)]);
  return below(pid);
}

/**
 * Runs a command to completion; resolves with its exit code and output. Past `timeoutMs` the command
 * is killed and the promise rejects naming it.
 */
export function run(command, args, { timeoutMs = 180_000, ...options } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new StepTimeout(`${command} ${args.slice(0, 3).join(" ")} …: killed after ${timeoutMs / 1000} s`));
    }, timeoutMs);
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    // `close`, not `exit`: a child's exit can come before the last of its output has been read.
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
