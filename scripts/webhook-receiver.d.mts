/** A request the receiver got; `event` is the verified body, null when no secret verified it. */
export type Delivery = {
  id: string;
  headers: Record<"webhook-id" | "webhook-timestamp" | "webhook-signature", string>;
  body: string;
  event: { type: string; timestamp: string; data: Record<string, unknown> } | null;
  verifiedWith: string[];
  duplicate: boolean;
  at: number;
  path: string;
};
export type Answer = number | { status: number; headers?: Record<string, string> };
export function startReceiver(options: {
  port?: number;
  secrets: string[];
  answer?: (delivery: Delivery) => Answer | Promise<Answer>;
  log?: (line: string) => void;
}): Promise<{ url: string; deliveries: Delivery[]; close: () => Promise<void> }>;
export function demoWebhookSecret(): Promise<string>;
