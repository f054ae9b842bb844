import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import {
  bucketNames,
  checkDeployVars,
  converterConfigPath,
  deploy,
  parseDeployArgs,
  parseVarsFile,
  planSecrets,
} from "../../scripts/deploy.mjs";
import { ScriptError } from "../../scripts/lib/wrangler.mjs";
import {
  bucketName,
  config,
  converterConfig,
  databaseName,
  deployWith,
  emptyAccount,
  emptyVars,
  queues,
  removeVarsFilesAfterEach,
  varsFile,
} from "./deploy-setup";
import { FakeCloudflare } from "./fake-cloudflare";

removeVarsFilesAfterEach();

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
