import type { Writable } from "node:stream";

/** Whether `text`, one write of the test runner's output, is the log of a connection cut on purpose. */
export function isExpectedDisconnect(text: string): boolean;
/** Makes `stream` drop the writes that are expected-disconnect logs; every other write goes through as it was. */
export function dropExpectedDisconnects(stream: Writable): void;
