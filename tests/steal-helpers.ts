/** Shared helpers for the work-stealing tests (tests/steal-*.test.ts). */
import type { LogRecord } from "../log/types.js";
import type { SimResult, SimView } from "../sim.js";
import { transitions } from "./sim-helpers.js";

/** Keys the scheduler has processing on each worker (join order), in the order they were assigned. */
export function processing(view: SimView): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const ws of view.scheduler.running) out[ws.name] = [...ws.processing].map((ts) => ts.key);
  return out;
}

/** Each steal as "key: victim -> thief (level) outcome". */
export function stealLines(result: SimResult): string[] {
  return result.steals.map((s) => `${s.key}: ${s.victim} -> ${s.thief} (L${s.level}) ${s.outcome}`);
}

/** Executions each worker started, per key, read from the workers' logged transitions. */
export function executionsByWorker(log: LogRecord[]): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const r of transitions(log, { machine: "wtask", event: "EXECUTE" })) {
    const worker = r.actor.replace(/^worker\./, "");
    let keys = out.get(worker);
    if (keys === undefined) out.set(worker, (keys = new Map()));
    keys.set(r.id, (keys.get(r.id) ?? 0) + 1);
  }
  return out;
}

/** Keys that ran (started executing) on each worker. */
export function ranOn(log: LogRecord[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [worker, keys] of executionsByWorker(log)) out[worker] = [...keys.keys()];
  return out;
}

/** A probe that snapshots something at time `at` into `into`. */
export function snapshot<T>(at: number, read: (view: SimView) => T, into: Map<number, T>): { at: number; probe: (view: SimView) => void } {
  return { at, probe: (view) => into.set(at, read(view)) };
}
