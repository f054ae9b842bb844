import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { stripVTControlCharacters } from "node:util";

/*
 * The e2e server's stderr (both `wrangler dev` processes), copied to the test run's stderr line by line,
 * without esbuild's goroutine dump when the server is stopped: wrangler dev rebuilds its Worker when a
 * source file changes, and stopping it mid-rebuild leaves its esbuild process to die with "all goroutines
 * are asleep" and some sixty lines of Go stack. Everything else wrangler or workerd writes still shows.
 */

/** The first line of esbuild's dump when the wrangler that drove it is gone. */
const esbuildDeadlock = "fatal error: all goroutines are asleep - deadlock!";

/** A line of a Go goroutine dump: a goroutine's header, a frame, its file line, or a blank between them. */
const goroutineDumpLine = /^(?:|goroutine \d+ \[[^\]]*\]:|\t\S.*|created by \S.*|\S+\(.*\)(?: \S+)?)$/;

/**
 * wrangler's report of a part PUT whose connection was lost (colours stripped): test/e2e/multipart-upload.test.ts
 * cuts the browser's network mid-upload on purpose, and checks what the service kept.
 */
const cutPartPut =
  /^✘ \[ERROR\] Error inside ProxyWorker \(the affected request failed; the dev server continues\): PUT \S+\/media-uploads\/[0-9a-f-]+\/parts\/\d+ \(failed after \d+ attempts?\): Network connection lost\.$/;
/** wrangler's pointer to its log file, which it prints once an error was reported (the cut PUTs above). */
const logFileNote = /^🪵 +Logs were written to "[^"]+"$/;

/**
 * Decides line by line what of the server's stderr to show: all of it, except wrangler's reports of the part
 * PUTs a test cut on purpose (with the blank lines after them and the log-file note they cause) and, once
 * `stopping()` was called, esbuild's deadlock dump (its first line and the dump lines after it).
 */
export function devServerStderrFilter() {
  let stopping = false;
  let inDump = false;
  let afterCut = false;
  let cutSeen = false;
  const isCutReport = (line: string) => {
    const plain = stripVTControlCharacters(line);
    if (cutPartPut.test(plain)) {
      afterCut = true;
      cutSeen = true;
      return true;
    }
    if (afterCut && plain === "") return true;
    afterCut = false;
    return cutSeen && logFileNote.test(plain);
  };
  return {
    stopping() {
      stopping = true;
    },
    /** Whether `line` is shown. */
    shows(line: string): boolean {
      if (isCutReport(line)) return false;
      if (stopping && line === esbuildDeadlock) inDump = true;
      else if (inDump && !goroutineDumpLine.test(line)) inDump = false;
      return !inDump;
    },
  };
}

/**
 * A socket to give the e2e server's processes as their stderr (spawn takes a socket for a stdio stream),
 * its lines copied to this process's stderr through {@link devServerStderrFilter}. `stopping()` before
 * the server is stopped, `close()` after.
 */
export async function devServerStderr(dir: string) {
  const filter = devServerStderrFilter();
  const server = createServer((received) => {
    // An esbuild that outlives its wrangler may hold the socket open; it must not keep the run alive.
    received.unref();
    createInterface({ input: received, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
      if (filter.shows(line)) process.stderr.write(`${line}\n`);
    });
  });
  const path = join(dir, "dev-server-stderr.sock");
  server.listen(path);
  await once(server, "listening");
  const stream: Socket = connect(path);
  await once(stream, "connect");
  return {
    stream,
    stopping: filter.stopping,
    close: () => {
      stream.end();
      server.close();
      server.unref();
    },
  };
}
