import { describe, expect, it } from "vitest";
import { seedStore } from "../support/factories";
import { api, type BindingOverrides, expectJson, expectStatus } from "../support/http";
import { freshIp } from "../support/uploads";

/**
 * Issue 33, item 3: the operator's routes (`/api/v1/_ops`, src/ops/routes.ts) answer only the bearer
 * STORE_MOVE_SECRET, which the operator chooses and may be short, so wrong secrets are limited per client IP
 * (OPS_SECRET_LIMIT_PER_MINUTE, 10 by default). Each test sends from client IPs of its own.
 */
describe("wrong STORE_MOVE_SECRET bearers are limited per client IP", () => {
  const secret = "s3cret";
  const deployment: BindingOverrides & { STORE_MOVE_SECRET?: string; OPS_SECRET_LIMIT_PER_MINUTE?: string } = {
    DEV_FIXTURES: "off",
    STORE_MOVE_SECRET: secret,
  };

  /** A move (`to` SHARD_1) or, with `recover`, a recovery of `storeId`, sent from `ip` with `bearer`. */
  const ops = (
    storeId: string,
    ip: string,
    bearer: string,
    options: { recover?: boolean; env?: BindingOverrides } = {},
  ) =>
    api(`/_ops/stores/${storeId}/move${options.recover ? "/recover" : ""}`, {
      method: "POST",
      token: bearer,
      body: options.recover ? {} : { to: "SHARD_1" },
      headers: { "CF-Connecting-IP": ip },
      env: options.env ?? deployment,
    });

  it("the 11th wrong secret of an IP in a minute, move or recovery, answers 429 with Retry-After; so does the right one then", async () => {
    const { storeId } = await seedStore();
    const ip = freshIp();
    for (let attempt = 1; attempt <= 10; attempt++) {
      const refused = await ops(storeId, ip, `guess-${attempt}`, { recover: attempt % 2 === 0 });
      expect(await expectJson(refused, 401), `attempt ${attempt}`).toEqual({ message: "Unauthenticated." });
      expect(refused.headers.get("RateLimit-Policy")).toBe("10;w=60");
      expect(refused.headers.get("RateLimit")).toMatch(new RegExp(`^limit=10, remaining=${10 - attempt}, reset=\\d+$`));
    }
    const limited = await ops(storeId, ip, "guess-11");
    const retryAfter = Number(limited.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await expectJson(limited, 429)).toEqual({
      message: `Too many requests, retry after ${retryAfter} seconds.`,
    });
    // A guess past the limit is refused before it is compared: the right secret learns nothing either.
    await expectStatus(await ops(storeId, ip, secret, { recover: true }), 429);
  });

  it("another client IP is not limited by one IP's wrong secrets", async () => {
    const { storeId } = await seedStore();
    const guesser = freshIp();
    const env = { ...deployment, OPS_SECRET_LIMIT_PER_MINUTE: "1" };
    await expectStatus(await ops(storeId, guesser, "guess", { env }), 401);
    await expectStatus(await ops(storeId, guesser, "guess", { env }), 429);
    await expectStatus(await ops(storeId, freshIp(), "guess", { env }), 401);
    const operator = await ops(storeId, freshIp(), secret, { recover: true, env });
    expect(await expectJson(operator, 200)).toMatchObject({ store_id: storeId, found: "settled" });
  });

  it("only wrong secrets count: the operator's right secret, sent more often than the limit, is never refused", async () => {
    const { storeId } = await seedStore();
    const ip = freshIp();
    const env = { ...deployment, OPS_SECRET_LIMIT_PER_MINUTE: "2" };
    for (let call = 1; call <= 3; call++) {
      await expectStatus(await ops(storeId, ip, secret, { recover: true, env }), 200);
    }
    await expectStatus(await ops(storeId, ip, "guess", { env }), 401);
    await expectStatus(await ops(storeId, ip, "guess", { env }), 401);
    await expectStatus(await ops(storeId, ip, "guess", { env }), 429);
  });

  it("without STORE_MOVE_SECRET the routes answer 404, never 429: there is nothing to guess", async () => {
    const { storeId } = await seedStore();
    const ip = freshIp();
    const env = { DEV_FIXTURES: "off", OPS_SECRET_LIMIT_PER_MINUTE: "1" };
    for (let attempt = 1; attempt <= 3; attempt++) {
      expect(await expectJson(await ops(storeId, ip, "guess", { env }), 404)).toEqual({ message: "Not found." });
    }
  });
});
