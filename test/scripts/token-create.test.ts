import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain ESM helper shared with `npm run dev`, no type declarations.
import { applyLocalMigrations } from "../../scripts/dev-server.mjs";
import { ABILITIES, tokenHash } from "../../scripts/lib/api-token.mjs";
import { shardedConfigPath } from "../../scripts/lib/shards.mjs";
import { runWrangler, type WranglerResult } from "../../scripts/lib/wrangler.mjs";
import { createToken, main, parseTokenArgs, type TokenOptions } from "../../scripts/token-create.mjs";

const storeA = "5f0c6a1e-2b7d-4c9a-9e3f-1a2b3c4d5e6f";
const storeB = "9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d";

/** The part of wrangler.toml createToken reads: the global database's name. */
const config = { d1_databases: [{ binding: "DB", database_name: "storefront-checkout" }] };

/**
 * An account behind `wrangler d1 list` and `d1 execute`: `shards` databases named like the global one with
 * `-shard-<n>`, the store lookup answered from `stores`, the directory's counts from `placed`; records the calls.
 */
function fakeDatabase(stores: string[] = [], { shards = 0, placed = [] as { shard: string; stores: number }[] } = {}) {
  const calls: string[][] = [];
  const run = async (args: string[]): Promise<WranglerResult> => {
    calls.push(args);
    if (args[1] === "list") {
      const names = [
        "storefront-checkout",
        ...Array.from({ length: shards }, (_, n) => `storefront-checkout-shard-${n}`),
      ];
      return { code: 0, stdout: JSON.stringify(names.map((name) => ({ name, uuid: name }))), stderr: "", outputs: [] };
    }
    const sql = args[args.indexOf("--command") + 1] ?? "";
    const results = sql.startsWith("SELECT id FROM stores")
      ? stores.filter((id) => sql.includes(`'${id}'`)).map((id) => ({ id }))
      : sql.includes("FROM store_directory GROUP BY shard")
        ? placed
        : [];
    return { code: 0, stdout: JSON.stringify([{ results, success: true, meta: {} }]), stderr: "", outputs: [] };
  };
  return {
    calls,
    run,
    writes: () => calls.filter((args) => (args.at(-1) ?? "").includes("INSERT")).map((args) => args.at(-1) ?? ""),
  };
}

function options(overrides: Partial<TokenOptions> = {}): TokenOptions {
  return {
    help: false,
    abilities: ["products:read"],
    storeIds: [],
    name: undefined,
    local: false,
    persistTo: undefined,
    json: false,
    ...overrides,
  };
}

describe("npm run token:create arguments", () => {
  it("reads abilities (or all), repeated or comma-separated stores in lower case, and the store name", () => {
    expect(
      parseTokenArgs(["--abilities", "all", "--store", storeA.toUpperCase(), "--store", `${storeB},${storeA}`]),
    ).toMatchObject({
      abilities: [...ABILITIES],
      storeIds: [storeA, storeB],
      local: false,
    });
    expect(parseTokenArgs(["--abilities", "media:write, products:read", "--name", "  Akademia  "])).toMatchObject({
      abilities: ["media:write", "products:read"],
      storeIds: [],
      name: "Akademia",
    });
  });

  it("refuses what the service would not accept, saying what is allowed", () => {
    expect(() => parseTokenArgs(["--abilities", "products:delete", "--name", "S"])).toThrow(
      /Unknown abilities: products:delete. Known: media:write/,
    );
    expect(() => parseTokenArgs(["--name", "S"])).toThrow(/--abilities is required/);
    expect(() => parseTokenArgs(["--abilities", "all", "--store", "store-1"])).toThrow(/"store-1" is not a UUID/);
    expect(() => parseTokenArgs(["--abilities", "all"])).toThrow(/--store ID for an existing store, or --name NAME/);
    expect(() => parseTokenArgs(["--abilities", "all", "--name", "a\nb"])).toThrow(/printable/);
    expect(() => parseTokenArgs(["--abilities", "all", "--name", "S", "--persist-to", "x"])).toThrow(
      /--persist-to needs --local/,
    );
    expect(() => parseTokenArgs(["--abilities", "all", "--name", "S", "--scope", "x"])).toThrow(
      /Unknown option '--scope'/,
    );
  });

  it("prints the usage with every ability on --help", async () => {
    const printed: string[] = [];
    await main(["--help"], { print: (t) => printed.push(t) });
    for (const ability of ABILITIES) expect(printed.join()).toContain(ability);
  });
});

