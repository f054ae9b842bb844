import { ApiError } from "../http/errors";
/**
 * The external project platform as the publish flow needs it. Implementations: the HTTP client
 * below (production) and the fake in fake.ts (development and tests). docs/platform-api.md is the
 * HTTP contract.
 */
export interface ProjectPlatform {
  /** Whether the store's account is connected to the platform. */
  accountConnected(storeId: string): Promise<boolean>;
  /** Whether a wall or footer project still exists. */
  projectExists(storeId: string, projectId: string): Promise<boolean>;
  /** Connects a course to a product; `missing` when the course was deleted. */
  connectCourse(storeId: string, productId: string, courseId: string): Promise<"connected" | "missing">;
  /** Disconnects a course from a product; a course already gone counts as disconnected. */
  disconnectCourse(storeId: string, productId: string, courseId: string): Promise<void>;
}

/** The platform could not be reached or failed (network error, timeout, 5xx): the publish answers 502. */
export class PlatformUnavailableError extends Error {
  constructor(reason: string) {
    super(`project platform unavailable: ${reason}`);
    this.name = "PlatformUnavailableError";
  }
}

type HttpPlatformOptions = {
  baseUrl: string;
  secret: string;
  timeoutMs?: number;
  fetcher?: typeof fetch;
};

/** The production client: HTTP to `PLATFORM_API_URL` with a bearer secret and a timeout. */
export class HttpProjectPlatform implements ProjectPlatform {
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly fetcher: typeof fetch;

  constructor(private readonly options: HttpPlatformOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.fetcher = options.fetcher ?? ((input, init) => fetch(input, init));
  }

  async accountConnected(storeId: string): Promise<boolean> {
    const response = await this.call("GET", `/accounts/${storeId}`, [200, 404]);
    if (response.status === 404) return false;
    const body = (await response.json().catch(() => null)) as { connected?: unknown } | null;
    if (typeof body?.connected !== "boolean") throw new PlatformUnavailableError("malformed account answer");
    return body.connected;
  }

  async projectExists(storeId: string, projectId: string): Promise<boolean> {
    const response = await this.call("GET", `/accounts/${storeId}/projects/${projectId}`, [200, 404]);
    return response.status === 200;
  }

  async connectCourse(storeId: string, productId: string, courseId: string) {
    const response = await this.call(
      "PUT",
      `/accounts/${storeId}/courses/${courseId}/products/${productId}`,
      [200, 204, 404],
    );
    return response.status === 404 ? "missing" : "connected";
  }

  async disconnectCourse(storeId: string, productId: string, courseId: string) {
    await this.call("DELETE", `/accounts/${storeId}/courses/${courseId}/products/${productId}`, [200, 204, 404]);
  }

  /** One request; anything but the expected statuses means the platform is unavailable. */
  private async call(method: string, path: string, expected: number[]): Promise<Response> {
    let response: Response;
    try {
      response = await this.fetcher(`${this.baseUrl}${path}`, {
        method,
        headers: { Authorization: `Bearer ${this.options.secret}`, Accept: "application/json" },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const reason = error instanceof Error && error.name === "TimeoutError" ? "timeout" : "network error";
      throw new PlatformUnavailableError(`${method} ${path}: ${reason}`);
    }
    if (!expected.includes(response.status)) {
      await response.body?.cancel();
      throw new PlatformUnavailableError(`${method} ${path}: HTTP ${response.status}`);
    }
    return response;
  }
}

/**
 * Used when no platform is configured (no `PLATFORM_API_URL`, development fixtures off): a publish that needs
 * the platform answers 503 naming the variable, as every configuration state does (docs/api.md,
 * "Configuration states"); publishes that need no platform work.
 */
export class UnconfiguredPlatform implements ProjectPlatform {
  private fail(): never {
    throw new ApiError(
      503,
      "The service is not configured correctly: PLATFORM_API_URL is not set, and publishing this product needs the project platform.",
    );
  }
  accountConnected(): Promise<boolean> {
    return this.fail();
  }
  projectExists(): Promise<boolean> {
    return this.fail();
  }
  connectCourse(): Promise<"connected" | "missing"> {
    return this.fail();
  }
  disconnectCourse(): Promise<void> {
    return this.fail();
  }
}
