import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { devPlatformAccounts, devPlatformCalls } from "../db/schema";
import { PlatformUnavailableError, type ProjectPlatform } from "./client";

type Op = (typeof devPlatformCalls.$inferInsert)["op"];
type CallDetails = { projectId?: string; courseId?: string; productId?: string };

/** How the fake answers: `up`, `down`, or the next `n` calls succeed and then every call fails. */
type FaultMode = "up" | "down" | { fail_after: number };

/**
 * The built-in fake project platform (docs/development.md, "The fake project platform"): answers from each store's `platform` fixture
 * state kept in D1, obeys the configured faults, and records every call.
 */
export class FakeProjectPlatform implements ProjectPlatform {
  constructor(private readonly db: Database) {}

  async accountConnected(storeId: string): Promise<boolean> {
    const account = await this.answer(storeId, "check_account", {});
    return account?.connected ?? false;
  }

  async projectExists(storeId: string, projectId: string): Promise<boolean> {
    const account = await this.answer(storeId, "check_project", { projectId });
    return account?.projects.includes(projectId) ?? false;
  }

  async connectCourse(storeId: string, productId: string, courseId: string) {
    const account = await this.answer(storeId, "connect_course", { courseId, productId });
    return account?.courses.includes(courseId) ? "connected" : "missing";
  }

  async disconnectCourse(storeId: string, productId: string, courseId: string) {
    await this.answer(storeId, "disconnect_course", { courseId, productId });
  }

  /** Decides whether this call succeeds (spending one of the allowed successes), logs it, and reads the state. */
  private async answer(storeId: string, op: Op, details: CallDetails) {
    const account = await this.db.query.devPlatformAccounts.findFirst({
      where: eq(devPlatformAccounts.storeId, storeId),
    });
    let ok = account === undefined || account.faultMode === "up";
    if (account?.faultMode === "fail_after") {
      const spent = await this.db
        .update(devPlatformAccounts)
        .set({ remainingSuccesses: sql`${devPlatformAccounts.remainingSuccesses} - 1` })
        .where(and(eq(devPlatformAccounts.storeId, storeId), gt(devPlatformAccounts.remainingSuccesses, 0)));
      ok = spent.meta.changes > 0;
    }
    await this.db.insert(devPlatformCalls).values({ storeId, op, ...details, ok });
    if (!ok) throw new PlatformUnavailableError(`fake platform is down for ${op}`);
    return account;
  }
}

/** Sets how the fake answers the store's calls from now on. */
export async function setFaultMode(db: Database, storeId: string, mode: FaultMode) {
  const values =
    typeof mode === "object"
      ? { faultMode: "fail_after" as const, remainingSuccesses: mode.fail_after }
      : { faultMode: mode, remainingSuccesses: null };
  const result = await db.update(devPlatformAccounts).set(values).where(eq(devPlatformAccounts.storeId, storeId));
  return result.meta.changes > 0;
}

/** The calls the fake answered for a store, in call order. */
export async function listCalls(db: Database, storeId: string) {
  const rows = await db
    .select()
    .from(devPlatformCalls)
    .where(eq(devPlatformCalls.storeId, storeId))
    .orderBy(asc(devPlatformCalls.id));
  return rows.map((row) => ({
    op: row.op,
    ...(row.projectId ? { project_id: row.projectId } : {}),
    ...(row.courseId ? { course_id: row.courseId } : {}),
    ...(row.productId ? { product_id: row.productId } : {}),
    ok: row.ok,
  }));
}
