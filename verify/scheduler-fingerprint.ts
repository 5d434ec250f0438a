/**
 * A structural snapshot of a SchedulerCore: every record that decides what it does next,
 * in iteration order (the cores iterate insertion-ordered maps, so order is state too).
 * Two cores with equal fingerprints given the same inputs make the same transitions.
 */
import type { SchedulerCore } from "../machines/scheduler/core.js";
import type { TaskRec, WorkerRec } from "../machines/scheduler/state.js";

const keys = (tasks: Iterable<TaskRec> | null): string[] | null => (tasks === null ? null : [...tasks].map((t) => t.key));
const names = (workers: Iterable<WorkerRec>): string[] => [...workers].map((w) => `${w.name}#${w.id}`);

export function schedulerFingerprint(core: SchedulerCore): unknown {
  const tasks = [...core.tasks.values()].map((ts) => ({
    key: ts.key,
    state: ts.state,
    deps: keys(ts.dependencies),
    dependents: keys(ts.dependents),
    waitingOn: keys(ts.waitingOn),
    waiters: keys(ts.waiters),
    whoWants: ts.whoWants === null ? null : [...ts.whoWants],
    whoHas: names(ts.whoHas),
    processingOn: ts.processingOn === null ? null : `${ts.processingOn.name}#${ts.processingOn.id}`,
    nbytes: ts.nbytes,
    suspicious: ts.suspicious,
    retries: ts.retries,
    retried: ts.retried,
    exception: ts.exception,
    blame: ts.exceptionBlame?.key ?? null,
    priority: ts.priority,
    restrictions: ts.restrictions,
    stealRequest: ts.stealRequest,
    attempt: ts.attempt,
    erredOn: ts.erredOn === null ? null : `${ts.erredOn.name}#${ts.erredOn.id}`,
  }));
  const workers = [...core.workers.values()].map((ws) => ({
    name: ws.name,
    id: ws.id,
    state: ws.state,
    order: ws.order,
    occupancy: ws.occupancy,
    prefixCount: [...ws.prefixCount].map(([p, n]) => [p.name, n]),
    networkBytes: ws.networkBytes,
    processing: keys(ws.processing),
    needsWhat: [...ws.needsWhat].map(([t, n]) => [t.key, n.count, n.bytes]),
    hasWhat: keys(ws.hasWhat),
    nbytes: ws.nbytes,
  }));
  const stealing = core.stealing;
  return {
    state: core.state,
    tasks,
    workers,
    running: names(core.running),
    idle: names(core.idle),
    saturated: names(core.saturated),
    idleTaskCount: names(core.idleTaskCount),
    queued: keys(core.queued.values()),
    unrunnable: keys(core.unrunnable),
    prefixes: [...core.prefixes.values()].map((p) => [p.name, p.durationAverage, p.maxExecTime]),
    groups: [...core.groups.values()].map((g) => [g.name, g.size, g.lastWorker?.name ?? null, g.lastWorkerTasksLeft]),
    clients: [...core.clients].map(([c, set]) => [c, keys(set)]),
    totals: [core.totalNthreads, core.totalOccupancy, core.nAssigned, core.generation, core.now, core.bandwidth, core.networkBytes],
    prefixCount: [...core.prefixCount].map(([p, n]) => [p.name, n]),
    assignments: [core.run, core.attempts],
    stealing:
      stealing === null
        ? null
        : {
            inFlight: [...stealing.inFlight].map(([t, i]) => [t.key, i.victim.name, i.thief.name, i.requestId, i.level, i.victimDuration, i.thiefDuration]),
            inFlightOccupancy: [...stealing.inFlightOccupancy].map(([w, o]) => [w.name, o]),
            metrics: stealing.metrics,
            next: stealing.wantsBalance(),
          },
  };
}
