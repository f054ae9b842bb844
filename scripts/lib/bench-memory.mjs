// Memory of the bench servers: the processes' resident sets from /proc, and each Worker isolate's own heap
// through the inspector `wrangler dev` exposes.
import { readFileSync } from "node:fs";
import { descendants, withTimeout } from "./bench-run.mjs";

/**
 * The workerd processes of a `wrangler dev`: wrangler runs two, its dev proxy on the public port
 * (forwarding every request) and the Worker itself (the app, D1, R2 and the Durable Objects). `which` is
 * "api" (the default) or "converter", the converter Worker's own `wrangler dev` (its public port read from
 * the arguments it was started with).
 */
export function workerdProcesses(server, which = "api") {
  const child = which === "converter" ? server.converter : server.child;
  const port =
    which === "converter" ? child.spawnargs[child.spawnargs.indexOf("--port") + 1] : new URL(server.url).port;
  return descendants(child.pid)
    .filter((p) => p.comm === "workerd")
    .map((p) => ({
      pid: p.pid,
      role: p.args.some((arg) => arg === `--socket-addr=entry=127.0.0.1:${port}`) ? "proxy" : "worker",
    }));
}

/** Resident set size of a process in bytes (VmRSS of /proc/<pid>/status), or null once it is gone. */
export function rssBytes(pid) {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Samples the RSS of `pids` every `intervalMs`; stop() returns each one's baseline, peak and last value. */
export function sampleRss(pids, intervalMs = 50) {
  const seen = new Map(pids.map((pid) => [pid, { baseline: rssBytes(pid), peak: rssBytes(pid), samples: 1 }]));
  const sample = () => {
    for (const [pid, record] of seen) {
      const rss = rssBytes(pid);
      if (rss === null) continue;
      record.peak = Math.max(record.peak, rss);
      record.last = rss;
      record.samples += 1;
    }
  };
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return Object.fromEntries(seen);
    },
  };
}

/**
 * Connects to a Worker's isolate over the DevTools protocol, through the inspector proxy `wrangler dev`
 * runs on `server.inspectorPort` (the API's; with `which: "converter"`, `server.converterInspectorPort`,
 * the converter's) (it only accepts the DevTools front end's origin). Every call has a
 * deadline and fails naming its method; a closed connection fails every pending call at once.
 *
 * Two behaviours of workerd/wrangler the calls are built around (both seen with wrangler 4.156):
 * - `HeapProfiler.collectGarbage` collects but is never answered, so awaiting it hangs for ever (the cause
 *   of the bench hanging at "2. conversion through the Worker"). A full collection is obtained instead
 *   from `Runtime.queryObjects`, which collects all garbage before it walks the heap, and is answered;
 * - the proxy reconnects to the runtime about a second after a client connects (the client sees
 *   `Runtime.executionContextsCleared`, then a new context): a call sent into that gap can be lost, so
 *   the connection waits until the context has been stable before it is handed out.
 *
 * The isolate answers only between its own tasks: while it runs one long synchronous step (a WASM
 * decode or encode) every call waits; see sampleIsolate.
 */
export const INSPECTOR_CALL_MS = 20_000;

/**
 * A DevTools connection to the inspector on `port`: `send(method, params, timeoutMs)` calls, `context` follows the
 * Worker's execution context (its id, when it last changed, how many were created), `close()` ends it.
 */
async function openInspector(port, where, callTimeoutMs) {
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`, { signal: AbortSignal.timeout(10_000) })).json();
  if (!targets[0]?.webSocketDebuggerUrl) throw new Error(`${where} lists no target: ${JSON.stringify(targets)}`);
  const socket = new WebSocket(targets[0].webSocketDebuggerUrl, {
    headers: { Origin: "https://devtools.devprod.cloudflare.dev" },
  });
  let closed = null;
  let nextId = 0;
  const pending = new Map();
  const context = { id: undefined, changedAt: performance.now(), created: 0 };
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.id !== undefined) {
      pending.get(message.id)?.(message);
      pending.delete(message.id);
    } else if (message.method === "Runtime.executionContextCreated") {
      context.id = message.params.context.id;
      context.changedAt = performance.now();
      context.created += 1;
    } else if (message.method === "Runtime.executionContextsCleared") {
      context.id = undefined;
      context.changedAt = performance.now();
    }
  };
  socket.onclose = (event) => {
    closed = `closed (${event.code}${event.reason ? ` ${event.reason}` : ""})`;
    for (const settle of pending.values()) settle({ error: { message: `the inspector connection ${closed}` } });
    pending.clear();
  };
  await withTimeout(
    new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = () => reject(new Error(`could not connect to ${where}`));
    }),
    10_000,
    `connecting to ${where}`,
  );

  /** One protocol call; resolves with its result, rejects with its error, or a timeout naming it. */
  const send = (method, params, timeoutMs = callTimeoutMs) => {
    if (closed) return Promise.reject(new Error(`${method}: the inspector connection is ${closed}`));
    const id = ++nextId;
    const answer = new Promise((resolve, reject) =>
      pending.set(id, (message) =>
        message.error ? reject(new Error(`${method}: ${message.error.message}`)) : resolve(message.result),
      ),
    );
    socket.send(JSON.stringify({ id, method, ...(params ? { params } : {}) }));
    return withTimeout(answer, timeoutMs, `inspector call ${method}`).finally(() => pending.delete(id));
  };
  return { send, context, close: () => socket.close() };
}

/**
 * Waits for a context that has not changed for 3 s (the proxy's reconnect comes within ~1 s; wrangler dev
 * sometimes reloads the Worker once or twice in its first seconds).
 */
function settledContext(context, where) {
  return withTimeout(
    (async () => {
      while (context.id === undefined || performance.now() - context.changedAt < 3000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })(),
    20_000,
    `waiting for the Worker's execution context on ${where}`,
  );
}

