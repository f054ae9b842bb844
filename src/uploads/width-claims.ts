/**
 * Who makes a narrower width of a converted image (`?width=`), so that concurrent first requests decode the
 * hosted image once: the store's coordinator keeps these claims, and every request that finds no stored
 * variant asks it. Kept in the object's memory, not its storage: a claim lives for one generation (about a
 * second), and a claim lost with the object (evicted, restarted) costs at most one more generation of the
 * same, deterministic bytes.
 */

/** What a request that found no stored variant does next. */
export type WidthClaim =
  /** Make it: this request holds attempt `attempt` until it reports the end with `finish`. */
  | { verdict: "make"; attempt: number }
  /** Another request is making it: look for the stored variant again shortly, then ask again. */
  | { verdict: "wait"; attempt: number }
  /** It was stored moments ago (after this request looked): read it. */
  | { verdict: "stored" }
  /** The attempt this request waited on failed: answer 503; the next request tries again. */
  | { verdict: "failed" };

/**
 * How long a claim holds without its end reported or a renewal before another request may take it over: a
 * request that died while making a width (its isolate gone) holds that width back for at most this long. A
 * maker renews its claim while it waits on the converter (`renew`), since an AVIF may take longer than this
 * (a grid of noise: 9 s in Node, more in workerd; a converter busy with other jobs first), and a maker taken
 * over would encode it twice.
 */
export const widthClaimMs = 10_000;

type Entry = { attempt: number; until: number; state: "making" | "made" | "failed" };

export class WidthClaims {
  private readonly entries = new Map<string, Entry>();
  private issued = 0;

  /**
   * A request asks to make variant `key`; `waitedOn` is the attempt it was told to wait for, if any, and
   * `notStored` says it was told "stored" and found nothing (the object was removed since): it makes it.
   * A failed attempt is answered to those who waited on it, and forgotten by everyone else.
   */
  claim(key: string, waitedOn: number | null, now: number, notStored = false): WidthClaim {
    const entry = this.entries.get(key);
    const current = entry && now < entry.until ? entry : null;
    if (current?.state === "making") return { verdict: "wait", attempt: current.attempt };
    if (current?.state === "made" && !notStored) return { verdict: "stored" };
    if (current?.state === "failed" && current.attempt === waitedOn) return { verdict: "failed" };
    this.issued += 1;
    this.entries.set(key, { attempt: this.issued, until: now + widthClaimMs, state: "making" });
    this.sweep(now);
    return { verdict: "make", attempt: this.issued };
  }

  /** The holder of `attempt` is still making it: its claim holds another lease; false once it was taken over. */
  renew(key: string, attempt: number, now: number): boolean {
    const entry = this.entries.get(key);
    if (entry?.attempt !== attempt || entry.state !== "making") return false;
    entry.until = now + widthClaimMs;
    return true;
  }

  /** The holder of `attempt` reports its end: made (the variant is stored) or failed. */
  finish(key: string, attempt: number, made: boolean, now: number): void {
    const entry = this.entries.get(key);
    if (entry?.attempt !== attempt) return; // taken over after stalling: the newer attempt decides
    this.entries.set(key, { attempt, until: now + widthClaimMs, state: made ? "made" : "failed" });
  }

  /** Drops what no request can still ask about, so the map stays as small as the recent generations. */
  private sweep(now: number): void {
    for (const [key, entry] of this.entries) if (now >= entry.until) this.entries.delete(key);
  }
}
