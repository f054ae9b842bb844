// The shared pieces of the `npm run bench` scripts, each in a focused module of scripts/lib (the runner and its
// steps, reports, servers, fixture, HTTP, memory), gathered here for the scripts that import them from one place.
export * from "./lib/bench-fixture.mjs";
export * from "./lib/bench-http.mjs";
export * from "./lib/bench-memory.mjs";
export * from "./lib/bench-report.mjs";
export * from "./lib/bench-run.mjs";
export * from "./lib/bench-runner.mjs";
export * from "./lib/bench-server.mjs";
