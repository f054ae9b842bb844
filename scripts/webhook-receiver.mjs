// A local receiver of the API's events, as a store would run one: it verifies every request's Standard
// Webhooks signature with the store's secret and handles each `webhook-id` once. `npm run dev` starts it
// for the demo store (whose products' webhook_url point at it); the e2e tests start their own.
//
//   node scripts/webhook-receiver.mjs [--port 8788] [--secret whsec_...]
//
// Without --secret it uses the demo store's secret from fixtures/demo.json.
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";

/**
 * Starts a receiver on 127.0.0.1. `secrets` are tried in order (a store keeps the old one during a
 * rotation); `answer(delivery)` picks the response (default 204), may wait, and may return
 * `{status, headers}`. Every request is kept in `deliveries` with whether it verified.
 */
export async function startReceiver({ port = 0, secrets, answer, log = () => {} } = {}) {
  const deliveries = [];
  const seen = new Set();
  const server = createServer(async (request, response) => {
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    const body = Buffer.concat(chunks).toString("utf8");
    const headers = {
      "webhook-id": request.headers["webhook-id"],
      "webhook-timestamp": request.headers["webhook-timestamp"],
      "webhook-signature": request.headers["webhook-signature"],
    };
    let event = null;
    const verifiedWith = [];
    for (const secret of secrets) {
      try {
        event = new Webhook(secret).verify(body, headers);
        verifiedWith.push(secret);
      } catch {
        // Not signed with this one.
      }
    }
    const id = headers["webhook-id"];
    const duplicate = seen.has(id);
    const delivery = { id, headers, body, event, verifiedWith, duplicate, at: Date.now(), path: request.url };
    deliveries.push(delivery);
    if (!event) {
      log(`rejected ${id}: no signature verifies`);
      response.writeHead(400).end();
      return;
    }
    const chosen = (await answer?.(delivery)) ?? 204;
    const { status, headers: extra = {} } = typeof chosen === "number" ? { status: chosen } : chosen;
    if (status >= 200 && status < 300) seen.add(id);
    log(`${duplicate ? "duplicate" : "received"} ${id} ${event.type} → ${status}`);
    response.writeHead(status, extra).end();
  });
  // A port taken (another checkout's receiver) rejects here, for the caller to decide, rather than an
  // unhandled 'error' event ending the process.
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port: bound } = server.address();
  return {
    url: `http://127.0.0.1:${bound}`,
    deliveries,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The demo store's secret (the one the demo fixture sets). */
export async function demoWebhookSecret() {
  const demo = JSON.parse(await readFile(new URL("../fixtures/demo.json", import.meta.url), "utf8"));
  return demo.stores[0].webhook_secret;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const option = (name) => {
    const index = args.indexOf(name);
    return index === -1 ? undefined : args[index + 1];
  };
  const secret = option("--secret") ?? (await demoWebhookSecret());
  const receiver = await startReceiver({
    port: Number(option("--port") ?? 8788),
    secrets: [secret],
    log: (line) => console.log(line),
  });
  console.log(`webhook receiver listening at ${receiver.url}, verifying with the given secret`);
}
