// The one runner of every bench. A part of `npm run bench` says what it measures and how it reports:
//
//   { title, block, heading, limitMs, measure(options), section(result, facts) }
//
// `title` names its step ("1. request overhead"), `limitMs` bounds it, `measure` starts the service(s) it needs
// (lib/bench-server.mjs) and runs its own steps with their limits, `section` turns the result into the markdown
// of its `block` of docs/benchmarks.md (appended under `heading` when missing). A script run alone hands its
// parts to runParts; scripts/bench.mjs runs them all with measurePart and writes them with writePart once every
// part succeeded.
import { machineFacts, machineLine, writeBlock } from "./bench-report.mjs";
import { installWatchdog, log, runMain, step } from "./bench-run.mjs";

/** The part as one step of the run, limited to `limitMs` (the part's own by default): its result. */
export function measurePart(part, options, limitMs = part.limitMs) {
  log(part.title);
  return step(part.title, limitMs, () => part.measure(options));
}

/** Rewrites the part's block of docs/benchmarks.md with its section of `result`. */
export function writePart(part, result, facts) {
  return writeBlock(part.block, part.heading, part.section(result, facts));
}

/**
 * A script's main: the watchdog at `watchdogMs`, then every part as a step, then, once all succeeded, each part's
 * section printed and written into docs/benchmarks.md (`write: false`: printed only). A part whose result is
 * null (it was asked for a check, not figures) reports nothing.
 */
export function runParts(parts, { watchdogMs, options, write = true }) {
  installWatchdog(watchdogMs);
  return runMain(async () => {
    const facts = await machineFacts();
    log(`machine: ${machineLine(facts)}`);
    const results = [];
    for (const part of parts) results.push(await measurePart(part, options));
    const written = [];
    for (const [i, part] of parts.entries()) {
      if (results[i] === null) continue;
      console.log(`\n${part.heading}\n\n${part.section(results[i], facts)}\n`);
      if (!write) continue;
      await writePart(part, results[i], facts);
      written.push(part.title);
    }
    log(written.length > 0 ? `wrote docs/benchmarks.md (${written.join("; ")})` : "docs/benchmarks.md left alone");
  });
}
