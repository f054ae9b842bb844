// `npm run deploy`: from a logged-in Cloudflare account to a running service in one command. It finds or
// creates the D1 database, the R2 bucket and the queues wrangler.toml names (wrangler binds them by name, so no id is
// written anywhere), sets the required secrets that are not set yet (from the environment, or generated and
// printed once), applies the D1 migrations to the remote database, deploys the two Workers, the converter
// (converter/wrangler.toml) first and then the API with the values of deploy.vars, and prints the URL.
// `--dry-run` builds both uploads without an account and checks each one's size (CI runs it).
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { ensureBucket, ensureDatabase, ensureQueues, ensureShards, queueNames } from "./lib/deploy-resources.mjs";
import { writeShardedConfig } from "./lib/shards.mjs";
import {
  failureMessage,
  isMain,
  mustRun,
  parseJsonOutput,
  projectRoot,
  requireLogin,
  runMain,
  runWrangler,
  ScriptError,
} from "./lib/wrangler.mjs";

// How the listings are read stays importable from the deploy script (test/scripts/deploy.test.ts checks it here).
export { bucketNames, queueNames } from "./lib/deploy-resources.mjs";

/** Where a deploy with shards writes its configuration (beside wrangler.toml; removed after the deploy). */
const deployConfigPath = join(projectRoot, "wrangler.deploy.toml");

/**
 * The converter Worker's configuration: the image codecs run there, on isolates of their own, and the API
 * reaches it only through its CONVERTER service binding (docs/deployment.md).
 */
export const converterConfigPath = join(projectRoot, "converter", "wrangler.toml");

export const usage = `Usage: npm run deploy [-- --vars-file FILE] [-- --shards N] [-- --dry-run [--outdir DIR]]

  --vars-file FILE   this deployment's variables (default: deploy.vars, if it exists; see deploy.vars.example)
  --shards N         bind N shard databases (SHARD_0 … SHARD_<N-1>), creating and migrating the missing ones;
                     shards the account already has are always kept (default: those, none on a new account)
  --dry-run          build both Workers' uploads without an account, report each one's size and fail if
                     either is above the budget
  --outdir DIR       with --dry-run: keep the builds in DIR, each Worker's in a folder of its own
                     (DIR/api and DIR/converter)

Two Workers are deployed: the converter (converter/wrangler.toml) first, then the API (wrangler.toml), whose
CONVERTER service binding needs the converter to exist. deploy.vars and the secrets are the API's; the
converter has none.

Secrets come from the environment when set there (FILE_SIGNING_SECRET=... npm run deploy); a required secret
that is neither set on the Worker nor in the environment is generated and printed once.`;

const MiB = 1024 * 1024;

/**
 * Size limits the dry run reports. Cloudflare now checks only the uncompressed upload (64 MiB on every plan,
 * since 2026-09-04; wrangler's own report uses it). The former compressed limits (3 MiB Workers Free,
 * 10 MiB Paid) stay as this project's budget: the build fails above 3 MiB gzip, so growth is a decision.
 */
export const sizeLimits = {
  uncompressedBytes: 64 * MiB,
  gzipBudgetBytes: 3 * MiB,
  formerPaidGzipBytes: 10 * MiB,
};

/** Static assets (public/) are uploaded apart from the Worker, with limits of their own. */
export const assetLimits = { fileBytes: 25 * MiB, filesOnFree: 20_000 };

/** A wrangler configuration as wrangler itself reads it (the API's wrangler.toml unless `path` says another). */
export async function readWranglerConfig(path = join(projectRoot, "wrangler.toml")) {
  const { unstable_readConfig } = await import("wrangler");
  return unstable_readConfig({ config: path });
}

/** The converter Worker's configuration (converter/wrangler.toml). */
export function readConverterConfig() {
  return readWranglerConfig(converterConfigPath);
}

/**
 * Checks that the two configurations fit what the deploy does for them: the API's CONVERTER binding names the
 * Worker converter/wrangler.toml deploys; the converter binds only the API's bucket (the one the deploy finds or
 * creates); and it declares no variable and no secret, since deploy.vars and the secrets are given to the API
 * alone. Answers the converter's name.
 */
