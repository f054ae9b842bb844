import { Writable } from "node:stream";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dropExpectedDisconnects, isExpectedDisconnect } from "./expected-disconnects.mjs";

/** The disconnect logs as a green `npm test` printed them (the stack's binary path shortened). */
const stack = "stack: node_modules/workerd/bin/workerd@654ee27 node_modules/workerd/bin/workerd@2a6bf10";
const recordedDisconnects = [
  "uncaught exception; source = Uncaught (in promise); stack = TypeError: Can't read from request stream because client disconnected.\n",
  "uncaught exception; source = Uncaught (in promise); stack = Error: Network connection lost.\n",
  `uncaught exception; exception = workerd/jsg/value.h:1535: disconnected: jsg.Error: Network connection lost.\n${stack}\n`,
  `exception = kj/async-io.c++:2008: disconnected: fixed-length pipe ended prematurely\n${stack}\n`,
  `exception = workerd/api/streams/identity-transform-stream.c++:296: disconnected: reader canceled\n${stack}\n`,
  `exception = rust/worker/ffi.rs:110: disconnected: Connection refused (os error 111)\n${stack}\n`,
  `uncaught exception; exception = kj/async-io.c++:1697: disconnected: abortRead() has been called\n${stack}\n`,
  `exception = kj/async-io.c++:1697: disconnected: abortRead() has been called\n${stack}\n`,
  `uncaught exception; exception = kj/async-io.c++:763: disconnected: read end of pipe was aborted\n${stack}\n`,
  `exception = kj/async-io.c++:763: disconnected: read end of pipe was aborted\n${stack}\n`,
];

/** A stream that keeps what is written to it, filtered as vitest.config.ts filters the runner's output. */
function filteredOutput() {
  const written: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      written.push(String(chunk));
      done();
    },
  });
  dropExpectedDisconnects(stream);
  return { stream, written };
}

/** A Worker whose own code fails with the disconnects' messages, and with another error, in each way workerd reports. */
const failingWorker = `export default {
  async fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    if (pathname === "/client-disconnected") throw new TypeError("Can't read from request stream because client disconnected.");
    if (pathname === "/connection-lost") throw new Error("Network connection lost.");
    ctx.waitUntil(Promise.reject(new Error("a real bug in a waitUntil")));
    return new Response("answered");
  },
};`;

describe("the filter of expected disconnect logs", () => {
  it("drops each disconnect log a green run printed, written alone as the test pool writes it", () => {
    const { stream, written } = filteredOutput();
    for (const log of recordedDisconnects) {
      expect(isExpectedDisconnect(log), log).toBe(true);
      stream.write(log);
    }
    expect(written).toEqual([]);
  });

  it("lets through a disconnect log that is only part of a write, and every other line", () => {
    const { stream, written } = filteredOutput();
    const kept = [
      `${recordedDisconnects[0]}and a line after it\n`,
      "uncaught exception; source = Uncaught (in promise); stack = Error: Network connection lost. (and more)\n",
      "exception = kj/async-io.c++:2008: disconnected: fixed-length pipe ended prematurely\nstack: in a sentence\n",
      " ✓  worker  test/uploads/uploads-put.test.ts (12 tests) 3000ms\n",
    ];
    for (const line of kept) stream.write(line);
    expect(written).toEqual(kept);
  });

  describe("a Worker's real uncaught errors, as workerd logs them", () => {
    const logs: string[] = [];
    let mf: Miniflare;

    beforeAll(async () => {
      mf = new Miniflare(
        convertV4MiniflareOptions({
          verbose: true,
          handleStructuredLogs: ({ message }) => logs.push(`${message}\n`),
          workers: [{ name: "failing", modules: true, compatibilityDate: "2025-01-01", script: failingWorker }],
        }),
      );
      for (const path of ["/client-disconnected", "/connection-lost", "/wait-until"]) {
        await (await mf.dispatchFetch(`http://worker${path}`)).arrayBuffer();
      }
    }, 60_000);

    afterAll(() => mf?.dispose());

    it("all reach the output, those with a disconnect's message too", async () => {
      await expect.poll(() => logs.join("")).toContain("a real bug in a waitUntil");
      const thrown = logs.filter((log) => log.startsWith("uncaught exception; source = "));
      // Each thrown error is logged with its JavaScript stack, which no expected disconnect has.
      expect(thrown).toEqual([
        expect.stringContaining("Can't read from request stream because client disconnected.\n    at "),
        expect.stringContaining("Network connection lost.\n    at "),
        expect.stringContaining("a real bug in a waitUntil\n    at "),
      ]);
      const { stream, written } = filteredOutput();
      for (const log of logs) stream.write(log);
      expect(written).toEqual(logs);
    });
  });
});
