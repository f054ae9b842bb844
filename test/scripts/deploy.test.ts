import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  bucketNames,
  checkConverter,
  checkDeployVars,
  converterConfigPath,
  deploy,
  dryRun,
  judgeSize,
  parseDeployArgs,
  parseVarsFile,
  planSecrets,
  queueNames,
  readConverterConfig,
  readWranglerConfig,
  sizeLimits,
  usage,
  type WranglerConfig,
} from "../../scripts/deploy.mjs";
import { parseJsonOutput, ScriptError } from "../../scripts/lib/wrangler.mjs";
import { FakeCloudflare } from "./fake-cloudflare";

let config: WranglerConfig;
let converterConfig: WranglerConfig;
let databaseName: string;
let bucketName: string;
let queues: string[];
const scratch: string[] = [];

beforeAll(async () => {
  // The project's own wrangler.toml, read by wrangler: the names the script deploys are the real ones.
  config = await readWranglerConfig();
  converterConfig = await readConverterConfig();
  databaseName = config.d1_databases.find((d) => d.binding === "DB")?.database_name ?? "";
  bucketName = config.r2_buckets.find((b) => b.binding === "BUCKET")?.bucket_name ?? "";
  queues = queueNames(config);
});

/** An account with nothing in it, whose deploys need the project's queues. */
const emptyAccount = () => Object.assign(new FakeCloudflare(), { requiredQueues: queueNames(config) });

