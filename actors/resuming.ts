/**
 * A scheduler resuming from its log says so, so that clients wait for it instead of timing
 * out (docs/nats.md, "Restarting the scheduler"): on `natsched.<cluster>.announce.resuming`,
 * `{v:1, op:"scheduler-resuming", every}` when it starts rebuilding its state and every
 * `every` ms (250) until it serves, then `{v:1, op:"scheduler-resumed"}`. A client that heard
 * the first within the last 4 × `every` ms waits for the scheduler past its request timeout
 * (up to its `resumeWait`), and retries at once on the second.
 */
export type ResumingAnnouncement = { v: 1; op: "scheduler-resuming"; every: number } | { v: 1; op: "scheduler-resumed" };

export function resumingSubject(cluster: string): string {
  return `natsched.${cluster}.announce.resuming`;
}

/** How often a resuming scheduler says so: often enough that a client that just started listening hears it soon. */
export const RESUMING_EVERY_MS = 250;

/** How many announcement intervals a client goes on waiting after the last one it heard. */
export const RESUMING_MISSED = 4;
