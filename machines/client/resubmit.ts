import type { TaskSpec } from "../protocol.js";

/** What a client does about the keys a new run of the scheduler lost (ClientCore.reconciled). */
export interface Resubmission {
  /** The lost keys submitted again, in the order given. */
  again: string[];
  /** The lost keys that cannot be computed again, each with the scattered key it cannot do without. */
  failed: [key: string, lostKey: string][];
  /** The specs to send: those of `again` and, below them, of every task the scheduler does not know. */
  tasks: TaskSpec[];
}

/**
 * Which of `lost` (keys the client holds futures for and the scheduler's new run does not
 * hold for it) can be computed again from the kept `specs`, given the keys the scheduler
 * `known`s: a key with a kept spec whose dependencies are each known or computable again.
 * A key without a kept spec that the scheduler does not know is data the client scattered
 * (or a task of a graph the scheduler refused, a cycle): whatever needs it cannot be.
 */
export function planResubmission(lost: readonly string[], specs: ReadonlyMap<string, TaskSpec>, known: ReadonlySet<string>): Resubmission {
  // Per key: null if it can be computed again, else the key it cannot do without.
  const verdict = new Map<string, string | null>();
  // Depth first without recursion (graphs may be deep chains).
  const check = (root: string): string | null => {
    const stack = [root];
    const visiting = new Set<string>();
    while (stack.length > 0) {
      const key = stack[stack.length - 1]!;
      if (verdict.has(key)) {
        stack.pop();
        continue;
      }
      const kept = key === root || !known.has(key) ? specs.get(key) : undefined;
      if (kept === undefined) {
        verdict.set(key, known.has(key) ? null : key);
        stack.pop();
        continue;
      }
      visiting.add(key);
      let waiting = false;
      let missing: string | null = null;
      for (const dep of kept.deps) {
        if (known.has(dep)) continue;
        const v = verdict.get(dep);
        if (v === undefined) {
          if (visiting.has(dep)) missing ??= dep; // a cycle (a graph the scheduler refused): cannot be resubmitted
          else {
            stack.push(dep);
            waiting = true;
          }
        } else if (v !== null) missing ??= v;
      }
      if (waiting) continue;
      visiting.delete(key);
      verdict.set(key, missing);
      stack.pop();
    }
    return verdict.get(root)!;
  };

  const again: string[] = [];
  const failed: [string, string][] = [];
  for (const key of lost) {
    const missing = known.has(key) && !specs.has(key) ? null : check(key);
    if (missing === null) again.push(key);
    else failed.push([key, missing]);
  }
  const tasks: TaskSpec[] = [];
  if (again.length === 0) return { again, failed, tasks };
  const sent = new Set<string>();
  const resubmitted = new Set(again);
  const stack = [...again];
  while (stack.length > 0) {
    const key = stack.pop()!;
    if (sent.has(key)) continue;
    sent.add(key);
    const kept = specs.get(key);
    if (kept === undefined || (known.has(key) && !resubmitted.has(key))) continue;
    tasks.push(kept);
    for (const dep of kept.deps) if (!known.has(dep)) stack.push(dep);
  }
  return { again, failed, tasks };
}
