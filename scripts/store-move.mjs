// `npm run store:move -- --store ID --to SHARD_n [--url URL]`: moves a store's rows to another shard while its
// API stays in use (docs/scaling.md, "Moving a store under traffic"); `--recover` instead of `--to` finishes a
// move that stopped part-way ("A move that stops part-way"). The Worker does the work; this script asks it and
// prints what it did: `npm run dev`'s `_dev` route by default, or with --url a deployment's `_ops` route, whose
// bearer is the STORE_MOVE_SECRET of this script's environment (the Worker's secret of that name).
import { parseArgs } from "node:util";
import { uuidPattern } from "./lib/api-token.mjs";
import { isMain, runMain, ScriptError } from "./lib/wrangler.mjs";

export const usage = `Usage: npm run store:move -- --store ID --to SHARD_<n> [--url URL]
       npm run store:move -- --store ID --recover [--url URL]

  --store ID   the store to move
  --to NAME    the shard binding it moves to (SHARD_0, SHARD_1, ...)
  --recover    finish a move of the store that stopped part-way (its command cut off, the Worker gone): the
               store stays in the home the directory names, its writes open again, copies elsewhere deleted
  --url URL    the Worker; default http://localhost:8787 (\`npm run dev\`, its /api/v1/_dev route).
               With STORE_MOVE_SECRET set in the environment: the deployment's /api/v1/_ops route, with that
               secret as bearer (set it on the Worker with \`npx wrangler secret put STORE_MOVE_SECRET\`).

The move holds the store's writes (503 with Retry-After) from the copy until about two seconds after the
switch, and takes TOKEN_CACHE_SECONDS more before the copy starts.`;

/** The command line as options; a ScriptError names what is wrong. */
export function parseMoveArgs(argv, environment = process.env) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      options: {
        store: { type: "string" },
        to: { type: "string" },
        recover: { type: "boolean", default: false },
        url: { type: "string", default: "http://localhost:8787" },
        help: { type: "boolean", short: "h", default: false },
      },
    }).values;
  } catch (error) {
    throw new ScriptError(`${error.message}\n\n${usage}`);
  }
  if (parsed.help) return { help: true };
  if (!parsed.store || !uuidPattern.test(parsed.store))
    throw new ScriptError(`--store needs a store id (a UUID).\n\n${usage}`);
  if (parsed.recover && parsed.to) throw new ScriptError(`--recover takes no --to.\n\n${usage}`);
  if (!parsed.recover && (!parsed.to || !/^SHARD_\d+$/.test(parsed.to)))
    throw new ScriptError(`--to needs a shard, SHARD_<n>.\n\n${usage}`);
  const secret = environment.STORE_MOVE_SECRET?.trim() || undefined;
  const base = parsed.url.replace(/\/+$/, "");
  const move = `${base}/api/v1/${secret ? "_ops" : "_dev"}/stores/${parsed.store.toLowerCase()}/move`;
  return parsed.recover
    ? { help: false, recover: true, storeId: parsed.store.toLowerCase(), url: `${move}/recover`, secret }
    : { help: false, recover: false, storeId: parsed.store.toLowerCase(), to: parsed.to, url: move, secret };
}

/**
 * Asks the Worker to move the store (or to recover its move); answers its report, or throws a ScriptError with
 * the Worker's message.
 */
export async function moveStore(options, fetcher = fetch) {
  let response;
  try {
    response = await fetcher(options.url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        ...(options.secret ? { Authorization: `Bearer ${options.secret}` } : {}),
      },
      ...(options.recover ? {} : { body: JSON.stringify({ to: options.to }) }),
    });
  } catch (error) {
    throw new ScriptError(
      `The Worker at ${options.url} did not answer (${error.message}); is \`npm run dev\` running?`,
    );
  }
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = { message: text.slice(0, 500) };
  }
  if (response.status === 404 && body.message === "Not found.") {
    throw new ScriptError(
      options.secret
        ? "The Worker has no /_ops route: set its STORE_MOVE_SECRET secret (npx wrangler secret put STORE_MOVE_SECRET)."
        : "The Worker has no /_dev route (DEV_FIXTURES is off): for a deployment give --url and STORE_MOVE_SECRET.",
    );
  }
  if (!response.ok)
    throw new ScriptError(
      `The ${options.recover ? "recovery" : "move"} was refused (${response.status}): ${body.message}`,
    );
  return body;
}

export async function main(argv) {
  const options = parseMoveArgs(argv);
  if (options.help) {
    console.log(usage);
    return;
  }
  if (options.recover) {
    console.log(`Recovering the move of store ${options.storeId} (${options.url}) ...`);
    const report = await moveStore(options);
    const cleaned =
      report.cleaned.length > 0 ? `its rows deleted from ${report.cleaned.join(", ")}` : "no copy elsewhere";
    console.log(
      `Store ${report.store_id} lives in ${report.home} (found ${report.found}${report.opened ? ", its writes opened again" : ""}); ${cleaned}.`,
    );
    return;
  }
  console.log(`Moving store ${options.storeId} to ${options.to} (${options.url}) ...`);
  const report = await moveStore(options);
  console.log(
    `Moved store ${report.store_id} from ${report.from} to ${report.to} (directory version ${report.version}); writes were held ${report.writes_held_ms} ms.`,
  );
  for (const table of report.tables)
    console.log(`  ${table.table.padEnd(16)} ${String(table.rows).padStart(8)} rows  ${table.checksum.slice(0, 16)}`);
}

if (isMain(import.meta.url)) runMain(main);
