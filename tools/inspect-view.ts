/**
 * What `natsched inspect` shows at a cut: per worker, running or stopped and why, what it
 * executes, its occupancy and queued work; the scheduler's tasks and queue; the steals in
 * flight. Built from a ClusterFold (the log alone); times from the run's start.
 */
import type { ClusterFold, WorkerTaskFacts } from "../log/cluster-fold.js";
import { COMPUTE_STATES, runningStatus, workerName } from "../log/cluster-rules.js";
import type { TimeBase } from "../log/time-base.js";

const KEYS_SHOWN = 10;

export interface WorkerView {
  name: string;
  /** From the worker's own records when the log has them, else from the scheduler's. */
  status: "running" | "stopped" | "unknown";
  /** `t` of its stop record, and its reason. */
  stoppedAt?: number;
  stopReason?: string;
  /** The scheduler's worker machine: its state and the reason recorded with it (worker-lost's "killed", a retirement, ...). */
  scheduler?: { state: string; reason?: string; t: number };
  nthreads?: number;
  /** Keys its core executes (none once it stopped). */
  executing: string[];
  /** Its core's tasks by state (empty once it stopped). */
  tasks: Record<string, number>;
  /** Tasks the scheduler has processing on it. */
  processing: number;
  /** Estimated seconds of compute it holds: the scheduler's estimates (compute-task durations) of its tasks not yet done. */
  occupancy: number;
}

export interface SchedulerView {
  /** The scheduler's lifecycle state, or undefined if the log has none. */
  state?: string;
  stopped?: { t: number; reason?: string };
  tasks: Record<string, number>;
  queued: number;
  noWorker: number;
}

export interface InspectView {
  cut: string;
  /** Records taken up to the cut, and the last one's actor, seq and time. */
  records: number;
  last?: { actor: string; seq: number; t: number };
  scheduler: SchedulerView;
  workers: WorkerView[];
  steals: { key: string; victim?: string; thief?: string; requestId?: string; t: number }[];
}

export function inspectView(fold: ClusterFold, cut: string): InspectView {
  const tasks = fold.taskStates();
  const processing = new Map<string, number>();
  for (const task of fold.tasks.values()) {
    if (task.state.startsWith("processing") && task.worker !== undefined) processing.set(task.worker, (processing.get(task.worker) ?? 0) + 1);
  }
  const schedulerActor = fold.actors.get("scheduler");
  const schedulerState = fold.schedulerState;
  const scheduler: SchedulerView = { tasks, queued: tasks.queued ?? 0, noWorker: tasks["no-worker"] ?? 0 };
  if (schedulerState !== undefined) scheduler.state = schedulerState;
  if (schedulerActor?.stopped) scheduler.stopped = { t: schedulerActor.stopped.t, ...(schedulerActor.stopped.reason ? { reason: schedulerActor.stopped.reason } : {}) };

  const names = new Set<string>(fold.workers.keys());
  for (const facts of fold.actors.values()) if (facts.role === "worker") names.add(workerName(facts.actor));
  const workers: WorkerView[] = [];
  for (const name of [...names].sort()) {
    const own = fold.actors.get(`worker.${name}`);
    const seen = fold.workers.get(name);
    const coreTasks = fold.workerTasks.get(`worker.${name}`) ?? new Map<string, WorkerTaskFacts>();
    const counts: Record<string, number> = {};
    const executing: string[] = [];
    let occupancy = 0;
    for (const [key, facts] of coreTasks) {
      counts[facts.state] = (counts[facts.state] ?? 0) + 1;
      if (facts.state === "executing") executing.push(key);
      if (COMPUTE_STATES.has(facts.state)) occupancy += facts.duration ?? 0;
    }
    const status = runningStatus(own, seen);
    const view: WorkerView = { name, status, executing: executing.sort(), tasks: counts, processing: processing.get(name) ?? 0, occupancy };
    if (own?.stopped) {
      view.stoppedAt = own.stopped.t;
      if (own.stopped.reason !== undefined) view.stopReason = own.stopped.reason;
    }
    if (seen !== undefined) view.scheduler = { state: seen.state, t: seen.t, ...(seen.reason !== undefined ? { reason: seen.reason } : {}) };
    const nthreads = own?.nthreads ?? seen?.nthreads;
    if (nthreads !== undefined) view.nthreads = nthreads;
    workers.push(view);
  }
  const steals = [...fold.steals.values()].map((s) => ({ ...s }));
  const last = fold.last;
  return { cut, records: fold.records, ...(last ? { last: { actor: last.actor, seq: last.seq, t: last.t } } : {}), scheduler, workers, steals };
}

/** The view in words, times from the run's start. */
export function formatInspect(view: InspectView, time: TimeBase, total: number): string[] {
  const lines: string[] = [];
  const last = view.last ? `, the last ${view.last.actor} #${view.last.seq} at ${time.at(view.last.t, 3)}` : "";
  lines.push(`cut ${view.cut}: ${view.records} of ${total} records${last}`);
  lines.push(time.describe());
  const s = view.scheduler;
  const state = s.stopped ? `stopped at ${time.at(s.stopped.t, 3)}${s.stopped.reason ? ` (${s.stopped.reason})` : ""}` : (s.state ?? "no record");
  const counts = Object.entries(s.tasks).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k} ${n}`).join(", ");
  lines.push(`scheduler: ${state}; queue: ${s.queued} queued, ${s.noWorker} no-worker; tasks: ${counts || "none"}`);
  lines.push(view.workers.length === 0 ? "workers: none" : "workers:");
  const width = Math.max(0, ...view.workers.map((w) => w.name.length));
  for (const w of view.workers) {
    lines.push(`  ${w.name.padEnd(width)}  ${workerStatus(w, time)}`);
    if (w.status === "stopped") continue;
    const threads = w.nthreads !== undefined ? `${w.executing.length}/${w.nthreads} threads busy` : `${w.executing.length} executing`;
    const queued = Object.entries(w.tasks).filter(([k]) => k !== "executing").sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k} ${n}`).join(", ");
    lines.push(`  ${" ".repeat(width)}  ${threads}, occupancy ${w.occupancy.toFixed(3)} s, processing ${w.processing} (scheduler); on the worker: ${queued || "nothing else"}`);
    if (w.executing.length > 0) lines.push(`  ${" ".repeat(width)}  executing: ${w.executing.slice(0, KEYS_SHOWN).join(", ")}${w.executing.length > KEYS_SHOWN ? `, ... (${w.executing.length})` : ""}`);
  }
  lines.push(view.steals.length === 0 ? "steals in flight: none" : `steals in flight: ${view.steals.length}`);
  for (const steal of view.steals) lines.push(`  ${steal.key}: ${steal.victim ?? "?"} -> ${steal.thief ?? "?"} (request ${steal.requestId ?? "?"}, since ${time.at(steal.t, 3)})`);
  return lines;
}

function workerStatus(w: WorkerView, time: TimeBase): string {
  const seen = w.scheduler ? `scheduler: ${w.scheduler.state}${w.scheduler.reason ? `, ${w.scheduler.reason}` : ""} at ${time.at(w.scheduler.t, 3)}` : "the scheduler never registered it";
  if (w.status === "stopped") {
    const own = w.stoppedAt !== undefined ? `stopped at ${time.at(w.stoppedAt, 3)}: ${w.stopReason ?? "no reason recorded"}` : "stopped";
    return `${own} (${seen}); executes nothing`;
  }
  if (w.status === "unknown") return `no record of it (${seen})`;
  const closed = w.scheduler?.state === "closed" ? "; the scheduler has closed it, its own records go on" : "";
  return `running (${seen})${closed}`;
}
