import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { deploy, queueNames, readConverterConfig, readWranglerConfig } from "../../scripts/deploy.mjs";
import { FakeCloudflare } from "./fake-cloudflare";

/* What the deploy tests (test/scripts/deploy*.test.ts) share: the project's configuration and a fake account. */

// The project's own wrangler.toml, read by wrangler: the names the script deploys are the real ones.
export const config = await readWranglerConfig();
export const converterConfig = await readConverterConfig();
export const databaseName = config.d1_databases.find((d) => d.binding === "DB")?.database_name ?? "";
export const bucketName = config.r2_buckets.find((b) => b.binding === "BUCKET")?.bucket_name ?? "";
export const queues = queueNames(config);
const scratch: string[] = [];

/** An account with nothing in it, whose deploys need the project's queues. */
export const emptyAccount = () => Object.assign(new FakeCloudflare(), { requiredQueues: queueNames(config) });

/** Removes the vars files of each test after it, in every test of the calling file. */
export function removeVarsFilesAfterEach() {
  afterEach(async () => {
    await Promise.all(scratch.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });
}

/** A fresh directory, removed after the test. */
export async function scratchDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
}

/** A vars file with `text` in a fresh directory. */
export async function varsFile(text: string): Promise<string> {
  const dir = await scratchDir("deploy-test-");
  const path = join(dir, "deploy.vars");
  await writeFile(path, text);
  return path;
}

export async function emptyVars() {
  return varsFile("# nothing to override\n");
}

/** A deploy to `account` with `env` as its environment; `printed` collects what it prints. */
export function deployWith(account: FakeCloudflare, env: Record<string, string> = {}) {
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
