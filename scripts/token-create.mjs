// `npm run token:create -- --abilities ... [--store ID | --name NAME] [--local]`: creates an API token (and its
// store when that does not exist yet) on the deployed D1 database, or with --local on the one `npm run dev`
// uses, and prints the token once: only its SHA-256 is stored.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { readWranglerConfig } from "./deploy.mjs";
import {
  ABILITIES,
  directoryCountsQuery,
  existingStoresQuery,
  newTokenSecret,
  parseAbilities,
  parseStoreIds,
  parseStoreName,
  storeStatements,
  tokenStatements,
  UsageError,
} from "./lib/api-token.mjs";
import {
  existingShardCount,
  leastLoadedShard,
  localShardCount,
  shardedConfigPath,
  writeShardedConfig,
} from "./lib/shards.mjs";
import {
  isMain,
  mustRun,
  parseJsonOutput,
  projectRoot,
  requireLogin,
  runMain,
  runWrangler,
  ScriptError,
} from "./lib/wrangler.mjs";

export const usage = `Usage: npm run token:create -- --abilities LIST [--store ID]... [--name NAME] [--local [--persist-to DIR]] [--json]

  --abilities LIST   comma-separated: ${ABILITIES.join(", ")}; or all
  --store ID         a store the token acts for (repeat, or separate with commas); without it a new store is made
  --name NAME        the name of the store to create when --store is not given or does not exist yet
  --local            the local database of \`npm run dev\` instead of the deployed one
  --persist-to DIR   with --local: the directory given to \`npm run dev -- --persist-to\`
  --json             print {"token", "store_ids", "abilities", "created_stores"} as JSON instead of text`;

/** The command line as options, or a UsageError naming what is wrong. */
export function parseTokenArgs(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      options: {
        abilities: { type: "string" },
        store: { type: "string", multiple: true },
        name: { type: "string" },
        local: { type: "boolean", default: false },
        "persist-to": { type: "string" },
        json: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    }).values;
  } catch (error) {
    throw new UsageError(error.message);
  }
  if (parsed.help) return { help: true };
  if (parsed["persist-to"] !== undefined && !parsed.local) throw new UsageError("--persist-to needs --local.");
  const storeIds = parseStoreIds(parsed.store ?? []);
  const name = parsed.name === undefined ? undefined : parseStoreName(parsed.name);
  if (storeIds.length === 0 && name === undefined) {
    throw new UsageError("Pass --store ID for an existing store, or --name NAME to create a new one.");
  }
  return {
    help: false,
    abilities: parseAbilities(parsed.abilities),
    storeIds,
    name,
    local: parsed.local,
    persistTo: parsed["persist-to"],
    json: parsed.json,
  };
}

/**
 * The shards a new store may be placed on (docs/scaling.md, "Placing a new store"), with the `--config` that
 * binds them: locally the two of `npm run dev` (its wrangler.shards.toml), remotely the account's databases
 * named like the global one with `-shard-<n>`, in a configuration written for this run (`remove` deletes it).
 * Null when there are none: the store then lives in the global database, as before shards.
 */
async function shardsForPlacement(options, wrangle, readConfig) {
  if (options.local)
    return {
      count: localShardCount,
      configArgs: ["--config", await writeShardedConfig(localShardCount, undefined, shardedConfigPath)],
      remove: async () => {},
    };
  const config = await readConfig();
  const databaseName = (config.d1_databases ?? []).find((entry) => entry.binding === "DB")?.database_name;
  if (!databaseName) throw new ScriptError("wrangler.toml has no d1_databases binding DB.");
  const listed = parseJsonOutput((await wrangle("Listing D1 databases", ["d1", "list", "--json"])).stdout);
  const count = existingShardCount(
    databaseName,
    listed.map((database) => database.name),
  );
  if (count === 0) return null;
  const path = join(projectRoot, `wrangler.token-create.${process.pid}.toml`);
  await writeShardedConfig(count, databaseName, path);
  return { count, configArgs: ["--config", path], remove: () => rm(path, { force: true }) };
}

/**
 * Creates the token (and its store if needed) through `run` (wrangler), and returns what was made. A new
 * store is placed on the shard with the fewest stores when there are shards: its home copy of the `stores`
 * row is written there first, then the global database's part (the store, its directory entry, the token)
 * in one batch, as the fixture loader does. The store check and each database's writes are a `d1 execute`.
 */
