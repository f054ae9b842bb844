// `npm run dev`: local D1 migrations, `wrangler dev` with DEV_FIXTURES=on, the demo fixture loaded,
// and what a new user needs to call the API printed. Arguments after `--` go to `wrangler dev`.
import { readFile } from "node:fs/promises";
import { loadFixture, startDevServer } from "./dev-server.mjs";
import { startReceiver } from "./webhook-receiver.mjs";

function takeOption(args, name) {
  const index = args.findIndex((arg) => arg === name || arg.startsWith(`${name}=`));
  if (index === -1) return undefined;
  const [arg] = args.splice(index, 1);
  if (arg.includes("=")) return arg.slice(name.length + 1);
  const [value] = args.splice(index, 1);
  return value;
}

const passThrough = process.argv.slice(2);
const port = Number(takeOption(passThrough, "--port") ?? 8787);
const persistTo = takeOption(passThrough, "--persist-to");
const demo = JSON.parse(await readFile(new URL("../fixtures/demo.json", import.meta.url), "utf8"));

let server = null;
// Whatever ends this process ends both Workers with it: a crash here never leaves them serving.
for (const event of ["uncaughtException", "unhandledRejection"]) {
  process.on(event, async (error) => {
    console.error(error);
    await server?.stop();
    process.exit(1);
  });
}

server = await startDevServer({
  port,
  persistTo,
  extraArgs: passThrough,
  stdio: ["ignore", "inherit", "inherit"],
});
const loaded = await loadFixture(server.url, demo);
const store = demo.stores[0];
// The demo products' webhook_url point here; each event is printed once verified with the store's secret.
const hookUrl = new URL(demo.products[0].webhook_url);
const receiver = await startReceiver({
  port: Number(hookUrl.port),
  secrets: [store.webhook_secret],
  log: (line) => console.log(`[webhooks] ${line}`),
}).catch((error) => {
  console.warn(`[webhooks] no local receiver (${error.message}); events to ${hookUrl} will be retried`);
  return null;
});
const token = demo.tokens[0].token;
const product = demo.products.find((candidate) => candidate.status === "published");

console.log(`
Storefront Checkout API is running at ${server.url}/api/v1
  API reference:  ${server.url}/api/v1/docs
  Upload page:    ${server.url}/api/v1/_dev/upload?${new URLSearchParams({ token, store: store.id })}
  Database:       local D1 in ${persistTo ?? ".wrangler/state"}, every migration applied
  Demo data:      ${Object.entries(loaded)
    .map(([name, count]) => `${count} ${name}`)
    .join(", ")}
  Demo store id:  ${store.id} (${store.name})
  Demo token:     ${token}

Try:
  curl -s ${server.url}/api/v1/products/${product.id} -H 'Authorization: Bearer ${token}'
  curl -s '${server.url}/api/v1/products/${product.id}/cross-sells?per_page=5' -H 'Authorization: Bearer ${token}' -H 'X-Service-Store: ${store.id}'
  curl -s -X POST ${server.url}/api/v1/products/${product.id}/publish -H 'Authorization: Bearer ${token}'
      (the event it makes is printed below as [webhooks] once the receiver at ${receiver?.url ?? hookUrl.origin} verified it)
  curl -s ${server.url}/api/v1/webhook-events -H 'Authorization: Bearer ${token}' -H 'X-Service-Store: ${store.id}'

Press Ctrl+C to stop.
`);

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, async () => {
    await server.stop();
    process.exit(0);
  });
}
// Either Worker's process gone ends the service (the other is stopped with it).
for (const worker of [server.child, server.converter]) worker.on("exit", (code) => process.exit(code ?? 0));
