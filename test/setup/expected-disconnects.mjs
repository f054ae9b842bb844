/*
 * workerd's logs of the connections tests cut on purpose, kept out of a passing run's output (Node only: the
 * test runner's own process, from vitest.config.ts).
 *
 * Tests upload bodies that stop half-way, cut a browser off mid-upload, end the converter's isolate while
 * it streams an answer, and deliver events to a port nothing listens on. workerd logs each of those cuts as
 * an "uncaught exception" (at info level, on stdout) and its I/O layer's "disconnected" exception with an
 * unsymbolized stack, some hundred lines in a green run. The test pool forwards workerd's logs with process.stdout/stderr.write, one write per
 * log, and takes no handler of ours (its list of ignored messages is fixed), so the writes are filtered here.
 *
 * Narrowly: a write is dropped only when it is, in full, one of the shapes below. An uncaught error the
 * Worker's own code throws carries its JavaScript stack ("\n    at …"), so it never matches, even with the
 * same message; anything else workerd says passes unchanged.
 */

/** workerd's native stack, as it prints it unsymbolized: `stack:` then `binary@offset` frames. */
const nativeStack = String.raw`stack:(?: \S+@[0-9a-f]+)*`;

/** The logs of a cut connection, each matched against a whole write (without its final newline). */
const expectedDisconnectLogs = [
  // A client gone while the Worker reads its body (an aborted PUT, a browser cut off mid-part): the read
  // rejects with workerd's own TypeError, which has no JavaScript frames.
  /^uncaught exception; source = Uncaught \(in promise\); stack = TypeError: Can't read from request stream because client disconnected\.$/,
  // The converter's isolate ended mid-answer (the tests that end it), a delivery's connection refused: the
  // Worker's read of the answer rejects.
  /^uncaught exception; source = Uncaught \(in promise\); stack = Error: Network connection lost\.$/,
  // The same connection lost as workerd's JavaScript layer reports it, with only its native stack (a
  // delivery's connection closed under it, test/events/worker.test.ts).
  new RegExp(
    String.raw`^uncaught exception; exception = workerd/jsg/value\.h:\d+: disconnected: jsg\.Error: Network connection lost\.\n${nativeStack}$`,
  ),
  // The same cuts as workerd's I/O layer sees them: a body shorter than its Content-Length, a reader cancelled.
  new RegExp(
    String.raw`^exception = kj/async-io\.c\+\+:\d+: disconnected: fixed-length pipe ended prematurely\n${nativeStack}$`,
  ),
  new RegExp(
    String.raw`^exception = workerd/api/streams/identity-transform-stream\.c\+\+:\d+: disconnected: reader canceled\n${nativeStack}$`,
  ),
  // A stream the Worker stopped reading on purpose: the tests that end the converter's answer mid-stream, and
  // the AVIF requests whose maker answered before the bytes it stored were read.
  new RegExp(
    String.raw`^(?:uncaught exception; )?exception = kj/async-io\.c\+\+:\d+: disconnected: (?:abortRead\(\) has been called|read end of pipe was aborted)\n${nativeStack}$`,
  ),
  // A delivery to a loopback port nothing listens on (test/events/worker.test.ts): workerd reports the refusal
  // itself, and the delivery records it as a network error, as the test checks.
  new RegExp(
    String.raw`^exception = rust/worker/ffi\.rs:\d+: disconnected: Connection refused \(os error 111\)\n${nativeStack}$`,
  ),
];

/** Whether `text`, one write of the test runner's output, is the log of a connection cut on purpose. */
export function isExpectedDisconnect(text) {
  const log = text.endsWith("\n") ? text.slice(0, -1) : text;
  return expectedDisconnectLogs.some((shape) => shape.test(log));
}

/** Makes `stream` drop the writes that are expected-disconnect logs; every other write goes through as it was. */
export function dropExpectedDisconnects(stream) {
  const write = stream.write;
  stream.write = function (chunk, ...rest) {
    const text = typeof chunk === "string" ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString() : "";
    if (isExpectedDisconnect(text)) {
      const callback = rest.find((argument) => typeof argument === "function");
      if (typeof callback === "function") queueMicrotask(() => callback());
      return true;
    }
    return Reflect.apply(write, this, [chunk, ...rest]);
  };
}
