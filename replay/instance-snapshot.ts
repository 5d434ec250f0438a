/**
 * Plain-JSON pictures of one machine instance inside a core (a task, a worker, the
 * scheduler), for the state diff of a divergence. Long collections are cut to their first
 * entries and size, so a diff stays readable next to a task with 100,000 dependents.
 */
import type { SchedulerCore } from "../machines/scheduler/core.js";
import type { TaskRec, WorkerRec } from "../machines/scheduler/state.js";
import type { WorkerCore, WTask } from "../machines/worker/core.js";

const MAX_LISTED = 20;

function list(values: Iterable<string>): string[] | { size: number; first: string[] } {
  const out: string[] = [];
  let size = 0;
  for (const value of values) {
    if (size++ < MAX_LISTED) out.push(value);
  }
  return size <= MAX_LISTED ? out : { size, first: out };
}

function* keys(tasks: Iterable<{ key: string }>): Iterable<string> {
  for (const ts of tasks) yield ts.key;
}

function* names(workers: Iterable<{ name: string }>): Iterable<string> {
  for (const ws of workers) yield ws.name;
}

/** `undefined` when the core has no such instance (a task not created yet, or forgotten). */
export function schedulerInstance(core: SchedulerCore, machine: string, id: string): unknown {
  switch (machine) {
    case "task": {
      const ts = core.tasks.get(id);
      return ts === undefined ? undefined : schedulerTask(ts);
    }
    case "worker": {
      const ws = core.workers.get(id);
      return ws === undefined ? undefined : schedulerWorker(ws);
    }
    case "scheduler":
      return { state: core.state, workers: core.running.length, tasks: core.tasks.size, queued: core.queued.size, noWorker: core.unrunnable.size };
    default:
      return undefined;
  }
}

export function schedulerTask(ts: TaskRec): Record<string, unknown> {
  return {
    state: ts.state,
    priority: ts.priority,
    func: ts.func,
    processingOn: ts.processingOn?.name ?? null,
    stealRequest: ts.stealRequest,
    whoHas: list(names(ts.whoHas)),
    waitingOn: ts.waitingOn === null ? null : list(keys(ts.waitingOn)),
    waiters: ts.waiters === null ? null : list(keys(ts.waiters)),
    whoWants: ts.whoWants === null ? null : list(ts.whoWants),
    dependencies: list(keys(ts.dependencies)),
    dependents: list(keys(ts.dependents)),
    nbytes: ts.nbytes,
    suspicious: ts.suspicious,
    exception: ts.exception,
    exceptionBlame: ts.exceptionBlame?.key ?? null,
    restrictions: ts.restrictions,
  };
}

export function schedulerWorker(ws: WorkerRec): Record<string, unknown> {
  return {
    state: ws.state,
    id: ws.id,
    nthreads: ws.nthreads,
    occupancy: ws.occupancy,
    processing: list(keys(ws.processing)),
    needsWhat: list(keys(ws.needsWhat.keys())),
    hasWhat: list(keys(ws.hasWhat)),
    nbytes: ws.nbytes,
  };
}

export function workerCoreInstance(core: WorkerCore, machine: string, id: string): unknown {
  switch (machine) {
    case "wtask": {
      const ts = core.tasks.get(id);
      return ts === undefined ? undefined : workerTask(ts);
    }
    case "worker":
      return { state: core.state, executing: core.executing, tasks: core.tasks.size };
    default:
      return undefined;
  }
}

export function workerTask(ts: WTask): Record<string, unknown> {
  return {
    state: ts.state,
    requested: ts.requested,
    priority: ts.priority,
    func: ts.func,
    missing: ts.missing,
    holders: list(ts.holders.keys()),
    nbytes: ts.nbytes,
    dependencies: list(keys(ts.dependencies)),
    dependents: list(keys(ts.dependents)),
  };
}
