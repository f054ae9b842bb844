import type { LeaseGrant, LimitVerdict } from "./fixed-window";

/** What an isolate asks a subject's limiter for: up to `want` calls of the current window. */
type LeaseRequest = { limit: number; windowSeconds: number; want: number };

/** Asks the limiter of `subject` for a slice of its window (one Durable Object RPC in production). */
export type LeaseClient = (subject: string, request: LeaseRequest) => Promise<LeaseGrant>;

/** Keeps `task` alive after the response has been sent (the request's own `waitUntil`). */
type Background = (task: Promise<unknown>) => void;

/** A slice is this share of the limit: an isolate that goes away strands at most that much of a window. */
export const SLICES_PER_WINDOW = 20;

/** Subjects (tokens) whose slices one isolate remembers; the least recently used is forgotten first. */
const MAX_LEASED_SUBJECTS = 10_000;

/**
 * A lease call older than this is taken for lost (its request was cancelled): it no longer blocks a new
 * refill nor counts toward what the isolate holds.
 */
const staleLeaseCallMs = 10_000;

/** The most calls of `limit` one isolate holds at a time, leased and in flight together. */
export function sliceSize(limit: number): number {
  return Math.max(1, Math.ceil(limit / SLICES_PER_WINDOW));
}

/** Below or at this many calls left locally, the isolate asks for more in the background. */
export function refillThreshold(limit: number): number {
  return Math.floor(sliceSize(limit) / 2);
}

/** The local view of one window of one subject. */
type Window = {
  /** The limiter's id of the window (its start by the limiter's clock). */
  startedAt: number;
  /** Local time at which the window is over for sure: never later than the limiter's own end. */
  expiresAt: number;
  /** Calls leased to this isolate and not spent yet. */
  tokens: number;
  /** What the limiter last said nobody holds yet; it only falls within a window. */
  unleased: number;
};

type Subject = {
  limit: number;
  windowSeconds: number;
  window: Window | null;
  /** Lease calls under way, by id: when each started and how many calls it asked for. */
  calls: Map<number, { since: number; want: number }>;
  /** Id of the background refill under way, if any. */
  refill: number | null;
};

/**
 * Leased budgets of the general limit, held per isolate in plain module state. A request spends a call
 * of its subject's slice locally; when the slice runs low it asks the subject's limiter for more in the
 * background, and only a request that finds nothing left makes its own (awaited) lease call. No request
 * ever awaits a promise another request started: they share numbers, never promises.
 */
export class LeasedBudgets {
  private readonly subjects = new Map<string, Subject>();
  private nextCallId = 0;
  /** Lease calls made, awaited by the request (`sync`) or left to run after it (`background`). */
  readonly calls = { sync: 0, background: 0 };

  constructor(private readonly options: { maxSubjects?: number } = {}) {}

  /**
   * Counts one call of `subject` against `limit` per `windowSeconds`. Never lets the subject's calls in a
   * window exceed `limit` across all isolates; the verdict's `remaining` is this isolate's view.
   */
  async take(
    subject: string,
    limit: number,
    windowSeconds: number,
    client: LeaseClient,
    background: Background,
  ): Promise<LimitVerdict> {
    const state = this.subjectOf(subject, limit, windowSeconds);
    const now = this.now();
    const window = liveWindow(state, now);
    if (window && window.tokens > 0) {
      window.tokens--;
      this.refillIfLow(state, subject, client, background, now);
      return verdictOf(state, window, true, now);
    }
    // The limiter said the window is spent, and a window's budget never comes back: refuse without asking.
    if (window && window.unleased === 0) return verdictOf(state, window, false, now);

    // Nothing left here: ask for this request's own call (and a slice with it), whatever refill is under way.
    const want = Math.max(1, sliceSize(limit) - this.held(state, now));
    this.calls.sync++;
    const id = this.beginCall(state, want, now);
    let grant: LeaseGrant;
    try {
      grant = await client(subject, { limit, windowSeconds, want });
    } finally {
      state.calls.delete(id);
    }
    const after = this.now();
    const admitted = grant.granted > 0;
    const merged = this.absorb(state, grant, now, admitted ? 1 : 0);
    if (admitted) return verdictOf(state, merged, true, after);
    // A refill of another request may have landed while this one waited: spend from it.
    const current = liveWindow(state, after);
    if (current && current.tokens > 0) {
      current.tokens--;
      return verdictOf(state, current, true, after);
    }
    return verdictOf(state, current ?? merged, false, after);
  }