export function checkConverter(config, converterConfig) {
  const fix = "Make the two configurations agree (wrangler.toml, converter/wrangler.toml).";
  const service = binding(config, "services", "CONVERTER").service;
  if (service !== converterConfig.name) {
    throw new ScriptError(
      `wrangler.toml's CONVERTER binding names the Worker ${service}, but converter/wrangler.toml deploys ${converterConfig.name}. ${fix}`,
    );
  }
  const bucket = binding(config, "r2_buckets", "BUCKET").bucket_name;
  for (const other of converterConfig.r2_buckets ?? []) {
    if (other.bucket_name !== bucket) {
      throw new ScriptError(
        `converter/wrangler.toml binds the R2 bucket ${other.bucket_name} as ${other.binding}; npm run deploy makes only the API's bucket, ${bucket}. ${fix}`,
      );
    }
  }
  const vars = Object.keys(converterConfig.vars ?? {});
  if (vars.length > 0) {
    throw new ScriptError(
      `converter/wrangler.toml declares variables (${vars.join(", ")}), but npm run deploy gives the converter none: deploy.vars is the API's.`,
    );
  }
  const secrets = converterConfig.secrets?.required ?? [];
  if (secrets.length > 0) {
    throw new ScriptError(
      `converter/wrangler.toml requires secrets (${secrets.join(", ")}), but npm run deploy sets secrets on the API Worker only.`,
    );
  }
  return { name: converterConfig.name };
}

/**
 * Parses a vars file: `NAME=value` lines, `#` comments and blank lines; a value may be wrapped in single or
 * double quotes (kept literally inside). Returns the entries in file order.
 */
export function parseVarsFile(text, fileName = "deploy.vars") {
  const entries = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const match = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) throw new ScriptError(`${fileName}:${index + 1}: expected NAME=value, got ${JSON.stringify(line)}`);
    let value = match[2];
    const quoted = /^(["'])(.*)\1$/.exec(value);
    if (quoted) value = quoted[2];
    entries.push([match[1], value]);
  });
  return entries;
}

/**
 * Checks a deployment's variables against wrangler.toml: only names the Worker reads (its [vars]), no secret
 * (those are never written to a file here), each at most once, and never the development routes.
 */
export function checkDeployVars(entries, config, fileName = "deploy.vars") {
  const known = Object.keys(config.vars ?? {});
  const secrets = config.secrets?.required ?? [];
  const seen = new Set();
  for (const [name, value] of entries) {
    if (secrets.includes(name)) {
      throw new ScriptError(
        `${fileName}: ${name} is a secret; set it in the environment when you deploy (${name}=... npm run deploy), not in a file.`,
      );
    }
    if (!known.includes(name)) {
      throw new ScriptError(`${fileName}: ${name} is not a variable of the Worker. Known: ${known.join(", ")}.`);
    }
    if (seen.has(name)) throw new ScriptError(`${fileName}: ${name} is set twice.`);
    seen.add(name);
    if (name === "DEV_FIXTURES" && value.trim().toLowerCase() === "on") {
      throw new ScriptError(
        `${fileName}: DEV_FIXTURES=on opens /api/v1/_dev/fixtures, which lets anyone write stores and tokens; it is for local development only.`,
      );
    }
  }
  return Object.fromEntries(entries);
}

/** The deployment's variables: from `varsFile`, or deploy.vars when it exists, or none. */
export async function readDeployVars(config, varsFile) {
  const path = varsFile ?? join(projectRoot, "deploy.vars");
  let text;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (error.code === "ENOENT" && varsFile === undefined) return {};
    throw new ScriptError(`Cannot read ${path}: ${error.message}`);
  }
  return checkDeployVars(parseVarsFile(text, path), config, path);
}

/** `--var NAME:VALUE` for each variable: wrangler sets exactly these over wrangler.toml's empty defaults. */
export function varArgs(vars) {
  return Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]);
}

/** A new secret: 256 random bits, hex. */
export function generateSecret() {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex");
}

/**
 * Which secrets the deploy sets: one given in the environment is set (that is how a secret is rotated); one
 * the Worker has already is kept; any other required one is generated and shown once.
 */
export function planSecrets(required, existing, env, generate = generateSecret) {
  const plan = { set: {}, kept: [], generated: [] };
  for (const name of required) {
    const fromEnv = env[name];
    if (fromEnv !== undefined && fromEnv !== "") {
      plan.set[name] = fromEnv;
    } else if (existing.includes(name)) {
      plan.kept.push(name);
    } else {
      plan.set[name] = generate();
      plan.generated.push(name);
    }
  }
  return plan;
}

