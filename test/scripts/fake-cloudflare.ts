import { readFileSync, statSync } from "node:fs";
import type { RunWrangler, WranglerMode, WranglerResult } from "../../scripts/lib/wrangler.mjs";

/** One wrangler command as a script issued it, with the secrets file as it was when wrangler read it. */
export type Call = {
  args: string[];
  mode: WranglerMode;
  secretsFile?: { path: string; mode: number; secrets: Record<string, string> };
};

const ok = (stdout = ""): WranglerResult => ({ code: 0, stdout, stderr: "", outputs: [] });
const failed = (stderr: string, code?: number, message = stderr): WranglerResult => ({
  code: 1,
  stdout: "",
  stderr: `✘ [ERROR] ${stderr}`,
  outputs: [{ type: "command-failed", version: 1, code, message }],
});

/**
 * A Cloudflare account as wrangler 4 presents it to the deploy and token scripts, for tests without an account:
 * it answers the commands the scripts issue the way wrangler does (JSON shapes, error codes, the output
 * file's entries), keeps the account's state, records every call, and refuses a command it does not know.
 * It enforces wrangler's own rules: migrations need the database, a deploy needs its bucket and database,
 * and a Worker's first deploy must bring every required secret (`--secrets-file`). It holds the two Workers
 * `npm run deploy` makes: a deploy with `--config …/converter/wrangler.toml` is the converter's (it binds only
 * the bucket), any other the API's, which Cloudflare refuses while the Worker its CONVERTER service binding
 * names does not exist (API error 10143).
 */
export class FakeCloudflare {
  loggedIn = true;
  accounts = [{ id: "acc-1", name: "Shop Account" }];
  databases: { name: string; uuid: string }[] = [];
  buckets = new Set<string>();
  queues = new Set<string>();
  /** The queues a deploy binds (wrangler.toml's); a deploy before they exist fails, as Cloudflare's does. */
  requiredQueues: string[] = [];
  worker: { secrets: Set<string>; vars: Record<string, string> } | undefined;
  /** The converter Worker, once deployed: what its deploy was given besides its configuration. */
  converter: { vars: Record<string, string>; secrets: string[] } | undefined;
  /** The converter's deploy fails (as one above a size limit does), leaving the account's converter as it was. */
  failConverterDeploy = false;
  migrationsApplied = 0;
  failMigrations = false;
  /** An account whose owner has never turned R2 on answers every R2 call with API error 10042. */
  r2Enabled = true;
  /** What `deploy --dry-run` reports for each Worker (about the project's own builds). */
  bundleSize = { raw_bytes: 1_615_000, gzip_bytes: 314_600 };
  converterBundleSize = { raw_bytes: 2_423_000, gzip_bytes: 862_000 };
  url = "https://storefront-checkout-api.shop.workers.dev";
  readonly calls: Call[] = [];

  constructor(readonly requiredSecrets: string[] = ["FILE_SIGNING_SECRET", "PLATFORM_API_SECRET"]) {}

  /** The account after a complete earlier deploy. */
  deployedBefore(databaseName: string, bucketName: string, queues: string[] = []): this {
    this.databases.push({ name: databaseName, uuid: "11111111-2222-4333-8444-555555555555" });
    this.buckets.add(bucketName);
    for (const queue of queues) this.queues.add(queue);
    this.worker = { secrets: new Set(this.requiredSecrets), vars: {} };
    this.converter = { vars: {}, secrets: [] };
    return this;
  }

  /** The (last) deploy call of one Worker, dry runs included. */
  deployOf(worker: "api" | "converter"): Call | undefined {
    return this.calls.findLast(
      (call) => call.args[0] === "deploy" && isConverter(call.args) === (worker === "converter"),
    );
  }

  /** Commands in the order they were issued, as `wrangler ...` strings without values after flags. */
  commandLines(): string[] {
    return this.calls.map((call) => call.args.join(" "));
  }

  run: RunWrangler = async (args, options = {}) => {
    const call: Call = { args, mode: options.mode ?? "capture" };
    const secretsPath = flagValue(args, "--secrets-file");
    if (secretsPath) {
      call.secretsFile = {
        path: secretsPath,
        mode: statSync(secretsPath).mode & 0o777,
        secrets: JSON.parse(readFileSync(secretsPath, "utf8")),
      };
    }
    this.calls.push(call);
    return this.answer(args, call);
  };

