// What the upload benches send and where: a video file of a given size, a plain HTTP server that discards what it
// is sent (the reference), and curl PUTs of a file to either.
import { execFile } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seededRandom } from "./bench-fixture.mjs";
import { num, requireDebianTool } from "./bench-report.mjs";
import { onAbort } from "./bench-run.mjs";

/** The single PUT's file: 95 MB. */
export const UPLOAD_BYTES = 95_000_000;
/** How often memory is sampled during an upload. */
export const SAMPLE_MS = 50;

export const mib = (bytes) => num(bytes / 2 ** 20);

/**
 * Writes `size` bytes: an ISO BMFF `ftyp` box (brand isom, as test/support/media-bytes.ts isoMedia) and
 * one `mdat` box filling the rest with pseudo-random bytes, written in 1 MiB pieces.
 */
export async function writeVideo(path, size) {
  const ascii = (text) => Buffer.from(text, "latin1");
  const u32 = (value) => {
    const buffer = Buffer.alloc(4);
    buffer.writeUInt32BE(value);
    return buffer;
  };
  const ftyp = Buffer.concat([u32(24), ascii("ftyp"), ascii("isom"), u32(0), ascii("isom"), ascii("mp41")]);
  const mdatHeader = Buffer.concat([u32(size - ftyp.length), ascii("mdat")]);
  const piece = Buffer.alloc(2 ** 20);
  const rng = seededRandom(95);
  for (let i = 0; i < piece.length; i += 4) piece.writeUInt32LE((rng.next() * 2 ** 32) >>> 0, i);
  const out = createWriteStream(path);
  const write = (chunk) =>
    new Promise((resolve, reject) => out.write(chunk, (error) => (error ? reject(error) : resolve())));
  await write(Buffer.concat([ftyp, mdatHeader]));
  let left = size - ftyp.length - mdatHeader.length;
  while (left > 0) {
    const chunk = piece.subarray(0, Math.min(left, piece.length));
    await write(chunk);
    left -= chunk.length;
  }
  await new Promise((resolve, reject) => out.end((error) => (error ? reject(error) : resolve())));
}

/** A plain HTTP server that reads and discards any body and answers 204: the reference. */
export async function startSink() {
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.statusCode = 204;
      response.end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

/**
 * PUTs the file with curl and returns its status and time. `Expect:` is sent empty because curl would
 * otherwise wait for a `100 Continue` before a body this large; both targets get the same command.
 */
export async function curlPut(url, file, headers) {
  const args = ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "-X", "PUT", "--data-binary", `@${file}`];
  args.push("-H", "Expect:");
  for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`);
  args.push(url);
  // execFile answers once curl's output is closed: with several curls at once, a child's `exit` can come
  // before its last output has been read, and the status line would be lost.
  const result = await new Promise((resolve, reject) =>
    execFile("curl", args, { timeout: 180_000 }, (error, stdout, stderr) =>
      error
        ? reject(new Error(`curl failed (${error.code ?? error.signal}): ${stderr || error.message}`))
        : resolve({ stdout, stderr }),
    ),
  );
  const [status, seconds] = result.stdout.trim().split(" ");
  return { status: Number(status), seconds: Number(seconds), stderr: result.stderr };
}

/**
 * Runs `fn(dir, sink)` with a throwaway directory (`prefix`) and the plain server listening; removes both after,
 * or when the run is aborted.
 */
export async function withDirAndSink(prefix, fn) {
  requireDebianTool("curl", "curl", "the upload bench sends the file with curl");
  const dir = await mkdtemp(join(tmpdir(), `${prefix}-`));
  const removeDir = () => rm(dir, { recursive: true, force: true });
  const unregister = onAbort(removeDir);
  const sink = await startSink();
  try {
    return await fn(dir, sink);
  } finally {
    await sink.close();
    await removeDir();
    unregister();
  }
}
