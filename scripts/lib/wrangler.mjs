// Runs the project's wrangler from the deploy and token scripts: with the Node that runs the script (the
// project's Node 22), its output captured or shown, and its machine-readable record of the run read back.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** wrangler's package exports do not include its bin script, so it is found by path. */
export const wranglerBin = fileURLToPath(new URL("../../node_modules/wrangler/bin/wrangler.js", import.meta.url));

export const projectRoot = fileURLToPath(new URL("../..", import.meta.url));

/** Whether `moduleUrl` (a script's import.meta.url) is the script node was asked to run. */
export function isMain(moduleUrl) {
  return process.argv[1] !== undefined && moduleUrl === pathToFileURL(process.argv[1]).href;
}

/**
 * Runs `wrangler ...args` in the project directory. `mode` is how its terminal is wired:
 * - `capture`: stdout and stderr are collected (JSON answers); stdin is closed, so wrangler runs
 *   non-interactively (a remote migration is applied without its confirmation prompt).
 * - `show`: stdout and stderr go to the terminal as they come and are collected too; stdin is closed.
 * - `terminal`: wrangler owns the terminal (stdin included) so it can ask, e.g. to register the account's
 *   workers.dev subdomain on a first deploy; nothing is collected.
 * Every mode returns the entries wrangler wrote to its output file (WRANGLER_OUTPUT_FILE_PATH): the
 * deploy's URLs and bundle size, or the message of a failed command.
 * @returns {Promise<{ code: number, stdout: string, stderr: string, outputs: Array<Record<string, unknown>> }>}
 */
export async function runWrangler(args, { mode = "capture", env = {} } = {}) {
  const dir = await mkdtemp(join(tmpdir(), "wrangler-run-"));
  const outputFile = join(dir, "output.ndjson");
  try {
    const child = spawn(process.execPath, [wranglerBin, ...args], {
      cwd: projectRoot,
      stdio: mode === "terminal" ? "inherit" : ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        WRANGLER_SEND_METRICS: "false",
        // A captured answer is JSON that wrangler prints at its "log" level: a quieter WRANGLER_LOG would drop it.
        ...(mode === "capture" ? { WRANGLER_LOG: "log" } : {}),
        ...env,
        WRANGLER_OUTPUT_FILE_PATH: outputFile,
      },
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk) => {
      stdout += chunk;
      if (mode === "show") process.stdout.write(chunk);
    });
    child.stderr?.on("data", (chunk) => {
      stderr += chunk;
      if (mode === "show") process.stderr.write(chunk);
    });
    const code = await new Promise((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (exitCode, signal) => resolve(exitCode ?? (signal ? 128 : 1)));
    });
    const outputs = (await readFile(outputFile, "utf8").catch(() => ""))
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line));
    return { code, stdout, stderr, outputs };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the terminal colours wrangler writes.
const colours = /\x1b\[[0-9;]*m/g;

/**
 * What wrangler said when a command failed: its printed error (with the API's reasons, which its output file
 * leaves out), else the message from its output file.
 */
export function failureMessage(result) {
  const printed = `${result.stderr}`.replace(colours, "").trim();
  if (printed !== "") return printed;
  // With --json, wrangler prints its error as {"error": {"text": ...}} on standard output.
  const jsonError = /"error"\s*:\s*\{\s*"text"\s*:\s*("(?:[^"\\]|\\.)*")/.exec(`${result.stdout}`)?.[1];
  if (jsonError) return JSON.parse(jsonError);
  const failed = result.outputs.find((entry) => entry.type === "command-failed");
  if (typeof failed?.message === "string" && failed.message !== "") return failed.message;
  return `wrangler exited with ${result.code}`;
}

/** The Cloudflare API error code of a failed command (e.g. 10006: no such R2 bucket), if it had one. */
export function failureCode(result) {
  return result.outputs.find((entry) => entry.type === "command-failed")?.code;
}

/** A failure the scripts explain themselves: printed without a stack trace, exit code 1. */
export class ScriptError extends Error {
  name = "ScriptError";
}

/** Runs wrangler and returns its result, or throws a ScriptError saying what `doing` was and why it failed. */
export async function mustRun(run, doing, args, options) {
  const result = await run(args, options);
  if (result.code === 0) return result;
  // In the modes that show wrangler's output its error is on the screen already.
  const shown = options?.mode === "show" || options?.mode === "terminal";
  throw new ScriptError(
    shown ? `${doing} failed (wrangler's message above).` : `${doing} failed:\n${failureMessage(result)}`,
  );
}

/**
 * Returns when wrangler has a Cloudflare login (or an API token); otherwise throws a ScriptError saying how to
 * log in and then run `command` again.
 */
export async function requireLogin(run, command) {
  const who = await run(["whoami", "--json"]);
  if (who.code === 0) return parseJsonOutput(who.stdout);
  // `whoami --json` prints {"loggedIn":false} when there is no login; anything else is wrangler's own failure.
  if (/"loggedIn"\s*:\s*false/.test(who.stdout)) {
    throw new ScriptError(
      `Not logged in to Cloudflare. Run \`npx wrangler login\` (or set CLOUDFLARE_API_TOKEN), then \`${command}\` again.`,
    );
  }
  throw new ScriptError(`Checking the Cloudflare login failed:\n${failureMessage(who)}`);
}

/** Parses the JSON wrangler printed; a line or two may come before or after it (a banner, a notice). */
export function parseJsonOutput(stdout) {
  const start = stdout.search(/^[[{]/m);
  const end = Math.max(stdout.lastIndexOf("]"), stdout.lastIndexOf("}"));
  try {
    if (start !== -1 && end > start) return JSON.parse(stdout.slice(start, end + 1));
  } catch {
    // Reported below with what was printed.
  }
  throw new ScriptError(`wrangler printed no JSON where one was expected:\n${stdout.slice(0, 500)}`);
}

/** Runs a script's main: a ScriptError is printed as a message, anything else with its stack. */
export function runMain(main) {
  main(process.argv.slice(2)).catch((error) => {
    console.error(error instanceof ScriptError ? `\n${error.message}` : error);
    process.exitCode = 1;
  });
}