/** `queryObjects(prototypeExpression, fn)`: `fn` run on every object whose prototype chain has it, after a full GC. */
function objectQueries({ send, context }) {
  let groups = 0;
  return async function queryObjects(prototypeExpression, fn) {
    const contextId = context.id;
    if (contextId === undefined) throw new Error("the Worker has no execution context (it is being reloaded)");
    const objectGroup = `bench-${++groups}`;
    try {
      const prototype = await send("Runtime.evaluate", { expression: prototypeExpression, contextId, objectGroup });
      if (prototype.exceptionDetails) throw new Error(`${prototypeExpression}: ${prototype.exceptionDetails.text}`);
      const found = await send("Runtime.queryObjects", { prototypeObjectId: prototype.result.objectId, objectGroup });
      const value = await send("Runtime.callFunctionOn", {
        objectId: found.objects.objectId,
        functionDeclaration: fn,
        returnByValue: true,
        objectGroup,
      });
      if (value.exceptionDetails)
        throw new Error(`queryObjects(${prototypeExpression}): ${value.exceptionDetails.text}`);
      return value.result.value;
    } finally {
      await send("Runtime.releaseObjectGroup", { objectGroup }).catch(() => {});
    }
  };
}

export async function connectInspector(server, { callTimeoutMs = INSPECTOR_CALL_MS, which = "api" } = {}) {
  // Each Worker has its own `wrangler dev` and so its own inspector: the API's (the default) and the
  // converter's, whose isolate does the conversions.
  const port = which === "converter" ? server.converterInspectorPort : server.inspectorPort;
  const where = `the ${which === "converter" ? "converter" : "API"} Worker's inspector on port ${port}`;
  const connection = await openInspector(port, where, callTimeoutMs);
  const { send, context } = connection;
  await settledContext(context, where);
  // Contexts created from here on are reloads of the Worker (wrangler dev rebuilds it when a source file
  // changes): a measurement that spans one mixes two versions of the code, or a fresh isolate.
  const settledContexts = context.created;
  const queryObjects = objectQueries(connection);
  return {
    send,
    /** Runtime.getHeapUsage: V8's usedSize and totalSize, and backingStorageSize (ArrayBuffers, not WASM memories). */
    heapUsage: (timeoutMs) => send("Runtime.getHeapUsage", undefined, timeoutMs),
    /** V8's used heap plus ArrayBuffer backing stores (WebAssembly memories are not in it: see wasmMemories). */
    async memory(timeoutMs) {
      const usage = await send("Runtime.getHeapUsage", undefined, timeoutMs);
      return usage.usedSize + (usage.backingStorageSize ?? 0);
    },
    /**
     * The byte length of every WebAssembly memory alive in the isolate, largest first (Runtime.queryObjects
     * on WebAssembly.Memory.prototype). WebAssembly memory never shrinks, so this is each one's high-water
     * mark. Collects all garbage first (queryObjects does).
     */
    wasmMemories: () =>
      queryObjects(
        "WebAssembly.Memory.prototype",
        "function () { return this.map((memory) => memory.buffer.byteLength).sort((a, b) => b - a); }",
      ),
    /** A full garbage collection that is answered (see the top): a queryObjects of the WASM memories. */
    async collectGarbage() {
      await this.wasmMemories();
    },
    /** How many times the Worker was reloaded since the connection settled. */
    reloads: () => context.created - settledContexts,
    close: connection.close,
  };
}

/**
 * Asks the isolate for Runtime.getHeapUsage every `intervalMs`, one request at a time, recording how long
 * each answer took: the isolate answers only between its tasks, so the longest wait is the longest
 * stretch it ran without yielding, during which nothing could be sampled (`longestWaitMs`). stop() returns
 * baseline, peak and last of used heap + ArrayBuffers, and the peak of each.
 */
export function sampleIsolate(inspector, intervalMs = 50, { callTimeoutMs = 120_000 } = {}) {
  let running = true;
  let failure = null;
  const record = {
    baseline: null,
    peak: 0,
    peakUsed: 0,
    peakBuffers: 0,
    peakTotal: 0,
    samples: 0,
    longestWaitMs: 0,
  };
  const take = async () => {
    const asked = performance.now();
    const usage = await inspector.heapUsage(callTimeoutMs);
    const waited = performance.now() - asked;
    const bytes = usage.usedSize + (usage.backingStorageSize ?? 0);
    record.baseline ??= bytes;
    record.peak = Math.max(record.peak, bytes);
    record.peakUsed = Math.max(record.peakUsed, usage.usedSize);
    record.peakBuffers = Math.max(record.peakBuffers, usage.backingStorageSize ?? 0);
    record.peakTotal = Math.max(record.peakTotal, usage.totalSize);
    record.longestWaitMs = Math.max(record.longestWaitMs, waited);
    record.samples += 1;
    return bytes;
  };
  const loop = (async () => {
    try {
      while (running) {
        await take();
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
      }
    } catch (error) {
      failure = error;
    }
  })();
  return {
    /** What was seen so far, without waiting for the sample in flight (the isolate may never answer). */
    abandon() {
      running = false;
      return { ...record, last: null, growth: record.peak - record.baseline, abandoned: true };
    },
    async stop() {
      running = false;
      await loop;
      if (failure) throw new Error(`sampling the isolate's memory: ${failure.message}`, { cause: failure });
      const last = await take();
      return { ...record, last, growth: record.peak - record.baseline };
    },
  };
}