  private now(): number {
    return Date.now();
  }

  private subjectOf(subject: string, limit: number, windowSeconds: number): Subject {
    let state = this.subjects.get(subject);
    if (state) this.subjects.delete(subject);
    // A changed limit or window makes the old slices meaningless here; the limiter still counts them.
    if (!state || state.limit !== limit || state.windowSeconds !== windowSeconds) {
      state = { limit, windowSeconds, window: null, calls: new Map(), refill: null };
    }
    // Re-inserting keeps the map in least-recently-used order, so the first key is the one to forget.
    this.subjects.set(subject, state);
    const max = this.options.maxSubjects ?? MAX_LEASED_SUBJECTS;
    while (this.subjects.size > max) {
      const oldest = this.subjects.keys().next().value;
      if (oldest === undefined) break;
      this.subjects.delete(oldest);
    }
    return state;
  }

  /** Calls this isolate holds or has asked for: kept within one slice, the bound of what it can strand. */
  private held(state: Subject, now: number): number {
    let held = liveWindow(state, now)?.tokens ?? 0;
    for (const call of state.calls.values()) if (now - call.since < staleLeaseCallMs) held += call.want;
    return held;
  }

  private refillIfLow(state: Subject, subject: string, client: LeaseClient, background: Background, now: number) {
    const window = state.window;
    if (!window || window.unleased === 0 || window.tokens > refillThreshold(state.limit)) return;
    if (state.refill !== null) {
      const running = state.calls.get(state.refill);
      if (running && now - running.since < staleLeaseCallMs) return;
    }
    const want = sliceSize(state.limit) - this.held(state, now);
    if (want <= 0) return;
    this.calls.background++;
    const id = this.beginCall(state, want, now);
    state.refill = id;
    const task = client(subject, { limit: state.limit, windowSeconds: state.windowSeconds, want }).then(
      (grant) => {
        // Both in one continuation, so no request ever sees the grant counted twice or not at all.
        state.calls.delete(id);
        this.absorb(state, grant, now, 0);
        if (state.refill === id) state.refill = null;
      },
      () => {
        // A failed refill only means the next request that finds nothing left asks for itself.
        state.calls.delete(id);
        if (state.refill === id) state.refill = null;
      },
    );
    background(task);
  }

  /** Records a lease call while it runs, so that what it asked for counts as held. */
  private beginCall(state: Subject, want: number, now: number): number {
    const id = ++this.nextCallId;
    state.calls.set(id, { since: now, want });
    return id;
  }

  /**
   * Adds a grant to the local window, less `spend` calls used at once by the asking request. A grant of a
   * newer window replaces the old one's leftovers; a grant of a window already replaced is dropped.
   */
  private absorb(state: Subject, grant: LeaseGrant, sentAt: number, spend: number): Window {
    // The window ends `resetMs` after the limiter read its clock, which was after `sentAt`: an early bound.
    const granted: Window = {
      startedAt: grant.windowStartedAt,
      expiresAt: sentAt + grant.resetMs,
      tokens: grant.granted - spend,
      unleased: grant.unleased,
    };
    const current = state.window;
    if (!current || grant.windowStartedAt > current.startedAt) {
      state.window = granted;
      return granted;
    }
    if (grant.windowStartedAt === current.startedAt) {
      current.tokens += granted.tokens;
      current.unleased = Math.min(current.unleased, granted.unleased);
      current.expiresAt = Math.max(current.expiresAt, granted.expiresAt);
      return current;
    }
    return { ...granted, tokens: 0 };
  }
}

function liveWindow(state: Subject, now: number): Window | null {
  return state.window && now < state.window.expiresAt ? state.window : null;
}

function verdictOf(state: Subject, window: Window, allowed: boolean, now: number): LimitVerdict {
  return {
    allowed,
    limit: state.limit,
    windowSeconds: state.windowSeconds,
    remaining: allowed ? window.tokens + window.unleased : 0,
    resetSeconds: Math.max(1, Math.ceil((window.expiresAt - now) / 1000)),
  };
}
