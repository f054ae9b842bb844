import { availableParallelism } from "node:os";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { buildConverter, converterSettings } from "./scripts/lib/converter-build.mjs";
import { dropExpectedDisconnects } from "./test/setup/expected-disconnects.mjs";

// The secrets wrangler.toml requires, as wrangler looks for them: the plugin reads the configuration through
// wrangler, which warns about a required secret missing from .dev.vars, .env and the environment (it does not
// see the bindings below). The e2e project's `wrangler dev` inherits them too.
process.env.FILE_SIGNING_SECRET = "test-signing-secret";
process.env.PLATFORM_API_SECRET = "test-platform-secret";
// wrangler's informational lines ("Using secrets defined in process.env", once per test file) stay out of
// the test report; its warnings and errors still show. WRANGLER_LOG=log (or debug) brings them back.
process.env.WRANGLER_LOG ??= "warn";
// workerd's logs of the connections tests cut on purpose (test/setup/expected-disconnects.mjs says which)
// stay out of the report; any other line workerd writes, a real uncaught error first, still shows.
dropExpectedDisconnects(process.stdout);
dropExpectedDisconnects(process.stderr);

export default defineConfig({
  test: {
    // Two test files at a time on two cores (vitest's default keeps a core for itself there: one file at a
    // time). A file's work is mostly in other processes (workerd, wrangler, Chromium), and one file's
    // waits leave the cores to the other. From three cores up, vitest's default. The
    // e2e project runs its files one at a time (below).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        plugins: [
          cloudflareTest(async () => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              // The two local shards beside DB (wrangler.toml binds DB only; `npm run dev` binds the same two),
              // and a database the migrations never ran on: what plain `wrangler dev` on a fresh clone has.
              d1Databases: ["SHARD_0", "SHARD_1", "UNMIGRATED_DB"],
              bindings: {
                DEV_FIXTURES: "on",
                TEST_MIGRATIONS: await readD1Migrations("./migrations"),
              },
              // The converter Worker, as wrangler builds it for a deploy, behind the API's CONVERTER binding
              // (wrangler.toml): the API's tests convert through the same RPC as production, in another Worker.
              // Built once per run: the pool asks for these options each time it starts a workerd.
              workers: [{ ...converterSettings(), ...(await buildConverter()) }],
            },
          })),
        ],
        test: {
          name: "worker",
          // The files share the runtime: each of vitest's workers starts one workerd (with the converter beside
          // it) and runs file after file in it, as a deployed isolate serves request after request. Starting one
          // per file cost about 5 s each, most of the suite's time. So no file may count on empty databases or
          // on module state (the token cache, parsed configuration, leased limit slices) another file left:
          // each makes its own stores, tokens and products (test/support/factories.ts; the demo fixture under
          // new ids, test/support/demo.ts), and `npm test -- --sequence.shuffle` runs them in another order.
          isolate: false,
          include: ["test/**/*.test.ts"],
          // test/scripts/*.test.ts drive the deploy and token scripts in Node, test/setup/*.test.ts the test
          // runner's own helpers; test/scripts/worker/ runs here.
          exclude: ["test/e2e/**", "test/scripts/*.test.ts", "test/setup/*.test.ts"],
          setupFiles: ["./test/setup/apply-migrations.ts"],
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./converter/wrangler.toml" },
            // The converter binds no storage; its tests get a bucket only to read real R2 byte streams (the
            // API hands the converter R2 bodies through the binding).
            miniflare: { r2Buckets: ["BUCKET"] },
          }),
        ],
        test: {
          name: "converter",
          // The files share the runtime, as the API's above: the codec instances and their memory carry from
          // file to file, as they do in a deployed converter, and the memory tests hold whatever ran before.
          isolate: false,
          include: ["converter/test/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          isolate: true,
          // One file at a time, after the other projects: the files share one wrangler dev server, whose API
          // isolate runs one request at a time, and two of them at once (an AVIF of noise beside the
          // reference page's loads) made page loads miss their 10 s.
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
          globalSetup: ["./test/e2e/global-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "scripts",
          include: ["test/scripts/*.test.ts", "test/setup/*.test.ts"],
          environment: "node",
          // The scripts keep no module state, so their files share workers.
          isolate: false,
          // A few tests run the real wrangler CLI (help pages, a local D1 database), a second or two each.
          testTimeout: 60_000,
        },
      },
    ],
  },
});