/** The secrets already set on the Worker; none when the Worker does not exist yet. */
async function listSecrets(run) {
  const result = await run(["secret", "list", "--format", "json"]);
  if (result.code === 0) return parseJsonOutput(result.stdout).map((secret) => secret.name);
  if (/Worker "[^"]*"(?: \(env: [^)]*\))? not found/.test(failureMessage(result))) return [];
  throw new ScriptError(`Listing the Worker's secrets failed:\n${failureMessage(result)}`);
}

/** Writes secrets to a file only this user can read, for `wrangler deploy --secrets-file`; removed by `done`. */
async function secretsFile(secrets) {
  const dir = await mkdtemp(join(tmpdir(), "deploy-secrets-"));
  const path = join(dir, "secrets.json");
  await writeFile(path, JSON.stringify(secrets), { mode: 0o600 });
  await chmod(path, 0o600);
  return { path, done: () => rm(dir, { recursive: true, force: true }) };
}

/** The one account to deploy to, or a ScriptError saying how to log in or which account to choose. */
async function checkAccount(run, env) {
  const accounts = (await requireLogin(run, "npm run deploy")).accounts ?? [];
  if (accounts.length > 1 && !env.CLOUDFLARE_ACCOUNT_ID) {
    const list = accounts.map((account) => `  CLOUDFLARE_ACCOUNT_ID=${account.id}  (${account.name})`).join("\n");
    throw new ScriptError(
      `This login has several accounts; choose one:\n${list}\nthen: CLOUDFLARE_ACCOUNT_ID=... npm run deploy`,
    );
  }
  const chosen = accounts.find((account) => account.id === env.CLOUDFLARE_ACCOUNT_ID) ?? accounts[0];
  return chosen ? `${chosen.name} (${chosen.id})` : "the account of CLOUDFLARE_API_TOKEN";
}

function binding(config, kind, name) {
  const found = (config[kind] ?? []).find((entry) => entry.binding === name);
  if (!found) throw new ScriptError(`wrangler.toml has no ${kind} binding ${name}.`);
  return found;
}

/**
 * Deploys the converter Worker (no variables, no secrets: it has none). A failure stops the deploy before the
 * API's: the API would bind a converter that is missing or of the previous version.
 */
async function deployConverter(run, converter, api) {
  // Like the API's deploy, wrangler owns the terminal: whatever it asks, it asks the person deploying.
  const result = await run(["deploy", "--config", converterConfigPath], { mode: "terminal" });
  if (result.code === 0) return result;
  throw new ScriptError(
    `Deploying the converter Worker (${converter.name}) failed (wrangler's message above). The API Worker (${api}) was not deployed: its CONVERTER binding needs the converter deployed first. Run npm run deploy again once the cause is fixed.`,
  );
}

