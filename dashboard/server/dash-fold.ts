/**
 * The cluster at a point of its log, as the dashboard shows it: inspect's ClusterFold plus
 * what Dask's dashboard counts and the fold does not keep (tasks done and steals in and out
 * per worker, the bytes each holds, each prefix's progress). Fed records in log order.
 */
import type { LogRecord } from "../../log/types.js";
import { ClusterFold } from "../../tools/cluster-fold.js";
import { inspectView } from "../../tools/inspect-view.js";
import { keySplit } from "../../machines/graph/keys.js";

export interface WorkerRow {
  name: string;
  /** running | stopped | unknown, with the scheduler's state of it and the reason when it stopped. */
  status: string;
  schedulerState?: string;
  reason?: string;
  nthreads?: number;
  executing: string[];
  /** Estimated seconds of compute it holds (the scheduler's estimates of its tasks not yet done). */
  occupancy: number;
  processing: number;
  /** Keys in memory on it, and their bytes as reported. */
  inMemory: number;
  bytes: number;
  done: number;
  stealsIn: number;
  stealsOut: number;
}

/** Dask's progress columns for one prefix; `released`: computed, then let go; `erred` keeps a failure let go. */
export interface ProgressRow {
  prefix: string;
  total: number;
  waiting: number;
  queued: number;
  processing: number;
  memory: number;
  released: number;
  erred: number;
}

export interface ClusterAt {
  /** Records folded, and the last one's actor, seq and `t`. */
  records: number;
  last?: { actor: string; seq: number; t: number };
  schedulerState?: string;
  workers: WorkerRow[];
  progress: ProgressRow[];
  steals: { key: string; victim?: string; thief?: string }[];
}

interface Tally {
  done: number;
  stealsIn: number;
  stealsOut: number;
}

export class DashFold {
  readonly cluster = new ClusterFold();
  private readonly tallies = new Map<string, Tally>();
  private readonly nbytes = new Map<string, number>();
  /** How each key last ended (in memory, or erred): what a released or forgotten key counts as. */
  private readonly outcome = new Map<string, "memory" | "erred">();
  private readonly stealing = new Map<string, string>();

  add(record: LogRecord): void {
    this.cluster.add(record);
    if (record.kind === "input") {
      const e = record.event as { key?: unknown; nbytes?: unknown; keys?: unknown };
      if (typeof e.key === "string" && typeof e.nbytes === "number") this.nbytes.set(e.key, e.nbytes);
      // Scattered data comes as a list of { key, nbytes }.
      if (Array.isArray(e.keys)) for (const k of e.keys as { key?: unknown; nbytes?: unknown }[]) if (typeof k?.key === "string" && typeof k.nbytes === "number") this.nbytes.set(k.key, k.nbytes);
      return;
    }
    if (record.kind !== "transition") return;
    if (record.machine === "wtask" && record.from === "executing" && record.to === "memory") {
      this.tally(workerName(record.actor)).done++;
    } else if (record.machine === "task") {
      const why = record.why as { victim?: unknown; worker?: unknown } | undefined;
      if (record.to === "memory" || record.to === "erred") this.outcome.set(record.id, record.to);
      if (record.to === "processing.stealing" && typeof why?.victim === "string") this.stealing.set(record.id, why.victim);
      if (record.event === "STEAL_CONFIRM" && typeof why?.worker === "string") {
        const victim = this.stealing.get(record.id);
        this.tally(why.worker).stealsIn++;
        if (victim !== undefined) this.tally(victim).stealsOut++;
      }
      if (record.from === "processing.stealing") this.stealing.delete(record.id);
      if (record.to === "forgotten") this.nbytes.delete(record.id);
    }
  }

  private tally(worker: string): Tally {
    let t = this.tallies.get(worker);
    if (t === undefined) this.tallies.set(worker, (t = { done: 0, stealsIn: 0, stealsOut: 0 }));
    return t;
  }

  view(): ClusterAt {
    const inspect = inspectView(this.cluster, "");
    const workers = inspect.workers.map((w): WorkerRow => {
      const tally = this.tallies.get(w.name);
      let inMemory = 0;
      let bytes = 0;
      for (const [key, facts] of this.cluster.workerTasks.get(`worker.${w.name}`) ?? []) {
        if (facts.state !== "memory") continue;
        inMemory++;
        bytes += this.nbytes.get(key) ?? 0;
      }
      const row: WorkerRow = {
        name: w.name,
        status: w.status,
        executing: w.executing,
        occupancy: w.occupancy,
        processing: w.processing,
        inMemory,
        bytes,
        done: tally?.done ?? 0,
        stealsIn: tally?.stealsIn ?? 0,
        stealsOut: tally?.stealsOut ?? 0,
      };
      if (w.scheduler) row.schedulerState = w.scheduler.state;
      const reason = w.stopReason ?? w.scheduler?.reason;
      if (reason !== undefined) row.reason = reason;
      if (w.nthreads !== undefined) row.nthreads = w.nthreads;
      return row;
    });
    const at: ClusterAt = { records: inspect.records, workers, progress: this.progress(), steals: inspect.steals.map(({ key, victim, thief }) => ({ key, victim, thief })) };
    if (inspect.last) at.last = inspect.last;
    if (inspect.scheduler.state !== undefined) at.schedulerState = inspect.scheduler.state;
    return at;
  }

  private progress(): ProgressRow[] {
    const rows = new Map<string, ProgressRow>();
    for (const task of this.cluster.tasks.values()) {
      const prefix = keySplit(task.key);
      let row = rows.get(prefix);
      if (row === undefined) rows.set(prefix, (row = { prefix, total: 0, waiting: 0, queued: 0, processing: 0, memory: 0, released: 0, erred: 0 }));
      row.total++;
      const state = task.state;
      if (state.startsWith("processing")) row.processing++;
      else if (state === "memory") row.memory++;
      else if (state === "erred") row.erred++;
      else if (state === "queued") row.queued++;
      else if (state === "released" || state === "forgotten") {
        const outcome = this.outcome.get(task.key);
        if (outcome === "memory") row.released++;
        else if (outcome === "erred") row.erred++;
        else row.waiting++;
      } else row.waiting++;
    }
    return [...rows.values()].sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0));
  }
}

function workerName(actor: string): string {
  return actor.startsWith("worker.") ? actor.slice("worker.".length) : actor;
}
