import type { LogRecord } from "../log/types.js";
import type { LoggedWhy } from "../machines/reasons.js";

/** One machine instance of a key (the scheduler's task, a worker's task) after some records. */
export interface KeyInstance {
  actor: string;
  machine: string;
  state: string;
  /** Its latest transition: event, time, the actor's seq, and reasons if any. */
  event: string;
  t: number;
  seq: number;
  why?: LoggedWhy;
  transitions: number;
}

/** Every machine instance of `key` after `records` (in log order), in order of first appearance. */
export function keyInstances(records: Iterable<LogRecord>, key: string): KeyInstance[] {
  const byInstance = new Map<string, KeyInstance>();
  for (const r of records) {
    if (r.kind !== "transition" || r.id !== key) continue;
    const id = `${r.actor}\u0000${r.machine}`;
    const instance: KeyInstance = { actor: r.actor, machine: r.machine, state: r.to, event: r.event, t: r.t, seq: r.seq, transitions: (byInstance.get(id)?.transitions ?? 0) + 1 };
    if (r.why !== undefined) instance.why = r.why;
    byInstance.set(id, instance);
  }
  return [...byInstance.values()];
}
