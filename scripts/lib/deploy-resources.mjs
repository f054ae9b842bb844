// The account's resources `npm run deploy` finds by name or creates (scripts/deploy.mjs): the D1 database and its
// shards, the R2 bucket and the queues wrangler.toml names. Each answers what it found or made.
import { existingShardCount, shardBinding, shardDatabaseName } from "./shards.mjs";
import { failureCode, failureMessage, mustRun, parseJsonOutput, ScriptError } from "./wrangler.mjs";

/**
 * Finds the D1 database by name, creating it when the account has none of that name. `listed` is the account's
 * listing when the caller has it already. Answers the database and the account's database names.
 */
export async function ensureDatabase(run, name, print, listed) {
  const listing = async () =>
    parseJsonOutput((await mustRun(run, "Listing D1 databases", ["d1", "list", "--json"])).stdout);
  const all = listed ?? (await listing());
  const found = all.find((database) => database.name === name);
  if (found) {
    print(`D1 database ${name}: found (${found.uuid})`);
    return { name, id: found.uuid, created: false, listed: all };
  }
  await mustRun(run, `Creating D1 database ${name}`, ["d1", "create", name]);
  const after = await listing();
  const created = after.find((database) => database.name === name);
  if (!created) throw new ScriptError(`D1 database ${name} was created but is not listed; run npm run deploy again.`);
  print(`D1 database ${name}: created (${created.uuid})`);
  return { name, id: created.uuid, created: true, listed: after };
}

/**
 * The shard databases (docs/scaling.md): `wanted` of them, or as many as the account already has if more (a
 * shard holds stores: it is never dropped), each found or created. Answers them in order, SHARD_0 first.
 */
export async function ensureShards(run, databaseName, wanted, listed, print) {
  const count = Math.max(
    wanted ?? 0,
    existingShardCount(
      databaseName,
      listed.map((database) => database.name),
    ),
  );
  const shards = [];
  let listing = listed;
  for (let n = 0; n < count; n++) {
    const shard = await ensureDatabase(run, shardDatabaseName(databaseName, n), print, listing);
    listing = shard.listed;
    shards.push({ binding: shardBinding(n), name: shard.name, id: shard.id, created: shard.created });
  }
  return shards;
}

/** API error 10042: the account has never turned R2 on, which only its owner can do, in the dashboard. */
const r2NotEnabled = () =>
  new ScriptError(
    "R2 is not enabled on this account. Enable it once in the Cloudflare dashboard (R2 Object Storage; Cloudflare asks to accept its R2 plan, whose free tier covers this service's start), then run `npm run deploy` again.",
  );

// biome-ignore lint/suspicious/noControlCharactersInRegex: the terminal colours wrangler may write.
const colours = /\x1b\[[0-9;]*m/g;

/** The bucket names in `wrangler r2 bucket list` (a `name:` line per bucket; it has no JSON form). */
export function bucketNames(listOutput) {
  return [...listOutput.replace(colours, "").matchAll(/^name:\s+(\S+)\s*$/gm)].map((match) => match[1]);
}

/**
 * Finds the R2 bucket by name, creating it when it is not listed. `r2 bucket list` needs only R2 read
 * permission (`r2 bucket info` also reads analytics); a create that finds the bucket there after all (API
 * error 10004, "already exists, and you own it") counts as found.
 */
export async function ensureBucket(run, name, print) {
  const list = await run(["r2", "bucket", "list"]);
  if (failureCode(list) === 10042) throw r2NotEnabled();
  if (list.code !== 0) throw new ScriptError(`Listing R2 buckets failed:\n${failureMessage(list)}`);
  if (bucketNames(list.stdout).includes(name)) {
    print(`R2 bucket ${name}: found`);
    return { name, created: false };
  }
  const created = await run(["r2", "bucket", "create", name]);
  if (failureCode(created) === 10042) throw r2NotEnabled();
  if (failureCode(created) === 10004) {
    print(`R2 bucket ${name}: found`);
    return { name, created: false };
  }
  if (created.code !== 0) throw new ScriptError(`Creating R2 bucket ${name} failed:\n${failureMessage(created)}`);
  print(`R2 bucket ${name}: created`);
  return { name, created: true };
}

/** Every queue wrangler.toml names: produced to, consumed, or a consumer's dead-letter queue. */
export function queueNames(config) {
  const names = [
    ...(config.queues?.producers ?? []).map((producer) => producer.queue),
    ...(config.queues?.consumers ?? []).flatMap((consumer) => [consumer.queue, consumer.dead_letter_queue]),
  ];
  return [...new Set(names.filter(Boolean))];
}

/**
 * Finds each queue by name (`queues info`), creating the ones the account lacks: a deploy that binds a
 * producer or a consumer to a queue that does not exist fails.
 */
export async function ensureQueues(run, names, print) {
  const results = [];
  for (const name of names) {
    const info = await run(["queues", "info", name]);
    if (info.code === 0) {
      print(`Queue ${name}: found`);
      results.push({ name, created: false });
      continue;
    }
    if (!failureMessage(info).includes(`Queue "${name}" does not exist`)) {
      throw new ScriptError(`Looking up queue ${name} failed:\n${failureMessage(info)}`);
    }
    await mustRun(run, `Creating queue ${name}`, ["queues", "create", name]);
    print(`Queue ${name}: created`);
    results.push({ name, created: true });
  }
  return results;
}
