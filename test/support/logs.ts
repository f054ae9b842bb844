import { afterEach, beforeEach, expect, type MockInstance, vi } from "vitest";

type Level = "warn" | "error";

/**
 * Captures the service's structured log lines (console.warn and console.error) in every test of the calling
 * file or describe block, so the lines a test provokes on purpose are checked instead of printed.
 */
export function captureServiceLogs() {
  const spies: Partial<Record<Level, MockInstance<(...args: unknown[]) => void>>> = {};
  beforeEach(() => {
    spies.warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    spies.error = vi.spyOn(console, "error").mockImplementation(() => {});
  });
  afterEach(() => {
    spies.warn?.mockRestore();
    spies.error?.mockRestore();
  });
  const lines = (level: Level): unknown[] =>
    (spies[level]?.mock.calls ?? []).map(([line]) => {
      try {
        return JSON.parse(String(line));
      } catch {
        return String(line);
      }
    });
  return {
    lines,
    /** Expects one line at `level` in this test with (at least) `fields`. */
    expectLogged(level: Level, fields: Record<string, unknown>) {
      expect(lines(level)).toContainEqual(expect.objectContaining(fields));
    },
  };
}
