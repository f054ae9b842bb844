/**
 * The service's one structured logger: a line of JSON per event, `level` and `message` first, then the
 * event's own fields (snake_case: `request_id`, `upload_id`, `error`…). Warnings go to console.warn and
 * errors to console.error, which Workers Logs keep apart (and the tests capture: test/support/logs.ts).
 */

type Fields = Record<string, unknown>;

export const log = {
  warn(message: string, fields: Fields = {}): void {
    console.warn(JSON.stringify({ level: "warn", message, ...fields }));
  },
  error(message: string, fields: Fields = {}): void {
    console.error(JSON.stringify({ level: "error", message, ...fields }));
  },
};
