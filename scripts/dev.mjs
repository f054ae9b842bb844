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
const seen = await whatTheTokenSees(server.url, token, demo.products);

console.log(`
Storefront Checkout API is running at ${server.url}/api/v1
  API reference:  ${server.url}/api/v1/docs
  Upload page:    ${server.url}/api/v1/_dev/upload?${new URLSearchParams({ token, store: store.id })}
  Database:       local D1 in ${persistTo ?? ".wrangler/state"}, every migration applied
  Demo data:      the demo token sees ${seen.products} products, ${seen.crossSells} cross-sells in their lists, ${seen.subscriptions} subscriptions, ${seen.events} events
                  (loaded: ${Object.entries(loaded)
                    .map(([name, count]) => `${count} ${name}`)
                    .join(", ")}; the second store is no demo token's)
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

/**
 * What the demo token is answered, asked of the running service: the first figures a newcomer reads are the
 * ones their requests will show (the fixture also holds a store no demo token may see).
 */
async function whatTheTokenSees(url, token, products) {
  const total = async (path) => {
    const response = await fetch(`${url}/api/v1${path}`, { headers: { Authorization: `Bearer ${token}` } });
    if (response.status === 404) return null;
    if (!response.ok) throw new Error(`GET ${path} answered ${response.status}`);
    return (await response.json()).pagination.total;
  };
  const lists = await Promise.all(
    products.map((candidate) => total(`/products/${candidate.id}/cross-sells?per_page=1`)),
  );
  const readable = lists.filter((listed) => listed !== null);
  return {
    products: readable.length,
    crossSells: readable.reduce((sum, listed) => sum + listed, 0),
    subscriptions: await total("/subscriptions?per_page=1"),
    events: await total("/webhook-events?per_page=1"),
  };
}
