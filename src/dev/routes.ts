import { zValidator } from "@hono/zod-validator";
import { eq } from "drizzle-orm";
import { bodyLimit } from "hono/body-limit";
import { z } from "zod";
import { devFixturesEnabled } from "../config";
import { customFields, drafts, productCourses, products, variants } from "../db/schema";
import { homeNames } from "../db/shards";
import { ApiError, messages, validationError } from "../http/errors";
import { forgetEveryRead } from "../http/read-cache";
import { createRouter } from "../http/router";
import { validationHook } from "../http/validate";
import { moveBody, moveParams, runMove, runRecovery } from "../ops/routes";
import { listCalls, setFaultMode } from "../platform/fake";
import { ownerFields } from "../products/serialize";
import { FixtureDocument } from "./fixture-schema";
import { loadFixtures } from "./fixtures";
import uploadPage from "./upload-page.html";

/**
 * The `/api/v1/_dev` routes of docs/development.md. They exist only with `DEV_FIXTURES=on`; otherwise
 * every one of them answers like an unknown route. They write stores of no caller (fixtures, moves), so each
 * of their writes forgets every read answer the isolate kept: only once the route is known to exist, so a
 * request to a switched-off route forgets nothing.
 */
export const devRoutes = createRouter()
  .use(
    "*",
    async (c, next) => {
      if (!devFixturesEnabled(c.env)) throw new ApiError(404, messages.notFound);
      await next();
    },
    forgetEveryRead,
  )
  .post(
    "/fixtures",
    bodyLimit({
      maxSize: 32 * 1024 * 1024,
      onError: () => {
        throw new ApiError(413, messages.payloadTooLarge);
      },
    }),
    zValidator("json", FixtureDocument, validationHook),
    async (c) => {
      const loaded = await loadFixtures(c.var.databases, c.req.valid("json"));
      return c.json({ loaded }, 201);
    },
  )
  .get(
    "/products/:id",
    zValidator("param", z.object({ id: z.uuid({ error: messages.invalidProductId }) }), validationHook),
    async (c) => {
      const { id } = c.req.valid("param");
      // No token names the store here: every home is asked at once, and the one holding the product answers.
      const found = await Promise.all(
        homeNames(c.env).map(async (home) => {
          const db = c.var.databases.home(home);
          const product = await db.query.products.findFirst({ where: eq(products.id, id) });
          return product ? { db, product } : null;
        }),
      );
      const hit = found.find((entry) => entry !== null);
      if (!hit) throw new ApiError(404, messages.productNotFound(id));
      const { db, product } = hit;
      const [courseRows, fieldRows, variantRows, draftRows] = await db.batch([
        db.select().from(productCourses).where(eq(productCourses.productId, id)),
        db.select().from(customFields).where(eq(customFields.productId, id)),
        db.select().from(variants).where(eq(variants.productId, id)).orderBy(variants.position),
        db.select({ version: drafts.draftVersion }).from(drafts).where(eq(drafts.productId, id)),
      ]);
      return c.json({
        courses: courseRows.map((row) => row.courseId).sort(),
        redirect_course_id: product.redirectCourseId,
        wall_id: product.wallId,
        footer_id: product.footerId,
        draft_version: draftRows[0]?.version ?? null,
        custom_fields: ownerFields(fieldRows, "product", id, product.customFieldsDefined),
        waitlist_custom_fields: ownerFields(fieldRows, "waitlist", id, product.waitlistCustomFieldsDefined),
        variants: variantRows.map((variant) => ({
          id: variant.id,
          custom_fields: ownerFields(fieldRows, "variant", variant.id, variant.customFieldsDefined),
        })),
      });
    },
  )
  .post(
    "/platform/faults",
    zValidator(
      "json",
      z.object({
        store_id: z.uuid(),
        mode: z.union([z.enum(["up", "down"]), z.object({ fail_after: z.number().int().min(0) })]).default("up"),
      }),
      validationHook,
    ),
    async (c) => {
      const { store_id: storeId, mode } = c.req.valid("json");
      if (!(await setFaultMode(c.var.databases.global(), storeId.toLowerCase(), mode))) {
        throw validationError({ store_id: ["The store does not exist."] });
      }
      return c.body(null, 204);
    },
  )
  .get("/platform/calls", zValidator("query", z.object({ store_id: z.uuid() }), validationHook), async (c) => {
    const { store_id: storeId } = c.req.valid("query");
    return c.json({ items: await listCalls(c.var.databases.global(), storeId.toLowerCase()) });
  })
  // `npm run store:move` against `npm run dev` (docs/scaling.md, "Moving a store under traffic").
  .post("/stores/:id/move", moveParams, moveBody, async (c) =>
    c.json(await runMove(c.env, c.req.valid("param").id, c.req.valid("json").to)),
  )
  .post("/stores/:id/move/recover", moveParams, async (c) => c.json(await runRecovery(c.env, c.req.valid("param").id)))
  .get("/upload", (c) => c.html(uploadPage))
  // The cheapest route of the Worker (no token, no D1, no Durable Object): `npm run bench` loads it
  // beside the real routes, as the ceiling of the runtime on the machine.
  .get("/ping", (c) => c.body(null, 204));
