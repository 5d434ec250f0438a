/**
 * The cluster as replayed cores see it: the scheduler's tasks by state, its workers with
 * occupancy, processing and held keys, its queues and in-flight steals; and what each
 * worker core is running, has ready and is fetching.
 */
import type { SchedulerCore } from "../machines/scheduler/core.js";
import type { WorkerCore } from "../machines/worker/core.js";

export interface ClusterStateView {
  /** Where the view was taken. */
  at: { until: "end" } | { until: "seq"; actor: string; seq: number } | { until: "time"; t: number };
  /** The latest time among the records replayed (null if none was). */
  t: number | null;
  scheduler: SchedulerStateView | null;
  /** Worker cores by worker name. */
  workers: Record<string, WorkerCoreView>;
}

export interface SchedulerStateView {
  actor: string;
  state: string;
  /** Task keys by task state, in the order the tasks were created. */
  tasks: Record<string, string[]>;
  /** Root-ish tasks waiting on the scheduler for a free slot (queuing). */
  queued: number;
  /** Tasks no worker can run (restrictions, no workers). */
  noWorker: number;
  clients: number;
  /** The workers the scheduler counts as running, in join order. */
  workers: SchedulerWorkerView[];
  /** Tasks in processing.stealing: a steal request is out to the worker they run on (the victim). */
  steals: { key: string; victim: string | null; thief: string | null; requestId: string | null }[];
  /** Left the replay early (a divergence): the state is the replay's, not the run's. */
  diverged: boolean;
}

export interface SchedulerWorkerView {
  name: string;
  id: string;
  state: string;
  nthreads: number;
  /** Estimated seconds of work booked on it. */
  occupancy: number;
  /** Tasks assigned to it and not finished (running there or waiting for a thread). */
  processing: number;
  /** Keys whose results it holds. */
  held: number;
  nbytes: number;
}

export interface WorkerCoreView {
  actor: string;
  id: string;
  state: string;
  nthreads: number;
  /** The actor had stopped (closed, removed or killed). */
  stopped: boolean;
  diverged: boolean;
  /** Threads busy (a task cancelled while running still holds its thread). */
  executing: number;
  /** Waiting for a thread. */
  ready: number;
  /** Waiting for dependencies. */
  waiting: number;
  /** Dependencies queued to be fetched, and being fetched. */
  fetching: number;
  inFlight: number;
  memory: number;
  /** Task counts by worker-task state. */
  tasks: Record<string, number>;
}

export function schedulerStateView(actor: string, core: SchedulerCore, diverged: boolean): SchedulerStateView {
  const tasks: Record<string, string[]> = {};
  const steals: SchedulerStateView["steals"] = [];
  for (const ts of core.tasks.values()) {
    (tasks[ts.state] ??= []).push(ts.key);
    if (ts.state === "processing.stealing") {
      const thief = core.stealing?.inFlight.get(ts)?.thief.name ?? null;
      steals.push({ key: ts.key, victim: ts.processingOn?.name ?? null, thief, requestId: ts.stealRequest });
    }
  }
  return {
    actor,
    state: core.state,
    tasks,
    queued: core.queued.size,
    noWorker: core.unrunnable.size,
    clients: core.clients.size,
    workers: core.running.map((ws) => ({
      name: ws.name,
      id: ws.id,
      state: ws.state,
      nthreads: ws.nthreads,
      occupancy: ws.occupancy,
      processing: ws.processing.size,
      held: ws.hasWhat.size,
      nbytes: ws.nbytes,
    })),
    steals,
    diverged,
  };
}

export function workerCoreView(actor: string, core: WorkerCore, stopped: boolean, diverged: boolean): WorkerCoreView {
  const tasks: Record<string, number> = {};
  for (const ts of core.tasks.values()) tasks[ts.state] = (tasks[ts.state] ?? 0) + 1;
  return {
    actor,
    id: core.init.id,
    state: core.state,
    nthreads: core.init.nthreads,
    stopped,
    diverged,
    executing: core.executing,
    ready: tasks.ready ?? 0,
    waiting: tasks.waiting ?? 0,
    fetching: tasks.fetch ?? 0,
    inFlight: tasks.flight ?? 0,
    memory: tasks.memory ?? 0,
    tasks,
  };
}
