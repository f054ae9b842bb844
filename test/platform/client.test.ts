import { describe, expect, it } from "vitest";
import { HttpProjectPlatform, PlatformUnavailableError } from "../../src/platform/client";

type Handler = (request: Request) => Response | Promise<Response>;

function platformAnswering(handler: Handler, timeoutMs = 200) {
  const seen: Request[] = [];
  const platform = new HttpProjectPlatform({
    baseUrl: "https://platform.example/v1/",
    secret: "s3cret",
    timeoutMs,
    fetcher: async (input, init) => {
      const request = new Request(input, init);
      seen.push(request);
      return handler(request);
    },
  });
  return { platform, seen };
}

const store = "6c1f0e7a-0000-4000-8000-000000000001";
const product = "6c1f0e7a-0000-4000-8000-000000000002";
const course = "6c1f0e7a-0000-4000-8000-000000000003";

describe("the HTTP project platform client (docs/platform-api.md)", () => {
  it("sends the bearer secret to the documented paths", async () => {
    const { platform, seen } = platformAnswering(() => Response.json({ connected: true }));
    expect(await platform.accountConnected(store)).toBe(true);
    expect(seen[0]?.method).toBe("GET");
    expect(seen[0]?.url).toBe(`https://platform.example/v1/accounts/${store}`);
    expect(seen[0]?.headers.get("Authorization")).toBe("Bearer s3cret");
  });

  it("reads an unknown account (404) as not connected", async () => {
    const { platform } = platformAnswering(() => new Response(null, { status: 404 }));
    expect(await platform.accountConnected(store)).toBe(false);
  });

  it("reads project existence from 200 / 404", async () => {
    const { platform, seen } = platformAnswering(
      (request) => new Response(null, { status: request.url.endsWith("/projects/p1") ? 200 : 404 }),
    );
    expect(await platform.projectExists(store, "p1")).toBe(true);
    expect(await platform.projectExists(store, "p2")).toBe(false);
    expect(seen[0]?.url).toBe(`https://platform.example/v1/accounts/${store}/projects/p1`);
  });

  it("connects with PUT and reports a deleted course (404) as missing", async () => {
    const { platform, seen } = platformAnswering(
      (request) => new Response(null, { status: request.method === "PUT" ? 404 : 204 }),
    );
    expect(await platform.connectCourse(store, product, course)).toBe("missing");
    expect(seen[0]?.url).toBe(`https://platform.example/v1/accounts/${store}/courses/${course}/products/${product}`);
    await platform.disconnectCourse(store, product, course);
    expect(seen[1]?.method).toBe("DELETE");
  });

  const failures: [string, Handler][] = [
    ["a 5xx", () => new Response("boom", { status: 503 })],
    ["an unexpected status", () => new Response(null, { status: 401 })],
    [
      "a network error",
      () => {
        throw new TypeError("fetch failed");
      },
    ],
    ["a malformed account answer", () => Response.json({ connected: "yes" })],
  ];
  for (const [name, handler] of failures) {
    it(`maps ${name} to unavailable`, async () => {
      const { platform } = platformAnswering(handler);
      await expect(platform.accountConnected(store)).rejects.toBeInstanceOf(PlatformUnavailableError);
    });
  }

  it("maps a timeout to unavailable", async () => {
    const { platform } = platformAnswering(
      (request) =>
        new Promise((_, reject) => {
          request.signal.addEventListener("abort", () => reject(request.signal.reason));
        }),
      50,
    );
    await expect(platform.projectExists(store, "p1")).rejects.toThrow(/timeout/);
  });
});