afterEach(async () => {
  await Promise.all(scratch.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A vars file with `text` in a fresh directory. */
async function varsFile(text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "deploy-test-"));
  scratch.push(dir);
  const path = join(dir, "deploy.vars");
  await writeFile(path, text);
  return path;
}

async function emptyVars() {
  return varsFile("# nothing to override\n");
}

function deployWith(account: FakeCloudflare, env: Record<string, string> = {}) {
  const printed: string[] = [];
  return {
    printed,
    run: async (options: { varsFile?: string; shards?: number } = {}) =>
      deploy(
        { varsFile: options.varsFile ?? (await emptyVars()), shards: options.shards },
        { run: account.run, print: (t) => printed.push(t), env, config, converterConfig },
      ),
  };
}

describe("npm run deploy on an empty account", () => {
  it("creates the database, the bucket and the queues, migrates before it deploys, generates both secrets and prints the URL", async () => {
    const account = emptyAccount();
    const { run, printed } = deployWith(account);
    const result = await run();

    expect(account.commandLines().map((line) => line.split(" ").slice(0, 3).join(" "))).toEqual([
      "whoami --json",
      "d1 list --json",
      `d1 create ${databaseName}`,
      "d1 list --json",
      "r2 bucket list",
      `r2 bucket create`,
      ...queues.flatMap((queue) => [`queues info ${queue}`, `queues create ${queue}`]),
      "secret list --format",
      "d1 migrations apply",
      `deploy --config ${converterConfigPath}`,
      expect.stringMatching(/^deploy --secrets-file /),
    ]);
    expect(account.databases.map((d) => d.name)).toEqual([databaseName]);
    expect([...account.buckets]).toEqual([bucketName]);
    expect([...account.queues]).toEqual(queues);
    expect(result.queues.every((queue) => queue.created)).toBe(true);
    expect(result.database).toMatchObject({ name: databaseName, created: true, id: account.databases[0]?.uuid });
    expect(result.secrets.generated).toEqual(["FILE_SIGNING_SECRET", "PLATFORM_API_SECRET"]);
    expect(result.url).toBe(account.url);
    const output = printed.join("\n");
    expect(output).toContain(`${account.url}/api/v1`);
    expect(output).toContain("npm run token:create");
  });

  it("hands the generated secrets to the first deploy in a file only the user can read, removed afterwards, and prints each once", async () => {
    const account = new FakeCloudflare();
    const { run, printed } = deployWith(account);
    await run();

    const deployCall = account.deployOf("api");
    expect(deployCall?.secretsFile?.mode).toBe(0o600);
    const secrets = deployCall?.secretsFile?.secrets ?? {};
    expect(Object.keys(secrets).sort()).toEqual(["FILE_SIGNING_SECRET", "PLATFORM_API_SECRET"]);
    for (const value of Object.values(secrets)) expect(value).toMatch(/^[0-9a-f]{64}$/);
    expect(secrets.FILE_SIGNING_SECRET).not.toBe(secrets.PLATFORM_API_SECRET);
    expect(existsSync(deployCall?.secretsFile?.path ?? "")).toBe(false);
    const output = printed.join("\n");
    for (const [name, value] of Object.entries(secrets)) {
      expect(output.split(`${name}=${value}`).length - 1, name).toBe(1);
    }
    // Nothing but the deploy ever sees a secret: no other call carries one.
    const others = account.calls.filter((call) => call !== deployCall).map((call) => call.args.join(" "));
    for (const value of Object.values(secrets)) expect(others.join("\n")).not.toContain(value);
  });

  it("deploys the converter Worker first (the API's CONVERTER binding needs it), from converter/wrangler.toml, with no variable and no secret", async () => {
    const account = emptyAccount();
    const { run, printed } = deployWith(account);
    const result = await run({ varsFile: await varsFile("CORS_ORIGINS=https://shop.example\n") });

    const deploys = account.calls.filter((call) => call.args[0] === "deploy");
    expect(deploys).toEqual([account.deployOf("converter"), account.deployOf("api")]);
    expect(account.deployOf("converter")).toMatchObject({
      args: ["deploy", "--config", converterConfigPath],
      mode: "terminal",
    });
    expect(account.converter).toEqual({ vars: {}, secrets: [] });
    expect(account.worker?.vars).toEqual({ CORS_ORIGINS: "https://shop.example" });
    expect(result.converter).toBe(converterConfig.name);
    expect(printed.join("\n")).toContain(`Converter:  ${converterConfig.name}`);
  });

  it("applies the migrations non-interactively with their output shown, and lets wrangler own the terminal for the deploy", async () => {
    const account = new FakeCloudflare();
    await deployWith(account).run();
    expect(account.calls.find((call) => call.args[1] === "migrations")).toMatchObject({
      args: ["d1", "migrations", "apply", "DB", "--remote"],
      mode: "show",
    });
    expect(account.deployOf("api")?.mode).toBe("terminal");
  });
});

describe("npm run deploy with shards (docs/scaling.md)", () => {
  it("--shards 2 creates and migrates both shard databases and deploys with their bindings", async () => {
    const account = emptyAccount();
    const configs: string[] = [];
    const run = account.run;
    account.run = async (args, options) => {
      const config = args[args.indexOf("--config") + 1];
      // The converter's own configuration binds no database: only the API's is sharded.
      if (args.includes("--config") && config && config !== converterConfigPath)
        configs.push(await readFile(config, "utf8"));
      return run(args, options);
    };
    const result = await deployWith(account).run({ shards: 2 });
    expect(account.databases.map((d) => d.name)).toEqual([
      databaseName,
      `${databaseName}-shard-0`,
      `${databaseName}-shard-1`,
    ]);
    expect(result.shards.map((shard) => [shard.binding, shard.name, shard.created])).toEqual([
      ["SHARD_0", `${databaseName}-shard-0`, true],
      ["SHARD_1", `${databaseName}-shard-1`, true],
    ]);
    const migrations = account.calls.filter((call) => call.args[1] === "migrations").map((call) => call.args[3]);
    expect(migrations).toEqual(["DB", "SHARD_0", "SHARD_1"]);
    const deployCall = account.deployOf("api");
    expect(deployCall?.args).toContain("--config");
    // Every migration and the deploy read the same configuration: wrangler.toml with both shards bound.
    expect(configs).toHaveLength(4);
    for (const text of configs) {
      expect(text).toContain(`binding = "SHARD_1"\ndatabase_name = "${databaseName}-shard-1"`);
      expect(text).toContain('binding = "DB"');
    }
    expect(existsSync(deployCall?.args[deployCall.args.indexOf("--config") + 1] ?? "")).toBe(false);
  });

  it("keeps the shards the account has when run without --shards, and grows to more when told", async () => {
    const account = new FakeCloudflare().deployedBefore(databaseName, bucketName, queues);
    account.databases.push({ name: `${databaseName}-shard-0`, uuid: "aaaaaaaa-2222-4333-8444-555555555555" });
    const kept = await deployWith(account).run();
    expect(kept.shards.map((shard) => [shard.binding, shard.created])).toEqual([["SHARD_0", false]]);
    const grown = await deployWith(account).run({ shards: 3 });
    expect(grown.shards.map((shard) => [shard.binding, shard.created])).toEqual([
      ["SHARD_0", false],
      ["SHARD_1", true],
      ["SHARD_2", true],
    ]);
  });

  it("--shards takes a whole number", () => {
    expect(parseDeployArgs(["--shards", "4"])).toMatchObject({ shards: 4 });
    expect(() => parseDeployArgs(["--shards", "two"])).toThrow(ScriptError);
  });
});

describe("npm run deploy again", () => {
  it("finds the database and the bucket, keeps the Worker's secrets and sends none", async () => {
    const account = new FakeCloudflare().deployedBefore(databaseName, bucketName, queues);
    const { run, printed } = deployWith(account);
    const result = await run();

    expect(account.commandLines().some((line) => line.includes("create"))).toBe(false);
    expect(result.database).toMatchObject({ created: false, id: "11111111-2222-4333-8444-555555555555" });
    expect(result.bucket.created).toBe(false);
    expect(result.secrets).toEqual({ set: [], kept: ["FILE_SIGNING_SECRET", "PLATFORM_API_SECRET"], generated: [] });
    const deployCall = account.deployOf("api");
    expect(deployCall?.args).toEqual(["deploy"]);
    expect(printed.join("\n")).not.toContain("Generated secrets");
    expect(account.migrationsApplied).toBe(1);
  });

  it("sets a secret given in the environment (a rotation) and keeps the other", async () => {
    const account = new FakeCloudflare().deployedBefore(databaseName, bucketName, queues);
    const result = await deployWith(account, { PLATFORM_API_SECRET: "shared-with-the-platform" }).run();
    const deployCall = account.deployOf("api");
    expect(deployCall?.secretsFile?.secrets).toEqual({ PLATFORM_API_SECRET: "shared-with-the-platform" });
    expect(result.secrets).toEqual({ set: ["PLATFORM_API_SECRET"], kept: ["FILE_SIGNING_SECRET"], generated: [] });
  });

  it("passes every deploy.vars line to wrangler as --var NAME:VALUE, values with colons and spaces intact", async () => {
    const account = new FakeCloudflare().deployedBefore(databaseName, bucketName, queues);
    const file = await varsFile(
      [
        "# this deployment",
        "PLATFORM_API_URL=https://platform.example.com:8443/api",
        'CORS_ORIGINS="https://a.example, https://b.example"',
        "API_LIMIT_PER_MINUTE = 1200",
        "",
      ].join("\n"),
    );
    await deployWith(account).run({ varsFile: file });
    expect(account.worker?.vars).toEqual({
      PLATFORM_API_URL: "https://platform.example.com:8443/api",
      CORS_ORIGINS: "https://a.example, https://b.example",
      API_LIMIT_PER_MINUTE: "1200",
    });
  });
});

describe("the queues", () => {
  it("are the webhook queue and its dead-letter queue, read from wrangler.toml", () => {
    expect(queues).toEqual(["storefront-checkout-webhooks", "storefront-checkout-webhooks-dlq"]);
  });

  it("that exist are found, and only a missing one is created", async () => {
    const account = new FakeCloudflare().deployedBefore(databaseName, bucketName, queues.slice(0, 1));
    account.requiredQueues = queues;
    const result = await deployWith(account).run();
    expect(result.queues).toEqual(queues.map((name, index) => ({ name, created: index > 0 })));
    expect(account.commandLines().filter((line) => line.startsWith("queues create"))).toEqual([
      `queues create ${queues[1]}`,
    ]);
  });

  it("a lookup that fails for another reason stops before the deploy, with wrangler's message", async () => {
    const account = new FakeCloudflare().deployedBefore(databaseName, bucketName, queues);
    const run: typeof account.run = async (args, options) =>
      args[0] === "queues"
        ? { code: 1, stdout: "", stderr: "✘ [ERROR] Authentication error [code: 10000]", outputs: [] }
        : account.run(args, options);
    const deploying = deploy({ varsFile: await emptyVars() }, { run, print: () => {}, env: {}, config });
    await expect(deploying).rejects.toThrow(
      /Looking up queue storefront-checkout-webhooks failed:\n.*Authentication error/s,
    );
    expect(account.commandLines().some((line) => line.startsWith("deploy"))).toBe(false);
  });
});

describe("the R2 bucket", () => {
  it("is read from wrangler's bucket list, coloured or not", () => {
    const listing =
      "Listing buckets...\n\x1b[37mname:\x1b[39m           \x1b[90mmedia-a\x1b[39m\ncreation_date:  2026-01-01\n\nname:           media-b\ncreation_date:  2026-01-02\n";
    expect(bucketNames(listing)).toEqual(["media-a", "media-b"]);
  });

  it("that another deploy created meanwhile (create answers 10004) counts as found", async () => {
    const account = new FakeCloudflare().deployedBefore(databaseName, bucketName, queues);
    const run = account.run;
    // The list does not show it yet; the create then finds it there.
    account.run = async (args, options) =>
      args.join(" ") === "r2 bucket list"
        ? { code: 0, stdout: "Listing buckets...\n", stderr: "", outputs: [] }
        : run(args, options);
    const result = await deployWith(account).run();
    expect(result.bucket).toEqual({ name: bucketName, created: false });
    expect([...account.buckets]).toEqual([bucketName]);
  });
});

describe("npm run deploy stops early, saying what to do", () => {
  it("when not logged in: names `npx wrangler login` and touches nothing", async () => {
    const account = new FakeCloudflare();
    account.loggedIn = false;
    await expect(deployWith(account).run()).rejects.toThrow(/npx wrangler login/);
    expect(account.commandLines()).toEqual(["whoami --json"]);
  });

  it("when wrangler cannot check the login (no network): shows wrangler's reason, not a login hint", async () => {
    const account = new FakeCloudflare();
    const run = account.run;
    account.run = async (args, options) =>
      args[0] === "whoami"
        ? { code: 1, stdout: "", stderr: "✘ [ERROR] Unable to resolve Cloudflare's API hostname", outputs: [] }
        : run(args, options);
    const attempt = deployWith(account).run();
    await expect(attempt).rejects.toThrow(
      /Checking the Cloudflare login failed:\n.*Unable to resolve Cloudflare's API hostname/,
    );
    await expect(attempt).rejects.not.toThrow(/wrangler login/);
  });

  it("when the login has several accounts and CLOUDFLARE_ACCOUNT_ID is unset: lists them and touches nothing", async () => {
    const account = new FakeCloudflare();
    account.accounts.push({ id: "acc-2", name: "Agency" });
    await expect(deployWith(account).run()).rejects.toThrow(/CLOUDFLARE_ACCOUNT_ID=acc-2 {2}\(Agency\)/);
    expect(account.commandLines()).toEqual(["whoami --json"]);
    await expect(deployWith(account, { CLOUDFLARE_ACCOUNT_ID: "acc-2" }).run()).resolves.toBeDefined();
  });

  it("when R2 was never enabled on the account: says to enable it in the dashboard, before migrating or deploying", async () => {
    const account = new FakeCloudflare();
    account.r2Enabled = false;
    await expect(deployWith(account).run()).rejects.toThrow(
      /R2 is not enabled on this account. Enable it once in the Cloudflare dashboard/,
    );
    expect(account.calls.some((call) => call.args[1] === "migrations" || call.args[0] === "deploy")).toBe(false);
  });

  it("when a migration fails: neither Worker is deployed", async () => {
    const account = new FakeCloudflare();
    account.failMigrations = true;
    await expect(deployWith(account).run()).rejects.toThrow(/Applying the D1 migrations failed/);
    expect(account.calls.some((call) => call.args[0] === "deploy")).toBe(false);
    expect(account.worker).toBeUndefined();
    expect(account.converter).toBeUndefined();
  });

  it("when the converter's deploy fails: the API Worker is not deployed, and the message says so", async () => {
    for (const account of [emptyAccount(), new FakeCloudflare().deployedBefore(databaseName, bucketName, queues)]) {
      const before = account.worker;
      account.failConverterDeploy = true;
      await expect(deployWith(account).run()).rejects.toThrow(
        /Deploying the converter Worker \(storefront-checkout-converter\) failed \(wrangler's message above\)\. The API Worker \(storefront-checkout-api\) was not deployed/,
      );
      expect(account.deployOf("converter")).toBeDefined();
      expect(account.deployOf("api")).toBeUndefined();
      expect(account.worker).toBe(before);
    }
  });

  it("when the two Workers' configurations disagree (the CONVERTER binding, the converter's bucket, a variable or secret of the converter): before any call", async () => {
    const converterBound = (service: string) => ({
      ...config,
      services: [{ binding: "CONVERTER", service, entrypoint: "Converter" }],
    });
    const cases: [WranglerConfig, WranglerConfig, RegExp][] = [
      [converterBound("another-converter"), converterConfig, /CONVERTER binding names the Worker another-converter/],
      [{ ...config, services: [] }, converterConfig, /wrangler\.toml has no services binding CONVERTER/],
      [
        config,
        { ...converterConfig, r2_buckets: [{ binding: "BUCKET", bucket_name: "other-media" }] },
        /binds the R2 bucket other-media/,
      ],
      [config, { ...converterConfig, vars: { LEVEL: "" } }, /declares variables \(LEVEL\)/],
      [config, { ...converterConfig, secrets: { required: ["KEY"] } }, /requires secrets \(KEY\)/],
    ];
    for (const [apiConfig, converter, message] of cases) {
      const account = new FakeCloudflare();
      const dependencies = {
        run: account.run,
        print: () => {},
        env: {},
        config: apiConfig,
        converterConfig: converter,
      };
      await expect(deploy({ varsFile: await emptyVars() }, dependencies)).rejects.toThrow(message);
      await expect(dryRun({ varsFile: await emptyVars() }, dependencies)).rejects.toThrow(message);
      expect(account.calls).toEqual([]);
    }
    expect(checkConverter(config, converterConfig)).toEqual({ name: "storefront-checkout-converter" });
  });

  it("when deploy.vars names something the Worker does not read, a secret, or DEV_FIXTURES=on: before any call", async () => {
    for (const [line, message] of [
      ["PLATFORM_API_ULR=https://x.example", /PLATFORM_API_ULR is not a variable of the Worker/],
      ["FILE_SIGNING_SECRET=abc", /FILE_SIGNING_SECRET is a secret/],
      ["DEV_FIXTURES=on", /DEV_FIXTURES=on opens \/api\/v1\/_dev\/fixtures/],
      ["this is not a line", /deploy.vars:1: expected NAME=value/],
    ] as const) {
      const account = new FakeCloudflare();
      await expect(deployWith(account).run({ varsFile: await varsFile(`${line}\n`) })).rejects.toThrow(message);
      expect(account.calls, line).toEqual([]);
    }
  });
});

describe("deploy.vars", () => {
  it("parses NAME=value lines, skipping comments and blank lines and unwrapping one pair of quotes", () => {
    expect(parseVarsFile("# c\n\nA=1\nB = 'two words'\nC=\"x=y\"\nD=\n")).toEqual([
      ["A", "1"],
      ["B", "two words"],
      ["C", "x=y"],
      ["D", ""],
    ]);
  });

  it("refuses a name set twice", () => {
    expect(() =>
      checkDeployVars(
        [
          ["CORS_ORIGINS", "a"],
          ["CORS_ORIGINS", "b"],
        ],
        config,
      ),
    ).toThrow(/CORS_ORIGINS is set twice/);
  });

  it("the committed deploy.vars.example is a valid file with nothing set (copying it changes no value)", async () => {
    const { readFile } = await import("node:fs/promises");
    const text = await readFile(new URL("../../deploy.vars.example", import.meta.url), "utf8");
    expect(parseVarsFile(text)).toEqual([]);
    // Every name it mentions is one the Worker reads.
    const mentioned = [...text.matchAll(/^# ([A-Z][A-Z0-9_]+)=/gm)].map((match) => match[1] ?? "");
    expect(mentioned.length).toBeGreaterThan(0);
    expect(() =>
      checkDeployVars(
        mentioned.map((name) => [name, "x"]),
        config,
      ),
    ).not.toThrow();
  });
});

describe("secrets plan", () => {
  it("sets what the environment gives, keeps what the Worker has, generates the rest; an empty variable counts as unset", () => {
    let n = 0;
    const plan = planSecrets(
      ["A", "B", "C", "D"],
      ["B", "C"],
      { A: "from-env", C: "rotated", D: "" },
      () => `generated-${++n}`,
    );
    expect(plan).toEqual({ set: { A: "from-env", C: "rotated", D: "generated-1" }, kept: ["B"], generated: ["D"] });
  });
});

describe("npm run deploy -- --dry-run (CI, no account)", () => {
  it("builds both Workers, the converter first, the API with the same variables and a secrets file, calls nothing else, and passes within the limits", async () => {
    const account = new FakeCloudflare();
    const printed: string[] = [];
    const file = await varsFile("CORS_ORIGINS=https://shop.example\n");
    const result = await dryRun(
      { varsFile: file },
      { run: account.run, print: (t) => printed.push(t), config, converterConfig },
    );
    expect(account.calls).toEqual([account.deployOf("converter"), account.deployOf("api")]);
    const api = account.deployOf("api");
    expect(api?.args.slice(0, 3)).toEqual(["deploy", "--dry-run", "--outdir"]);
    expect(api?.args).toContain("CORS_ORIGINS:https://shop.example");
    expect(Object.keys(api?.secretsFile?.secrets ?? {}).sort()).toEqual(["FILE_SIGNING_SECRET", "PLATFORM_API_SECRET"]);
    // The converter has no variables and no secrets: its build is given none.
    const converter = account.deployOf("converter");
    expect(converter?.args).toEqual([
      "deploy",
      "--dry-run",
      "--outdir",
      expect.stringMatching(/\/converter$/),
      "--config",
      converterConfigPath,
    ]);
    expect(result.ok).toBe(true);
    expect(result.api.ok && result.converter.ok).toBe(true);
    expect(result.api.bundle).toEqual(account.bundleSize);
    expect(result.converter.bundle).toEqual(account.converterBundleSize);
    const output = printed.join("\n");
    expect(output).toMatch(/API Worker \(storefront-checkout-api\) upload[^\n]*\n[^\n]*\n +gzip +307\.2 KiB/);
    expect(output).toMatch(
      /Converter Worker \(storefront-checkout-converter\) upload[^\n]*\n[^\n]*\n +gzip +841\.8 KiB/,
    );
    expect(output.indexOf("Converter Worker")).toBeLessThan(output.indexOf("API Worker"));
    expect(output).toContain("Both Workers are within the limits.");
  });

  it("the converter's report says nothing of static assets (it has none); the API's counts public/", async () => {
    const account = new FakeCloudflare();
    const result = await dryRun(
      { varsFile: await emptyVars() },
      { run: account.run, print: () => {}, config, converterConfig },
    );
    expect(result.converter.lines.join("\n")).not.toMatch(/public\/|assets/);
    expect(result.api.lines.join("\n")).toMatch(/Static assets \(public\/[^)]*\): \d+ files/);
  });

  it("fails when either Worker is above its budget, naming which, after reporting both", async () => {
    for (const [large, name] of [
      [
        "bundleSize",
        /the API Worker \(storefront-checkout-api\): the gzip size is above the project's 3\.00 MiB budget/,
      ],
      [
        "converterBundleSize",
        /the converter Worker \(storefront-checkout-converter\): the gzip size is above the project's 3\.00 MiB budget/,
      ],
    ] as const) {
      const account = new FakeCloudflare();
      account[large] = { raw_bytes: 9_000_000, gzip_bytes: sizeLimits.gzipBudgetBytes + 1 };
      const printed: string[] = [];
      await expect(
        dryRun(
          { varsFile: await emptyVars() },
          { run: account.run, print: (t) => printed.push(t), config, converterConfig },
        ),
      ).rejects.toThrow(name);
      expect(printed.join("\n")).toMatch(/Converter Worker[\s\S]*API Worker/);
      expect(printed.join("\n")).not.toContain("within the limits");
    }
  });

  it("--outdir DIR keeps each Worker's build in a folder of its own: DIR/api and DIR/converter", async () => {
    const account = new FakeCloudflare();
    const dir = await mkdtemp(join(tmpdir(), "deploy-outdir-"));
    scratch.push(dir);
    await dryRun(
      { varsFile: await emptyVars(), outdir: dir },
      { run: account.run, print: () => {}, config, converterConfig },
    );
    const outdir = (call: { args: string[] } | undefined) => call?.args[call.args.indexOf("--outdir") + 1];
    expect(outdir(account.deployOf("api"))).toBe(join(dir, "api"));
    expect(outdir(account.deployOf("converter"))).toBe(join(dir, "converter"));
    expect(existsSync(dir)).toBe(true);
  });

  it("above the 64 MiB upload limit: the verdict names it", () => {
    const verdict = judgeSize({ raw_bytes: sizeLimits.uncompressedBytes + 1, gzip_bytes: 1000 }, []);
    expect(verdict.ok).toBe(false);
    expect(verdict.problems.join()).toMatch(/above Cloudflare's 64\.00 MiB limit/);
  });

  it("judges static assets by their own limits, not the Worker's", () => {
    const big = { path: "public/vendor/huge.js", size: 26 * 1024 * 1024 };
    const verdict = judgeSize({ raw_bytes: 1000, gzip_bytes: 500 }, [big]);
    expect(verdict.problems).toEqual(["public/vendor/huge.js is above the 25.00 MiB asset limit"]);
    expect(judgeSize({ raw_bytes: 1000, gzip_bytes: 500 }, [{ ...big, size: 24 * 1024 * 1024 }]).ok).toBe(true);
  });

  it("--outdir is only accepted with --dry-run; unknown options are refused with the usage", () => {
    expect(parseDeployArgs(["--dry-run", "--outdir", "dist"])).toMatchObject({ dryRun: true, outdir: "dist" });
    expect(() => parseDeployArgs(["--outdir", "dist"])).toThrow(ScriptError);
    expect(() => parseDeployArgs(["--force"])).toThrow(/Usage: npm run deploy/);
    expect(usage).toMatch(/DIR\/api and DIR\/converter/);
  });
});

describe("wrangler's JSON answers", () => {
  it("are read past a notice before or after them, and a missing one is named", () => {
    expect(parseJsonOutput('▲ [WARNING] update available\n[{"name":"a"}]\n🪵 Logs were written\n')).toEqual([
      { name: "a" },
    ]);
    expect(parseJsonOutput('{"loggedIn":true}')).toEqual({ loggedIn: true });
    expect(() => parseJsonOutput("✘ [ERROR] nothing here")).toThrow(/no JSON where one was expected/);
  });
});