describe("npm run token:create against the database: the rows it writes and what it prints", () => {
  it("with --name only: creates a new store and a token for it on the remote database, in one write", async () => {
    const database = fakeDatabase();
    const made = await createToken(options({ name: "Sklep O'Brien", abilities: ["media:write"] }), {
      run: database.run,
      newId: () => storeB,
      config,
    });
    // An account without shards: the store lives in the global database, as before shards.
    expect(database.calls.map((args) => args.slice(0, 2))).toEqual([
      ["d1", "list"],
      ["d1", "execute"],
    ]);
    expect(database.calls[1]?.slice(0, 6)).toEqual(["d1", "execute", "DB", "--remote", "--json", "--yes"]);
    const [write] = database.writes();
    expect(write).toContain(
      `INSERT INTO stores (id, name, plan_active, upload_limit_bytes, created_at) VALUES ('${storeB}', 'Sklep O''Brien', 1, NULL,`,
    );
    expect(write).toContain(`VALUES ('${await tokenHash(made.token)}', '["${storeB}"]', '["media:write"]',`);
    expect(write).not.toContain(made.token);
    expect(made).toMatchObject({ storeIds: [storeB], createdStores: [{ id: storeB, name: "Sklep O'Brien" }] });
  });

  it("with an existing --store: writes only the token", async () => {
    const database = fakeDatabase([storeA]);
    const made = await createToken(options({ storeIds: [storeA] }), { run: database.run });
    expect(database.calls).toHaveLength(2);
    const [write] = database.writes();
    expect(write).not.toContain("INSERT INTO stores");
    expect(made.createdStores).toEqual([]);
  });

  it("with an unknown --store: refuses without --name, creates it with --name", async () => {
    await expect(createToken(options({ storeIds: [storeA] }), { run: fakeDatabase().run })).rejects.toThrow(
      `No store ${storeA} on the deployed database; pass --name NAME to create it.`,
    );
    const database = fakeDatabase([storeB]);
    const made = await createToken(options({ storeIds: [storeA, storeB], name: "Second shop" }), {
      run: database.run,
      config,
    });
    expect(made.createdStores).toEqual([{ id: storeA, name: "Second shop" }]);
    expect(database.writes()[0]).toContain(`'["${storeA}","${storeB}"]'`);
  });

  it("prints the token once, with a first call that defines every variable it uses", async () => {
    const database = fakeDatabase([storeA]);
    const printed: string[] = [];
    await main(["--abilities", "subscriptions:read", "--store", storeA], {
      run: database.run,
      print: (t) => printed.push(t),
    });
    const output = printed.join("\n");
    const token = /Token: +(sfc_[A-Za-z0-9_-]{43})/.exec(output)?.[1] ?? "";
    expect(token).not.toBe("");
    expect(output.split(token).length - 1).toBe(2); // the Token line and TOKEN=
    for (const variable of ["API", "TOKEN", "STORE"]) expect(output).toMatch(new RegExp(`^ +${variable}=`, "m"));
  });
});

describe("npm run token:create against the database: the login, the shard and the secret", () => {
  it("without a Cloudflare login: says how to log in, not wrangler's raw JSON error", async () => {
    // What wrangler 4 answers, without a login and no terminal, to `d1 execute --remote --json` and `whoami --json`.
    const run = async (args: string[]): Promise<WranglerResult> =>
      args[0] === "whoami"
        ? { code: 1, stdout: '{"loggedIn":false}', stderr: "", outputs: [] }
        : {
            code: 1,
            stdout:
              '{\n  "error": {\n    "text": "In a non-interactive environment, it\'s necessary to set a CLOUDFLARE_API_TOKEN environment variable for wrangler to work."\n  }\n}',
            stderr: "",
            outputs: [],
          };
    const failure = createToken(options({ name: "Akademia" }), { run, config });
    await expect(failure).rejects.toThrow(
      "Not logged in to Cloudflare. Run `npx wrangler login` (or set CLOUDFLARE_API_TOKEN), then `npm run token:create` again.",
    );
    // Logged in, but the command failed: wrangler's reason in plain words, not its JSON.
    const loggedIn = async (args: string[]): Promise<WranglerResult> =>
      args[0] === "whoami"
        ? { code: 0, stdout: '{"loggedIn":true,"accounts":[]}', stderr: "", outputs: [] }
        : {
            code: 1,
            stdout: '{"error": {"text": "Couldn\'t find a D1 DB with the name or binding \'DB\'"}}',
            stderr: "",
            outputs: [],
          };
    await expect(createToken(options({ name: "Akademia" }), { run: loggedIn, config })).rejects.toThrow(
      /^Listing D1 databases failed:\nCouldn't find a D1 DB with the name or binding 'DB'$/,
    );
  });

  it("places a new store on the shard with the fewest stores: its row there first, then store, directory entry and token in DB", async () => {
    const database = fakeDatabase([], {
      shards: 3,
      placed: [
        { shard: "SHARD_0", stores: 4 },
        { shard: "SHARD_1", stores: 2 },
        { shard: "SHARD_2", stores: 2 },
      ],
    });
    const made = await createToken(options({ name: "Trzeci" }), { run: database.run, newId: () => storeB, config });
    expect(made.createdStores).toEqual([{ id: storeB, name: "Trzeci", shard: "SHARD_1" }]);
    const executed = database.calls.filter((args) => args[1] === "execute");
    expect(executed.map((args) => args[2])).toEqual(["DB", "SHARD_1", "DB"]);
    const shardWrite = executed[1] ?? [];
    const configPath = shardWrite[shardWrite.indexOf("--config") + 1] ?? "";
    expect(configPath).toMatch(/wrangler\.token-create\.\d+\.toml$/);
    await expect(stat(configPath)).rejects.toThrow(); // written for the run, removed after it
    expect(shardWrite.at(-1)).toContain(
      `INSERT INTO stores (id, name, plan_active, upload_limit_bytes, created_at) VALUES ('${storeB}', 'Trzeci'`,
    );
    const [, globalWrite] = database.writes();
    expect(globalWrite).toContain(`INSERT INTO stores (id, name`);
    expect(globalWrite).toContain(
      `INSERT INTO store_directory (store_id, shard, version, placed_at, moving) VALUES ('${storeB}', 'SHARD_1', 1,`,
    );
    expect(globalWrite).toContain("INSERT INTO api_tokens");
    // An existing store is not placed again: no listing, no shard write.
    const existing = fakeDatabase([storeA], { shards: 3 });
    await createToken(options({ storeIds: [storeA] }), { run: existing.run, config });
    expect(existing.calls.map((args) => args[2])).toEqual(["DB", "DB"]);
  });

  it("gives every token its own 256-bit secret", async () => {
    const database = fakeDatabase([storeA]);
    const tokens = new Set<string>();
    for (let i = 0; i < 20; i++)
      tokens.add((await createToken(options({ storeIds: [storeA] }), { run: database.run })).token);
    expect(tokens.size).toBe(20);
  });
});

