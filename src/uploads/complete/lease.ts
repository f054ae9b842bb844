import { renewEvery } from "../../lib/lease";
import { completeLeaseMs } from "../upload-state";

/**
 * How often a running complete renews its lease: a third of `completeLeaseMs` (5 s of 15 s), so that two
 * renewals in a row may be late or lost (a slow call to the coordinator, an isolate busy for seconds) before
 * the lease runs out, while a complete costs one small coordinator call per 5 s it runs, not more.
 */
export const leaseRenewalMs = completeLeaseMs / 3;

/**
 * Runs `work` while renewing the complete's lease every `leaseRenewalMs` (lib/lease.ts), so the lease outlives
 * the complete only by what is left of it, never by minutes: a complete whose process dies stops renewing,
 * and a retry takes the upload over within `completeLeaseMs`. `renew` answers whether the coordinator renewed
 * it; once it refuses (a later complete took the upload over), renewing stops, and the work's own finish is
 * refused too.
 */
export async function whileHoldingLease<T>(
  renew: () => Promise<boolean>,
  work: () => Promise<T>,
  logFields: Record<string, unknown> = {},
): Promise<T> {
  const stop = renewEvery(leaseRenewalMs, renew, { lease: "complete", ...logFields });
  try {
    return await work();
  } finally {
    stop();
  }
}
