import { describe, expect, it } from "vitest";
import { moveStore, parseMoveArgs } from "../../scripts/store-move.mjs";

const store = "5F0C6A1E-2B7D-4C9A-9E3F-1A2B3C4D5E6F";

describe("npm run store:move", () => {
  it("asks npm run dev's _dev route by default, and a deployment's _ops route with STORE_MOVE_SECRET", () => {
    expect(parseMoveArgs(["--store", store, "--to", "SHARD_1"], {})).toEqual({
      help: false,
      recover: false,
      storeId: store.toLowerCase(),
      to: "SHARD_1",
      url: `http://localhost:8787/api/v1/_dev/stores/${store.toLowerCase()}/move`,
      secret: undefined,
    });
    expect(
      parseMoveArgs(["--store", store, "--to", "SHARD_3", "--url", "https://checkout.example/"], {
        STORE_MOVE_SECRET: "s3cret",
      }),
    ).toMatchObject({
      url: `https://checkout.example/api/v1/_ops/stores/${store.toLowerCase()}/move`,
      secret: "s3cret",
    });
  });

  it("refuses a command line without a store id or a shard", () => {
    expect(() => parseMoveArgs(["--to", "SHARD_1"], {})).toThrow(/--store needs a store id/);
    expect(() => parseMoveArgs(["--store", store, "--to", "DB"], {})).toThrow(/--to needs a shard/);
    expect(() => parseMoveArgs(["--store", store, "--to", "SHARD_1", "--shard", "x"], {})).toThrow(/Unknown option/);
    expect(() => parseMoveArgs(["--store", store, "--recover", "--to", "SHARD_1"], {})).toThrow(
      /--recover takes no --to/,
    );
  });

  it("--recover asks the move's recover route, with no body", async () => {
    const options = parseMoveArgs(["--store", store, "--recover"], { STORE_MOVE_SECRET: "s" });
    expect(options).toEqual({
      help: false,
      recover: true,
      storeId: store.toLowerCase(),
      url: `http://localhost:8787/api/v1/_ops/stores/${store.toLowerCase()}/move/recover`,
      secret: "s",
    });
    if (options.help) return;
    const sent: RequestInit[] = [];
    const report = { store_id: store, home: "SHARD_0", found: "moving", cleaned: ["SHARD_1"], opened: true };
    await expect(
      moveStore(options, async (_url, init) => {
        sent.push(init ?? {});
        return new Response(JSON.stringify(report), { status: 200 });
      }),
    ).resolves.toEqual(report);
    expect(sent[0]?.body).toBeUndefined();
    expect(sent[0]?.method).toBe("POST");
  });

  it("sends the shard with the secret as bearer, and says why the Worker refused", async () => {
    const sent: { url: string; init: RequestInit }[] = [];
    const answer = (status: number, body: unknown) => async (url: string | URL | Request, init?: RequestInit) => {
      sent.push({ url: String(url), init: init ?? {} });
      return new Response(JSON.stringify(body), { status });
    };
    const options = {
      help: false as const,
      recover: false as const,
      storeId: store,
      to: "SHARD_1",
      url: "https://w/api/v1/_ops/x",
      secret: "s",
    };
    await expect(moveStore(options, answer(200, { store_id: store, to: "SHARD_1" }))).resolves.toMatchObject({
      to: "SHARD_1",
    });
    expect(sent[0]?.init.body).toBe('{"to":"SHARD_1"}');
    expect(new Headers(sent[0]?.init.headers).get("Authorization")).toBe("Bearer s");
    await expect(moveStore(options, answer(409, { message: "already lives in SHARD_1" }))).rejects.toThrow(
      "The move was refused (409): already lives in SHARD_1",
    );
    await expect(moveStore(options, answer(404, { message: "Not found." }))).rejects.toThrow(
      /STORE_MOVE_SECRET secret/,
    );
  });
});