describe("npm run token:create -- --local with the real wrangler and a local D1 database", () => {
  let persistTo: string;

  beforeAll(async () => {
    persistTo = await mkdtemp(join(tmpdir(), "token-create-"));
    // The global database and the two shards of `npm run dev`: three wrangler runs.
    await applyLocalMigrations(persistTo);
  }, 90_000);

  afterAll(async () => {
    await rm(persistTo, { recursive: true, force: true });
  });

  it("writes rows the schema accepts: the store, and the token as its SHA-256 with its stores and abilities", async () => {
    const printed: string[] = [];
    await main(
      [
        "--abilities",
        "media:write,subscriptions:read",
        "--name",
        "Pracownia 'Łódź'; DROP TABLE x",
        "--local",
        "--persist-to",
        persistTo,
        "--json",
      ],
      {
        print: (t) => printed.push(t),
      },
    );
    const made = JSON.parse(printed.join(""));
    const [storeId] = made.store_ids;
    const read = await runWrangler([
      "d1",
      "execute",
      "DB",
      "--local",
      "--persist-to",
      persistTo,
      "--json",
      "--command",
      `SELECT name, plan_active, upload_limit_bytes FROM stores WHERE id = '${storeId}'; SELECT token_hash, store_ids, abilities FROM api_tokens; SELECT shard, moving FROM store_directory WHERE store_id = '${storeId}'`,
    ]);
    expect(read.code, read.stderr).toBe(0);
    const [stores, tokens, directory] = JSON.parse(read.stdout);
    // Placed on a shard of `npm run dev` (both empty: the first, SHARD_0), its home copy of the row there.
    expect(made.created_stores).toEqual([{ id: storeId, name: "Pracownia 'Łódź'; DROP TABLE x", shard: "SHARD_0" }]);
    expect(directory.results).toEqual([{ shard: "SHARD_0", moving: 0 }]);
    const home = await runWrangler([
      ..."d1 execute SHARD_0 --local --config".split(" "),
      shardedConfigPath,
      ..."--persist-to".split(" "),
      persistTo,
      "--json",
      "--command",
      `SELECT name FROM stores WHERE id = '${storeId}'`,
    ]);
    expect(home.code, home.stderr).toBe(0);
    expect(JSON.parse(home.stdout)[0].results).toEqual([{ name: "Pracownia 'Łódź'; DROP TABLE x" }]);
    expect(stores.results).toEqual([
      { name: "Pracownia 'Łódź'; DROP TABLE x", plan_active: 1, upload_limit_bytes: null },
    ]);
    expect(tokens.results).toEqual([
      {
        token_hash: await tokenHash(made.token),
        store_ids: JSON.stringify([storeId]),
        abilities: '["media:write","subscriptions:read"]',
      },
    ]);
  });
});
