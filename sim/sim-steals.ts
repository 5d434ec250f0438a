import { readReason, type MachineName, type Why } from "../machines/reasons.js";
import type { SimSteal } from "./scenario.js";

/**
 * Follows the scheduler's task transitions and keeps one record per steal request: STEAL
 * opens it, and whatever takes the task out of `processing.stealing` decides it
 * (STEAL_CONFIRM: confirmed, STEAL_REJECT: rejected, anything else: aborted).
 */
export class SimSteals {
  readonly steals: SimSteal[] = [];
  private readonly open = new Map<string, SimSteal>();

  transition(machine: MachineName, key: string, event: string, from: string, why: Why | undefined, t: number): void {
    if (machine !== "task") return;
    if (event === "STEAL") {
      const reason = readReason({ machine, event, why });
      if (reason.kind !== "steal-request") throw new Error(`task ${key}: a steal request without its reasons`);
      const { victim, thief, level, requestId } = reason.why;
      const steal: SimSteal = {
        key,
        victim,
        thief,
        level,
        requestId,
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
