import type { Why } from "../machines/scheduler/placement.js";
import type { SimSteal } from "./scenario.js";

/**
 * Follows the scheduler's task transitions and keeps one record per steal request: STEAL
 * opens it, and whatever takes the task out of `processing.stealing` decides it
 * (STEAL_CONFIRM: confirmed, STEAL_REJECT: rejected, anything else: aborted).
 */
export class SimSteals {
  readonly steals: SimSteal[] = [];
  private readonly open = new Map<string, SimSteal>();

  transition(machine: string, key: string, event: string, from: string, why: Why | undefined, t: number): void {
    if (machine !== "task") return;
    if (event === "STEAL") {
      const steal: SimSteal = {
        key,
        victim: String(why?.victim),
        thief: String(why?.thief),
        level: Number(why?.level),
        requestId: String(why?.requestId),
        requested: t,
        decided: -1,
        outcome: "in-flight",
      };
      this.steals.push(steal);
      this.open.set(key, steal);
      return;
    }
    if (from !== "processing.stealing") return;
    const steal = this.open.get(key);
    if (steal === undefined) return;
    this.open.delete(key);
    steal.decided = t;
    steal.outcome = event === "STEAL_CONFIRM" ? "confirmed" : event === "STEAL_REJECT" ? "rejected" : "aborted";
    if (steal.outcome === "aborted") steal.abortedBy = event;
  }
}