export async function createToken(
  options,
  { run = runWrangler, newId = () => crypto.randomUUID(), config = undefined } = {},
) {
  const target = options.local
    ? ["--local", ...(options.persistTo ? ["--persist-to", options.persistTo] : [])]
    : ["--remote"];
  const where = options.local ? "the local database" : "the deployed database";
  const wrangle = async (doing, args) => {
    try {
      return await mustRun(run, doing, args);
    } catch (error) {
      // The usual first failure against the account is a missing login: say how to log in instead.
      if (!options.local) await requireLogin(run, "npm run token:create");
      throw error;
    }
  };
  const execute = (doing, sql, { binding = "DB", configArgs = [] } = {}) =>
    wrangle(`${doing} on ${where}`, [
      "d1",
      "execute",
      binding,
      ...target,
      ...configArgs,
      "--json",
      "--yes",
      "--command",
      sql,
    ]);

  let storeIds = options.storeIds;
  let newStores = [];
  if (storeIds.length === 0) {
    const id = newId();
    storeIds = [id];
    newStores = [{ id, name: options.name }];
  } else {
    const answer = parseJsonOutput((await execute("Looking up the stores", existingStoresQuery(storeIds))).stdout);
    const existing = new Set(answer.flatMap((statement) => statement.results ?? []).map((row) => row.id));
    const missing = storeIds.filter((id) => !existing.has(id));
    if (missing.length > 0 && options.name === undefined) {
      throw new ScriptError(`No store ${missing.join(", ")} on ${where}; pass --name NAME to create it.`);
    }
    if (missing.length > 1) {
      throw new ScriptError(
        `Stores ${missing.join(", ")} do not exist; --name creates one store, so create them one by one.`,
      );
    }
    newStores = missing.map((id) => ({ id, name: options.name }));
  }

  const now = Date.now();
  if (newStores.length > 0) {
    const shards = await shardsForPlacement(options, wrangle, async () => config ?? (await readWranglerConfig()));
    if (shards) {
      try {
        const counts = parseJsonOutput((await execute("Reading the store directory", directoryCountsQuery)).stdout);
        const shard = leastLoadedShard(
          counts.flatMap((statement) => statement.results ?? []),
          shards.count,
        );
        newStores = newStores.map((store) => ({ ...store, shard }));
        await execute(`Writing the store to ${shard}`, storeStatements(newStores, now).join(";\n"), {
          binding: shard,
          configArgs: shards.configArgs,
        });
      } finally {
        await shards.remove();
      }
    }
  }
  const secret = newTokenSecret();
  const statements = await tokenStatements({ secret, storeIds, abilities: options.abilities, newStores, now });
  await execute("Writing the token", statements.join(";\n"));
  return { token: secret, storeIds, abilities: options.abilities, createdStores: newStores };
}

/** The text printed after a token was made: the secret once, and a first call with it. */
export function describeToken(made, { local }) {
  const stores = made.storeIds
    .map((id) => {
      const created = made.createdStores.find((store) => store.id === id);
      return created ? `${id} (created: ${created.name}${created.shard ? `, on ${created.shard}` : ""})` : id;
    })
    .join("\n                ");
  const api = local ? "http://127.0.0.1:8787/api/v1" : "https://<your worker>.workers.dev/api/v1";
  return `
API token created on ${local ? "the local database" : "the deployed database"}.
  Store:        ${stores}
  Abilities:    ${made.abilities.join(", ")}
  Token:        ${made.token}

The token is shown this once; the database keeps only its SHA-256. A first call:
  API=${api}
  TOKEN=${made.token}
  STORE=${made.storeIds[0]}
  curl -s "$API/subscriptions" -H "Authorization: Bearer $TOKEN" -H "X-Service-Store: $STORE"
`;
}

export async function main(argv, { run = runWrangler, print = console.log } = {}) {
  let options;
  try {
    options = parseTokenArgs(argv);
  } catch (error) {
    if (error instanceof UsageError) throw new ScriptError(`${error.message}\n\n${usage}`);
    throw error;
  }
  if (options.help) {
    print(usage);
    return;
  }
  const made = await createToken(options, { run });
  if (options.json) {
    print(
      JSON.stringify({
        token: made.token,
        store_ids: made.storeIds,
        abilities: made.abilities,
        created_stores: made.createdStores,
      }),
    );
  } else {
    print(describeToken(made, options));
  }
}

if (isMain(import.meta.url)) runMain(main);