/** Deploys to the logged-in account; returns what it found, made and set. */
export async function deploy(
  options,
  { run = runWrangler, print = console.log, env = process.env, config, converterConfig } = {},
) {
  config ??= await readWranglerConfig();
  converterConfig ??= await readConverterConfig();
  const vars = await readDeployVars(config, options.varsFile);
  const converter = checkConverter(config, converterConfig);
  const databaseName = binding(config, "d1_databases", "DB").database_name;
  const bucketName = binding(config, "r2_buckets", "BUCKET").bucket_name;

  const account = await checkAccount(run, env);
  print(`Deploying ${converter.name} and ${config.name} to ${account}`);
  const { listed, ...database } = await ensureDatabase(run, databaseName, print);
  const shards = await ensureShards(run, databaseName, options.shards, listed, print);
  const bucket = await ensureBucket(run, bucketName, print);
  const queues = await ensureQueues(run, queueNames(config), print);
  const secrets = planSecrets(config.secrets?.required ?? [], await listSecrets(run), env);

  // With shards, wrangler reads wrangler.toml plus their bindings from a generated copy beside it (shards.mjs).
  const shardedConfig =
    shards.length > 0 ? await writeShardedConfig(shards.length, databaseName, deployConfigPath) : null;
  const configArgs = shardedConfig ? ["--config", shardedConfig] : [];
  const names = Object.keys(secrets.set);
  let file;
  let deployed;
  try {
    print(`Applying D1 migrations to the remote database${shards.length > 0 ? " and every shard" : ""}...`);
    for (const binding of ["DB", ...shards.map((shard) => shard.binding)]) {
      await mustRun(
        run,
        `Applying the D1 migrations${binding === "DB" ? "" : ` to ${binding}`}`,
        ["d1", "migrations", "apply", binding, "--remote", ...configArgs],
        { mode: "show" },
      );
    }
    // The converter first: Cloudflare refuses a Worker whose service binding names a Worker that does not
    // exist (API error 10143), and a new API should not call the previous converter.
    await deployConverter(run, converter, config.name);
    file = names.length > 0 ? await secretsFile(secrets.set) : undefined;
    const args = ["deploy", ...varArgs(vars), ...(file ? ["--secrets-file", file.path] : []), ...configArgs];
    // wrangler owns the terminal here: a new account is asked to register its workers.dev subdomain.
    deployed = await mustRun(run, "Deploying the API Worker", args, { mode: "terminal" });
  } finally {
    await file?.done();
    if (shardedConfig) await rm(shardedConfig, { force: true });
  }
  const entry = deployed.outputs.find((output) => output.type === "deploy");
  const url = (entry?.targets ?? []).find((target) => /^https:\/\//.test(target));

  const lines = ["", `Deployed ${config.name}${url ? ` at ${url}` : ""}`];
  if (url) lines.push(`  API:        ${url}/api/v1`, `  Reference:  ${url}/api/v1/docs`);
  lines.push(`  Converter:  ${converter.name} (no URL: only the API's CONVERTER binding reaches it)`);
  lines.push(`  D1:         ${database.name} (${database.id})`);
  for (const shard of shards) lines.push(`  Shard:      ${shard.binding} = ${shard.name} (${shard.id})`);
  lines.push(`  R2:         ${bucket.name}`);
  lines.push(`  Queues:     ${queues.map((queue) => queue.name).join(", ")}`);
  lines.push(`  Variables:  ${Object.keys(vars).length > 0 ? Object.keys(vars).join(", ") : "all defaults"}`);
  for (const name of names.filter((name) => !secrets.generated.includes(name))) {
    lines.push(`  Secret ${name}: set from the environment`);
  }
  for (const name of secrets.kept) lines.push(`  Secret ${name}: kept`);
  if (secrets.generated.length > 0) {
    lines.push("", "Generated secrets (shown this once; Cloudflare keeps them, nothing here does):");
    for (const name of secrets.generated) lines.push(`  ${name}=${secrets.set[name]}`);
    if (secrets.generated.includes("PLATFORM_API_SECRET")) {
      lines.push("  PLATFORM_API_SECRET is the bearer secret sent to PLATFORM_API_URL: give it to that platform.");
    }
  }
  lines.push(
    "",
    "Next, a store and a token for the first call:",
    "  npm run token:create -- --name 'My store' --abilities all",
  );
  print(lines.join("\n"));
  return {
    url,
    converter: converter.name,
    database,
    shards,
    bucket,
    queues,
    secrets: { set: names, kept: secrets.kept, generated: secrets.generated },
    vars,
  };
}

function formatBytes(bytes) {
  return bytes >= MiB ? `${(bytes / MiB).toFixed(2)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;
}

function percent(part, whole) {
  return `${((part / whole) * 100).toFixed(1)} %`;
}

/** Every file under `dir` with its size. */
async function listFiles(dir) {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const files = entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
  return Promise.all(files.map(async (path) => ({ path, size: (await stat(path)).size })));
}

/**
 * Judges a dry run's upload against the limits: returns the report lines and whether it is within budget.
 * `bundle` is wrangler's own measure of the upload (its modules, without source maps); `assets` the files of
 * the Worker's static assets (public/), or null for a Worker without any; `worker` names it in the report.
 */
export function judgeSize(bundle, assets, worker = "Worker") {
  const { uncompressedBytes, gzipBudgetBytes, formerPaidGzipBytes } = sizeLimits;
  const problems = [];
  if (bundle.raw_bytes > uncompressedBytes)
    problems.push(`the upload is above Cloudflare's ${formatBytes(uncompressedBytes)} limit`);
  if (bundle.gzip_bytes > gzipBudgetBytes)
    problems.push(`the gzip size is above the project's ${formatBytes(gzipBudgetBytes)} budget`);
  const lines = [
    `${worker} upload (wrangler's measure: its modules, source maps apart):`,
    `  uncompressed  ${formatBytes(bundle.raw_bytes)}  = ${percent(bundle.raw_bytes, uncompressedBytes)} of the ${formatBytes(uncompressedBytes)} limit (every plan)`,
    `  gzip          ${formatBytes(bundle.gzip_bytes)}  = ${percent(bundle.gzip_bytes, gzipBudgetBytes)} of the ${formatBytes(gzipBudgetBytes)} budget (the former Workers Free limit; Paid was ${formatBytes(formerPaidGzipBytes)})`,
  ];
  if (assets) {
    const largest = assets.reduce((max, file) => (file.size > max.size ? file : max), { path: "-", size: 0 });
    if (largest.size > assetLimits.fileBytes)
      problems.push(`${largest.path} is above the ${formatBytes(assetLimits.fileBytes)} asset limit`);
    if (assets.length > assetLimits.filesOnFree)
      problems.push(`public/ has more than ${assetLimits.filesOnFree} files`);
    lines.push(
      `  Static assets (public/, uploaded apart, not part of the Worker's size): ${assets.length} files, largest ${formatBytes(largest.size)} (limit ${formatBytes(assetLimits.fileBytes)} a file)`,
    );
  }
  return { ok: problems.length === 0, problems, lines };
}

/** Builds one Worker's upload with `wrangler deploy --dry-run ...args`, prints its report and answers it. */
async function buildAndJudge(run, print, worker, args, assets) {
  const result = await mustRun(run, `Building the ${worker} (wrangler deploy --dry-run)`, [
    "deploy",
    "--dry-run",
    ...args,
  ]);
  const bundle = result.outputs.find((output) => output.type === "deploy")?.bundle_size;
  if (!bundle) throw new ScriptError(`wrangler deploy --dry-run reported no bundle size for the ${worker}.`);
  const label = worker.charAt(0).toUpperCase() + worker.slice(1);
  const verdict = judgeSize(bundle, assets, label);
  print(verdict.lines.join("\n"));
  return { worker, bundle, ...verdict };
}

/**
 * Builds both Workers' uploads exactly as a deploy would (the converter as it is; the API with the same
 * variables and a secrets file) without an account, in DIR/converter and DIR/api, and judges each one's size.
 * Both are built and reported before either's size fails the run.
 */
export async function dryRun(options, { run = runWrangler, print = console.log, config, converterConfig } = {}) {
  config ??= await readWranglerConfig();
  converterConfig ??= await readConverterConfig();
  const vars = await readDeployVars(config, options.varsFile);
  const converterName = checkConverter(config, converterConfig).name;
  const outdir = options.outdir ?? (await mkdtemp(join(tmpdir(), "deploy-dry-run-")));
  const placeholders = Object.fromEntries((config.secrets?.required ?? []).map((name) => [name, "dry-run"]));
  const file = await secretsFile(placeholders);
  try {
    // The converter has no static assets: its report has no assets line and no asset limit.
    const converter = await buildAndJudge(
      run,
      print,
      `converter Worker (${converterName})`,
      ["--outdir", join(outdir, "converter"), "--config", converterConfigPath],
      null,
    );
    const assetsDir = resolve(projectRoot, config.assets?.directory ?? "public");
    const api = await buildAndJudge(
      run,
      print,
      `API Worker (${config.name})`,
      ["--outdir", join(outdir, "api"), ...varArgs(vars), "--secrets-file", file.path],
      await listFiles(assetsDir),
    );
    const tooLarge = [converter, api].filter((report) => !report.ok);
    if (tooLarge.length > 0) {
      const reasons = tooLarge.map((report) => `the ${report.worker}: ${report.problems.join("; ")}`);
      throw new ScriptError(`Too large: ${reasons.join("; ")}.`);
    }
    print("Both Workers are within the limits.");
    return { ok: true, converter, api };
  } finally {
    await file.done();
    if (options.outdir === undefined) await rm(outdir, { recursive: true, force: true });
  }
}

export function parseDeployArgs(argv) {
  try {
    const { values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        "vars-file": { type: "string" },
        shards: { type: "string" },
        "dry-run": { type: "boolean", default: false },
        outdir: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
    if (values.outdir !== undefined && !values["dry-run"]) throw new Error("--outdir needs --dry-run.");
    let shards;
    if (values.shards !== undefined) {
      shards = Number(values.shards);
      if (!/^\d+$/.test(values.shards) || shards > 5000) throw new Error("--shards takes a whole number up to 5000.");
    }
    return {
      help: values.help,
      dryRun: values["dry-run"],
      varsFile: values["vars-file"],
      outdir: values.outdir,
      ...(shards !== undefined ? { shards } : {}),
    };
  } catch (error) {
    throw new ScriptError(`${error.message}\n\n${usage}`);
  }
}

export async function main(argv, dependencies = {}) {
  const options = parseDeployArgs(argv);
  if (options.help) {
    (dependencies.print ?? console.log)(usage);
    return;
  }
  if (options.dryRun) await dryRun(options, dependencies);
  else await deploy(options, dependencies);
}

if (isMain(import.meta.url)) runMain(main);
