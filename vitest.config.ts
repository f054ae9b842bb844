import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest(async () => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              // A database the migrations never ran on: what plain `wrangler dev` on a fresh clone has.
              d1Databases: ["UNMIGRATED_DB"],
              bindings: {
                DEV_FIXTURES: "on",
                FILE_SIGNING_SECRET: "test-signing-secret",
                PLATFORM_API_SECRET: "test-platform-secret",
                TEST_MIGRATIONS: await readD1Migrations("./migrations"),
              },
            },
          })),
        ],
        test: {
          name: "worker",
          include: ["test/**/*.test.ts"],
          exclude: ["test/e2e/**"],
          setupFiles: ["./test/setup/apply-migrations.ts"],
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          globalSetup: ["./test/e2e/global-setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
