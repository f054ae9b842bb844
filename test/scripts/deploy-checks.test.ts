import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  checkConverter,
  converterConfigPath,
  deploy,
  dryRun,
  judgeSize,
  parseDeployArgs,
  sizeLimits,
  usage,
  type WranglerConfig,
} from "../../scripts/deploy.mjs";
import { parseJsonOutput, ScriptError } from "../../scripts/lib/wrangler.mjs";
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
  scratchDir,
  varsFile,
} from "./deploy-setup";
import { FakeCloudflare } from "./fake-cloudflare";

removeVarsFilesAfterEach();

describe("npm run deploy stops early, saying what to do: the login, the account, R2", () => {
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
});

describe("npm run deploy stops early, saying what to do: a failed step, or a configuration that disagrees", () => {
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

describe("npm run deploy -- --dry-run (CI, no account): builds and budgets", () => {
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
});

describe("npm run deploy -- --dry-run (CI, no account): the output folder, limits and options", () => {
  it("--outdir DIR keeps each Worker's build in a folder of its own: DIR/api and DIR/converter", async () => {
    const account = new FakeCloudflare();
    const dir = await scratchDir("deploy-outdir-");
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
