import { expect } from "vitest";

/**
 * A response as `fetch` and the app answer it (`status` a number) or as Playwright sees one (`status()`):
 * what the status helpers below read.
 */
export type AnyResponse = { status: number | (() => number); text(): Promise<string> };

const statusOf = (response: AnyResponse) =>
  typeof response.status === "function" ? response.status() : response.status;

/** A failure message naming the status answered and the body, cut to stay readable. */
function answered(status: number, body: string, label?: string) {
  const shown = body.length > 2_000 ? `${body.slice(0, 2_000)}… (${body.length} characters)` : body;
  return `${label ? `${label}: ` : ""}answered ${status} ${shown || "(empty body)"}`;
}

/**
 * Expects the response's status to be `status`; a failure shows the body the response carried instead. The
 * body is read only on a failure, so the test can still read it afterwards.
 */
export async function expectStatus(response: AnyResponse, status: number, label?: string): Promise<void> {
  const actual = statusOf(response);
  if (actual === status) return;
  const body = await response.text().catch((error: unknown) => `(body unreadable: ${String(error)})`);
  expect(actual, answered(actual, body, label)).toBe(status);
}

/**
 * Expects the response's status to be `status` (a failure shows the body), then answers the body parsed as
 * JSON: status first, then the body, so a wrong answer never fails as a puzzling field mismatch.
 */
export async function expectJson<T = Record<string, unknown>>(
  response: AnyResponse,
  status: number,
  label?: string,
): Promise<T> {
  const body = await response.text();
  const actual = statusOf(response);
  expect(actual, answered(actual, body, label)).toBe(status);
  try {
    return JSON.parse(body) as T;
  } catch {
    return expect.fail(`${answered(actual, body, label)}: not JSON`);
  }
}
