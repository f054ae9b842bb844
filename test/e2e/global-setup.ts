import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
// @ts-expect-error: plain ESM helper shared with `npm run dev`, no type declarations.
import { freePort, loadFixture, startDevServer } from "../../scripts/dev-server.mjs";
import { devServerStderr } from "../setup/dev-server-stderr";

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
    /** The development upload page, served from another origin than the API. */
    uploadPageUrl: string;
  }
}

/** The Uppy files the page loads from `/vendor/uppy/`, as `npm install` copies them into the Worker's assets. */
const vendorFiles: Record<string, string> = {
  "uppy.min.mjs": "text/javascript; charset=utf-8",
  "uppy.min.css": "text/css; charset=utf-8",
};

/**
 * Serves the upload page on its own port, so the browser test crosses origins like a real shop, with the
 * page's Uppy at the same path the Worker's assets serve it (from the same npm package).
 */
async function servePage(port: number): Promise<Server> {
  const html = await readFile(new URL("../../src/dev/upload-page.html", import.meta.url), "utf8");
  const server = createServer((request, response) => {
    const vendor = /^\/vendor\/uppy\/([\w.-]+)$/.exec(new URL(request.url ?? "/", "http://page").pathname)?.[1];
    if (vendor === undefined) {
      response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      response.end(html);
      return;
    }
    const type = vendorFiles[vendor];
    if (!type) {
      response.writeHead(404).end();
      return;
    }
    readFile(new URL(`../../node_modules/uppy/dist/${vendor}`, import.meta.url)).then(
      (body) => response.writeHead(200, { "Content-Type": type }).end(body),
      () => response.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return server;
}

/** Starts `wrangler dev` on a free port with a throwaway persist directory and the demo fixture. */
export default async function setup(project: TestProject) {
  const persistTo = await mkdtemp(join(tmpdir(), "checkout-e2e-"));
  const pagePort = await freePort();
  const pageOrigin = `http://127.0.0.1:${pagePort}`;
  const page = await servePage(pagePort);
  const stderr = await devServerStderr(persistTo);
  const server = await startDevServer({
    port: await freePort(),
    persistTo,
    // The load test of concurrent completes makes more calls a minute than the default limits allow; the
    // limits themselves are tested inside workerd (test/http/rate-limit.test.ts, test/uploads).
    extraArgs: [
      "--var",
      `CORS_ORIGINS:${pageOrigin}`,
      "--var",
      "COMPLETE_LIMIT_PER_MINUTE:100000",
      "--var",
      "PUT_LIMIT_PER_MINUTE:100000",
      "--var",
      "API_LIMIT_PER_MINUTE:100000",
      // Event retries within seconds and a short attempt timeout, so test/e2e/webhooks.test.ts can watch a
      // whole schedule against its slow and failing receivers.
      "--var",
      "WEBHOOK_RETRY_SCHEDULE:1,1,1",
      "--var",
      "WEBHOOK_TIMEOUT_MS:1000",
      // The tests run the cron handler themselves; without this, wrangler prints a seven-line warning that
      // scheduled Workers are not triggered locally, and how to trigger them.
      "--test-scheduled",
    ],
    stdio: ["ignore", "ignore", stderr.stream],
  });
  const demo = JSON.parse(await readFile(new URL("../../fixtures/demo.json", import.meta.url), "utf8"));
  await loadFixture(server.url, demo);
  project.provide("baseUrl", server.url);
  project.provide("uploadPageUrl", pageOrigin);
  return async () => {
    stderr.stopping();
    await server.stop();
    stderr.close();
    await new Promise((resolve) => page.close(resolve));
    await rm(persistTo, { recursive: true, force: true });
  };
}
