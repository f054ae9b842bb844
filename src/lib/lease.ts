import { log } from "./log";

/**
 * Renews a lease every `periodMs` while work runs, so the lease outlives the work only by what is left of it:
 * a process that dies stops renewing, and another may take over when the lease runs out. `renew` answers
 * whether the lease was renewed; once it says no (taken over), renewing stops. A renewal that fails (the call
 * did not get through) is logged and tried again at the next period. Answers the function that stops it.
 */
export function renewEvery(
  periodMs: number,
  renew: () => Promise<boolean>,
  logFields: Record<string, unknown> = {},
): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = true;
  const next = () => {
    timer = setTimeout(async () => {
      let held = true;
      try {
        held = await renew();
      } catch (error) {
        log.warn("renewing a lease failed", { ...logFields, error: String(error) });
      }
      if (held && running) next();
    }, periodMs);
  };
  next();
  return () => {
    running = false;
    clearTimeout(timer);
  };
}
