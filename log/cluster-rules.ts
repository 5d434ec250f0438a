/**
 * The rules by which a log's records become the cluster's facts, written once for the folds
 * that keep those facts in their own shapes: ClusterFold (inspect, the log index) and the
 * dashboard's lean first fold (dashboard/server/first-fold.ts). Plain functions over the
 * folds' own maps, so the lean fold pays no object per record for sharing them.
 */
import type { TransitionRecord } from "./types.js";

/**
 * The worker a scheduler task has after `record`: the one named by an assignment, a confirmed
 * steal or an error; else the one named by the scheduler's latest input if that input was
 * about this task; else the one it had (`before`). None unless the task is processing, in
 * memory or erred.
 */
export function taskWorker(record: TransitionRecord, why: Record<string, unknown> | undefined, inputKey: unknown, inputWorker: unknown, before: string | undefined): string | undefined {
  const to = record.to;
  if (!(to.startsWith("processing") || to.startsWith("memory") || to.startsWith("erred"))) return undefined;
  // The event first: most transitions have no use for their `why`.
  if ((record.event === "ASSIGN" || record.event === "STEAL_CONFIRM" || to === "erred") && typeof why?.worker === "string") return why.worker;
  if (inputKey === record.id && typeof inputWorker === "string") return inputWorker;
  return before;
}

/** A scheduler worker's reason after a transition to `to`: the one it records, else the one before, kept until it runs again. */
export function workerReason(why: Record<string, unknown> | undefined, before: string | undefined, to: string): string | undefined {
  if (typeof why?.reason === "string") return why.reason;
  return to !== "running" ? before : undefined;
}

/** A worker's compute-task input: the scheduler's estimate of the task's compute time, by worker actor then key. */
export function noteEstimate(durations: Map<string, Map<string, number>>, actor: string, event: Record<string, unknown>): void {
  if (event.op !== "compute-task" || typeof event.key !== "string" || typeof event.duration !== "number") return;
  let own = durations.get(actor);
  if (own === undefined) durations.set(actor, (own = new Map()));
  own.set(event.key, event.duration);
}

/**
 * A worker task's transition: the worker's tasks (made on first use) to set the task's new
 * state in, or undefined when the task has left the worker (released, forgotten), taken out
 * of them with its estimate.
 */
export function workerTasksFor<T>(workerTasks: Map<string, Map<string, T>>, durations: Map<string, Map<string, number>>, record: TransitionRecord): Map<string, T> | undefined {
  let tasks = workerTasks.get(record.actor);
  if (tasks === undefined) workerTasks.set(record.actor, (tasks = new Map()));
  if (record.to === "released" || record.to === "forgotten") {
    tasks.delete(record.id);
    durations.get(record.actor)?.delete(record.id);
    return undefined;
  }
  return tasks;
}

/** Worker-task states whose compute-task estimate counts as work the worker holds (its occupancy). */
export const COMPUTE_STATES: ReadonlySet<string> = new Set(["waiting", "ready", "executing", "resumed", "cancelled"]);

/** A worker's name from its actor ("worker.<name>"). */
export function workerName(actor: string): string {
  return actor.startsWith("worker.") ? actor.slice("worker.".length) : actor;
}

/** A worker running or stopped: from its own records (`own`) when the log has them, else from the scheduler's worker machine (`seen`). */
export function runningStatus(own: { stopped?: unknown } | undefined, seen: { state: string } | undefined): "running" | "stopped" | "unknown" {
  return own !== undefined ? (own.stopped ? "stopped" : "running") : seen === undefined ? "unknown" : seen.state === "closed" ? "stopped" : "running";
}
