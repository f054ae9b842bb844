import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
// @ts-expect-error: plain ESM helper shared with `npm run dev`, no type declarations.
import { freePort, loadFixture, startDevServer } from "../../scripts/dev-server.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
  }
}

/** Starts `wrangler dev` on a free port with a throwaway persist directory and the demo fixture. */
export default async function setup(project: TestProject) {
  const persistTo = await mkdtemp(join(tmpdir(), "checkout-e2e-"));
  const port = await freePort();
  const server = await startDevServer({ port, persistTo, stdio: ["ignore", "ignore", "inherit"] });
  const demo = JSON.parse(await readFile(new URL("../../fixtures/demo.json", import.meta.url), "utf8"));
  await loadFixture(server.url, demo);
  project.provide("baseUrl", server.url);
  return async () => {
    await server.stop();
    await rm(persistTo, { recursive: true, force: true });
  };
}