  private answer(args: string[], call: Call): WranglerResult {
    const command = args.filter((arg) => !arg.startsWith("--")).slice(0, 3);
    const [first, second, third] = command;
    if (first === "whoami") {
      return this.loggedIn
        ? ok(JSON.stringify({ loggedIn: true, authType: "OAuth Token", accounts: this.accounts }))
        : { code: 1, stdout: JSON.stringify({ loggedIn: false }), stderr: "", outputs: [] };
    }
    if (!this.loggedIn) return failed("You are not authenticated. Please run `wrangler login`.");
    if (first === "d1" && second === "list") return ok(JSON.stringify(this.databases, null, 2));
    if (first === "d1" && second === "create" && third) {
      if (this.databases.some((database) => database.name === third))
        return failed("A database with that name already exists [code: 7502]", 7502);
      this.databases.push({ name: third, uuid: crypto.randomUUID() });
      return ok(`✅ Successfully created DB '${third}'`);
    }
    if (first === "r2" && !this.r2Enabled) {
      return failed(
        "A request to the Cloudflare API (/accounts/acc-1/r2/buckets) failed.\n  Please enable R2 Subscription for your account. [code: 10042]",
        10042,
        "A request to the Cloudflare API (/accounts/acc-1/r2/buckets) failed.",
      );
    }
    if (first === "r2" && second === "bucket" && args[2] === "list") {
      // wrangler's own text: "Listing buckets..." then a name/creation_date block per bucket.
      const blocks = [...this.buckets].map(
        (name) => `name:           ${name}\ncreation_date:  2026-11-01T10:00:00.000Z`,
      );
      return ok(`Listing buckets...\n${blocks.join("\n\n")}\n`);
    }
    if (first === "r2" && second === "bucket" && args[2] === "create") {
      const name = args[3] ?? "";
      if (this.buckets.has(name)) {
        return failed(
          `A request to the Cloudflare API (/accounts/acc-1/r2/buckets) failed.\n  The bucket you tried to create already exists, and you own it. [code: 10004]`,
          10004,
          "A request to the Cloudflare API (/accounts/acc-1/r2/buckets) failed.",
        );
      }
      this.buckets.add(name);
      return ok(`Creating bucket '${name}'...\n✅ Created bucket '${name}' with default storage class of Standard.`);
    }
    if (first === "queues" && second === "info" && third) {
      if (this.queues.has(third)) return ok(`Queue Name: ${third}\nQueue ID: ${third}-id\nNumber of Producers: 1`);
      return failed(`Queue "${third}" does not exist. To create it, run: wrangler queues create ${third}`);
    }
    if (first === "queues" && second === "create" && third) {
      if (this.queues.has(third)) return failed(`A queue with this name already exists. [code: 11009]`, 11009);
      this.queues.add(third);
      return ok(`🌀 Creating queue '${third}'\n✅ Created queue '${third}'.`);
    }
    if (first === "secret" && second === "list") {
      if (!this.worker)
        return failed(
          `Worker "storefront-checkout-api" not found.\nIf this is a new Worker, run \`wrangler deploy\` first to create it.`,
        );
      return ok(JSON.stringify([...this.worker.secrets].map((name) => ({ name, type: "secret_text" }))));
    }
    if (first === "d1" && second === "migrations" && args[2] === "apply") {
      if (!args.includes("--remote")) throw new Error(`migrations without --remote: ${args.join(" ")}`);
      if (this.databases.length === 0)
        return failed("Couldn't find a D1 DB named 'storefront-checkout' (bound as 'DB') in the API.");
      if (this.failMigrations)
        return failed(
          'Migration 0001_subscriptions_search.sql failed with the following errors: near "x": syntax error',
        );
      this.migrationsApplied++;
      return ok("✅ 0000_init.sql");
    }
    if (first === "deploy") return this.deploy(args, call);
    throw new Error(`the fake account does not know: wrangler ${args.join(" ")}`);
  }

  private deploy(args: string[], call: Call): WranglerResult {
    const vars = Object.fromEntries(
      args.flatMap((arg, i) =>
        args[i - 1] === "--var" ? [[arg.slice(0, arg.indexOf(":")), arg.slice(arg.indexOf(":") + 1)]] : [],
      ),
    );
    const converter = isConverter(args);
    if (args.includes("--dry-run")) {
      const bundle_size = converter ? this.converterBundleSize : this.bundleSize;
      return { ...ok(), outputs: [{ type: "deploy", version: 1, bundle_size }] };
    }
    if (converter) {
      if (this.buckets.size === 0) throw new Error("deploy before its resources exist");
      if (this.failConverterDeploy) {
        return failed(
          "A request to the Cloudflare API (/accounts/acc-1/workers/scripts/storefront-checkout-converter) failed.\n  Your Worker exceeded the size limit of 3 MiB. [code: 10027]",
          10027,
        );
      }
      this.converter = { vars, secrets: Object.keys(call.secretsFile?.secrets ?? {}) };
      // workers_dev = false and no route: the deploy has no URL.
      return { ...ok(), outputs: [{ type: "deploy", version: 1, targets: [], version_id: "c1" }] };
    }
    if (this.databases.length === 0 || this.buckets.size === 0) throw new Error("deploy before its resources exist");
    if (!this.converter) {
      return failed(
        "A request to the Cloudflare API (/accounts/acc-1/workers/scripts/storefront-checkout-api) failed.\n  Could not resolve service binding 'CONVERTER'. Target script 'storefront-checkout-converter' not found. Please verify the target script and try again. [code: 10143]",
        10143,
      );
    }
    const missingQueues = this.requiredQueues.filter((name) => !this.queues.has(name));
    if (missingQueues.length > 0) {
      return failed(
        `Queue "${missingQueues[0]}" does not exist. To create it, run: wrangler queues create ${missingQueues[0]}`,
      );
    }
    const secrets = new Set([...(this.worker?.secrets ?? []), ...Object.keys(call.secretsFile?.secrets ?? {})]);
    const missing = this.requiredSecrets.filter((name) => !secrets.has(name));
    if (missing.length > 0) return failed(`The following required secrets have not been set: ${missing.join(", ")}`);
    this.worker = { secrets, vars };
    return { ...ok(), outputs: [{ type: "deploy", version: 1, targets: [this.url], version_id: "v1" }] };
  }
}

/** Whether a deploy is the converter's: wrangler reads converter/wrangler.toml. */
function isConverter(args: string[]): boolean {
  return /(^|\/)converter\/wrangler\.toml$/.test(flagValue(args, "--config") ?? "");
}

function flagValue(args: string[], flag: string): string | undefined {
  const index = args.indexOf(flag);
  return index === -1 ? undefined : args[index + 1];
}
