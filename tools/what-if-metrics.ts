/**
 * What a run did, measured on its event log: the numbers `natsched what-if` puts side by
 * side. The same measure applies to a recorded log (wall clock) and to a simulated one
 * (virtual clock), so the columns compare like with like.
 */
import type { LogRecord } from "../log/types.js";

export interface WorkerMetrics {
  /** Executions that completed there (results and failures). */
  tasks: number;
  /**
   * Seconds of those executions, summed over threads: from the task machine's EXECUTE to the
   * function's stop (the host's dispatch delay included, as the simulator counts it).
   */
  busy: number;
}

export interface RunMetrics {
  /** Seconds from the origin (the first graph or scatter) to the end of the last completed execution. */
  makespan: number;
  /** Bytes moved between workers (what the receiving workers' gathers got). */
  bytesTransferred: number;
  transfers: number;
  /** Steal requests the scheduler sent, and how many the victims confirmed. */
  stealsRequested: number;
  stealsConfirmed: number;
  /** By worker name. */
  workers: Record<string, WorkerMetrics>;
}

/**
 * Accumulates RunMetrics over a log's records, one at a time (logs of any size stream
 * through). Executions are read from the workers' execute-done / execute-failed inputs; a
 * log without worker records (a scheduler's own log file) falls back to the scheduler's
 * task-finished inputs, which carry the same start and stop.
 */
export class MetricsCollector {
  private bytes = 0;
  private transfers = 0;
  private requested = 0;
  private confirmed = 0;
  private readonly fromWorkers = new Executions();
  private readonly fromScheduler = new Executions();

  /** End of the last completed execution, in log time (-Infinity before any). */
  get lastEnd(): number {
    return (this.fromWorkers.count > 0 ? this.fromWorkers : this.fromScheduler).lastEnd;
  }

  /** When a worker's task entered `executing`, by worker and key: a thread is busy from then. */
  private readonly executing = new Map<string, number>();

  add(record: LogRecord): void {
    if (record.kind === "transition") {
      if (record.machine === "wtask" && record.event === "EXECUTE") this.executing.set(`${record.actor}\u0000${record.id}`, record.t);
      if (record.actor !== "scheduler" || record.machine !== "task") return;
      if (record.event === "STEAL") this.requested += 1;
      else if (record.event === "STEAL_CONFIRM") this.confirmed += 1;
      return;
    }
    if (record.kind !== "input") return;
    const e = record.event as Record<string, unknown>;
    if (record.actor === "scheduler") {
      if (e.op === "task-finished") this.fromScheduler.add(String(e.worker), Number(e.start), Number(e.stop));
      return;
    }
    if (!record.actor.startsWith("worker.")) return;
    if (e.op === "execute-done" || e.op === "execute-failed") {
      const id = `${record.actor}\u0000${String(e.key)}`;
      const executing = this.executing.get(id);
      this.executing.delete(id);
      const start = Number(e.start);
      this.fromWorkers.add(record.actor.slice("worker.".length), executing !== undefined && executing <= start ? executing : start, Number(e.stop));
    } else if (e.op === "gather-done" && Array.isArray(e.received)) {
      for (const item of e.received as { nbytes?: unknown }[]) {
        this.transfers += 1;
        this.bytes += Math.max(Number(item.nbytes) || 0, 0);
      }
    }
  }

  /**
   * The metrics, with times counted from `origin` (log time). `workers` lists these
   * workers even if they ran nothing.
   */
  finish(origin: number, workerNames: Iterable<string> = []): RunMetrics {
    const runs = this.fromWorkers.count > 0 ? this.fromWorkers : this.fromScheduler;
    for (const name of workerNames) runs.worker(name);
    const workers: Record<string, WorkerMetrics> = {};
    for (const name of [...runs.byWorker.keys()].sort()) workers[name] = { ...runs.byWorker.get(name)! };
    const lastEnd = runs.lastEnd;
    return {
      makespan: Number.isFinite(lastEnd) ? Math.max(lastEnd - origin, 0) : 0,
      bytesTransferred: this.bytes,
      transfers: this.transfers,
      stealsRequested: this.requested,
      stealsConfirmed: this.confirmed,
      workers,
    };
  }
}

class Executions {
  readonly byWorker = new Map<string, WorkerMetrics>();
  lastEnd = -Infinity;
  count = 0;

  add(worker: string, start: number, stop: number): void {
    const w = this.worker(worker);
    w.tasks += 1;
    w.busy += stop - start;
    this.count += 1;
    if (stop > this.lastEnd) this.lastEnd = stop;
  }

  worker(name: string): WorkerMetrics {
    let w = this.byWorker.get(name);
    if (w === undefined) this.byWorker.set(name, (w = { tasks: 0, busy: 0 }));
    return w;
  }
}

export function measureLog(records: Iterable<LogRecord>, origin: number, workerNames: Iterable<string> = []): RunMetrics {
  const collector = new MetricsCollector();
  for (const record of records) collector.add(record);
  return collector.finish(origin, workerNames);
}
