/** Shared helpers for the simulator tests (tests/sim-*.test.ts). */
import { readSchedulerStart, readWorkerStart } from "../log/start-init.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput } from "../machines/scheduler/inputs.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInit, WorkerInput } from "../machines/worker/inputs.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import { simulate, type Scenario, type SimAction, type SimOptions, type SimResult, type SimTaskSpec } from "../sim.js";
import { isPlacement, readReason, type Why } from "../machines/reasons.js";

export function transitions(log: LogRecord[], filter: Partial<Pick<TransitionRecord, "actor" | "machine" | "id" | "event" | "to">> = {}): TransitionRecord[] {
  return log.filter(
    (r): r is TransitionRecord =>
      r.kind === "transition" &&
      (filter.actor === undefined || r.actor === filter.actor) &&
      (filter.machine === undefined || r.machine === filter.machine) &&
      (filter.id === undefined || r.id === filter.id) &&
      (filter.event === undefined || r.event === filter.event) &&
      (filter.to === undefined || r.to === filter.to),
  );
}

/** Worker each scheduler ASSIGN went to, in order. */
export function assignments(log: LogRecord[]): { key: string; worker: string; t: number }[] {
  return transitions(log, { actor: "scheduler", machine: "task", event: "ASSIGN" }).map((r) => ({
    key: r.id,
    worker: assignedWorker(r),
    t: r.t,
  }));
}

/** The worker a scheduler ASSIGN names (its placement reasons). */
export function assignedWorker(assign: TransitionRecord): string {
  const reason = readReason(assign);
  if (!isPlacement(reason)) throw new Error(`${assign.id}: ${assign.event} has no placement reasons (${reason.kind})`);
  return reason.why.worker;
}

/** How many tasks each worker ran to completion. */
export function tasksPerWorker(result: SimResult): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of Object.values(result.tasks)) if (t.worker !== "") out[t.worker] = (out[t.worker] ?? 0) + 1;
  return out;
}

export function independentTasks(prefix: string, n: number, extra: Partial<SimTaskSpec> = {}): SimTaskSpec[] {
  return Array.from({ length: n }, (_, i) => ({ key: `${prefix}-${i}`, duration: 1, ...extra }));
}

/**
 * A worker's death the scheduler is told of at once, as LocalCluster.killWorker tells it (and
 * as Dask's scheduler sees a worker's connection close, in the tests ported from it): a
 * lose-worker just before the kill. A kill-worker alone is found by the scheduler's liveness
 * check, seconds later (tests/sim-liveness.test.ts).
 */
export function killedToldAtOnce(at: number, worker: string): SimAction[] {
  return [
    { at, do: "lose-worker", worker, back: 0 },
    { at, do: "kill-worker", worker },
  ];
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/**
 * Replays a log the way replay must: each actor's cores rebuilt from its start records,
 * its recorded inputs re-fed in order, and the transitions they make compared with the
 * recorded ones. Returns the actors seen and, per actor, the first mismatch.
 */
export function replayLog(log: LogRecord[]): { actors: string[]; mismatches: string[] } {
  const byActor = new Map<string, LogRecord[]>();
  for (const r of log) {
    let list = byActor.get(r.actor);
    if (list === undefined) byActor.set(r.actor, (list = []));
    list.push(r);
  }
  const mismatches: string[] = [];
  for (const [actor, records] of byActor) {
    const replayed: string[] = [];
    const note = (machine: string, id: string, event: string, from: string, to: string, why?: Why) =>
      replayed.push(JSON.stringify([machine, id, event, from, to, why ?? null]));
    let feed: ((event: unknown) => void) | undefined;
    for (const r of records) {
      if (r.kind === "start" && r.role === "scheduler") {
        const core = new SchedulerCore(readSchedulerStart(r.init).config, { toWorker() {}, toClient() {}, transition: note });
        feed = (event) => core.handle(event as SchedulerInput);
      } else if (r.kind === "start") {
        const core = new WorkerCore(readWorkerStart(r.init), { toScheduler() {}, execute() {}, gather() {}, freeData() {}, transition: note });
        feed = (event) => core.handle(event as WorkerInput);
      } else if (r.kind === "input") {
        feed!(r.event);
      }
    }
    const recorded = records
      .filter((r): r is TransitionRecord => r.kind === "transition")
      .map((r) => JSON.stringify([r.machine, r.id, r.event, r.from, r.to, r.why ?? null]));
    const at = recorded.findIndex((line, i) => line !== replayed[i]);
    if (at >= 0 || recorded.length !== replayed.length) {
      const i = at >= 0 ? at : Math.min(recorded.length, replayed.length);
      mismatches.push(`${actor} #${i}: recorded ${recorded[i] ?? "nothing"}, replayed ${replayed[i] ?? "nothing"}`);
    }
  }
  return { actors: [...byActor.keys()].sort(), mismatches };
}

/**
 * simulate() with Dask's worker-saturation, 1.1, unless the scenario sets its own: the tests
 * ported from Dask (docs/dask-tests-ported.md) and the stealing tests hold to Dask's
 * behaviour, not to natsched's default (adaptive).
 */
export function simulateDask(scenario: Scenario, options?: SimOptions): SimResult {
  return simulate({ ...scenario, config: { workerSaturation: 1.1, ...scenario.config } }, options);
}
