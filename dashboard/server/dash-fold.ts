/**
 * The cluster at a point of its log, as the dashboard shows it: inspect's ClusterFold plus
 * what Dask's dashboard counts and the fold does not keep (tasks done and steals in and out
 * per worker, the bytes each holds, each prefix's progress). Fed records in log order.
 */
import type { LogRecord } from "../../log/types.js";
import { ClusterFold } from "../../log/cluster-fold.js";
import { keySplit } from "../../machines/graph/keys.js";
import type { ClusterAt, ProgressRow, WorkerRow } from "./wire-types.js";

export type { ClusterAt, ProgressRow, WorkerRow } from "./wire-types.js";

interface Tally {
  done: number;
  stealsIn: number;
  stealsOut: number;
}

type Column = "waiting" | "queued" | "processing" | "memory" | "released" | "erred";

/** Worker-task states whose compute-task estimate counts as work the worker holds (as inspect's). */
const COMPUTE_STATES = new Set(["waiting", "ready", "executing", "resumed", "cancelled"]);

/**
 * Counts kept as records come, not recounted over every task at each view: a live
 * cluster's dashboard views its fold four times a second while the tasks pile up.
 */
export class DashFold {
  constructor(readonly cluster = new ClusterFold()) {}

  private readonly tallies = new Map<string, Tally>();
  private readonly nbytes = new Map<string, number>();
  /** How each key last ended (in memory, or erred): what a released or forgotten key counts as. */
  private readonly outcome = new Map<string, "memory" | "erred">();
  private readonly stealing = new Map<string, string>();
  private readonly progressRows = new Map<string, ProgressRow>();
  /** Each key's progress row and column now. */
  private readonly columns = new Map<string, { row: ProgressRow; column: Column }>();
  /** Tasks the scheduler has processing on each worker. */
  private readonly processing = new Map<string, number>();

  add(record: LogRecord): void {
    const task = record.kind === "transition" && record.machine === "task" ? record.id : undefined;
    const before = task === undefined ? undefined : this.cluster.tasks.get(task);
    const beforeWorker = before?.state.startsWith("processing") ? before.worker : undefined;
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
    } else if (task !== undefined) {
      const why = record.why as { victim?: unknown; worker?: unknown } | undefined;
      if (record.to === "memory" || record.to === "erred") this.outcome.set(task, record.to);
      if (record.to === "processing.stealing" && typeof why?.victim === "string") this.stealing.set(task, why.victim);
      if (record.event === "STEAL_CONFIRM" && typeof why?.worker === "string") {
        const victim = this.stealing.get(task);
        this.tally(why.worker).stealsIn++;
        if (victim !== undefined) this.tally(victim).stealsOut++;
      }
      if (record.from === "processing.stealing") this.stealing.delete(task);
      if (record.to === "forgotten") this.nbytes.delete(task);
      const after = this.cluster.tasks.get(task)!;
      const afterWorker = after.state.startsWith("processing") ? after.worker : undefined;
      if (beforeWorker !== afterWorker) {
        if (beforeWorker !== undefined) this.processing.set(beforeWorker, (this.processing.get(beforeWorker) ?? 1) - 1);
        if (afterWorker !== undefined) this.processing.set(afterWorker, (this.processing.get(afterWorker) ?? 0) + 1);
      }
      this.count(task, after.state);
      // A forgotten task is done with: its progress column keeps it, the fold need not.
      if (after.state === "forgotten") this.cluster.tasks.delete(task);
    }
  }

  /**
   * An independent copy (the model's checkpoints: a scrubber moving back folds on from the
   * latest one before the cut, not from the log's start).
   */
  clone(): DashFold {
    // data() shares its facts objects, which the fold changes in place: a deep copy.
    const copy = new DashFold(ClusterFold.from(structuredClone(this.cluster.data())));
    for (const [worker, t] of this.tallies) copy.tallies.set(worker, { ...t });
    for (const [key, n] of this.nbytes) copy.nbytes.set(key, n);
    for (const [key, o] of this.outcome) copy.outcome.set(key, o);
    for (const [key, victim] of this.stealing) copy.stealing.set(key, victim);
    const rows = new Map<ProgressRow, ProgressRow>();
    for (const [prefix, row] of this.progressRows) {
      const own = { ...row };
      rows.set(row, own);
      copy.progressRows.set(prefix, own);
    }
    for (const [key, place] of this.columns) copy.columns.set(key, { row: rows.get(place.row)!, column: place.column });
    for (const [worker, n] of this.processing) copy.processing.set(worker, n);
    return copy;
  }

  /** Every task key seen, forgotten or not. */
  keys(): IterableIterator<string> {
    return this.columns.keys();
  }

  private count(key: string, state: string): void {
    let place = this.columns.get(key);
    if (place === undefined) {
      const prefix = keySplit(key);
      let row = this.progressRows.get(prefix);
      if (row === undefined) this.progressRows.set(prefix, (row = { prefix, total: 0, waiting: 0, queued: 0, processing: 0, memory: 0, released: 0, erred: 0 }));
      row.total++;
      row.waiting++;
      this.columns.set(key, (place = { row, column: "waiting" }));
    }
    const column = this.column(key, state);
    if (column === place.column) return;
    place.row[place.column]--;
    place.row[column]++;
    place.column = column;
  }

  private column(key: string, state: string): Column {
    if (state.startsWith("processing")) return "processing";
    if (state === "memory" || state === "erred" || state === "queued") return state;
    if (state === "released" || state === "forgotten") {
      const outcome = this.outcome.get(key);
      return outcome === "memory" ? "released" : outcome === "erred" ? "erred" : "waiting";
    }
    return "waiting";
  }

  private tally(worker: string): Tally {
    let t = this.tallies.get(worker);
    if (t === undefined) this.tallies.set(worker, (t = { done: 0, stealsIn: 0, stealsOut: 0 }));
    return t;
  }

  view(): ClusterAt {
    const fold = this.cluster;
    const names = new Set<string>(fold.workers.keys());
    for (const facts of fold.actors.values()) if (facts.role === "worker") names.add(workerName(facts.actor));
    const workers = [...names].sort().map((name) => this.worker(name));
    const steals = [...fold.steals.values()].map(({ key, victim, thief }) => ({ key, ...(victim !== undefined ? { victim } : {}), ...(thief !== undefined ? { thief } : {}) }));
    const progress = [...this.progressRows.values()].map((row) => ({ ...row })).sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0));
    const at: ClusterAt = { records: fold.records, workers, progress, steals };
    if (fold.last) at.last = { actor: fold.last.actor, seq: fold.last.seq, t: fold.last.t };
    if (fold.schedulerState !== undefined) at.schedulerState = fold.schedulerState;
    return at;
  }

  /** A worker as inspect shows it (tools/inspect-view.ts), with the dashboard's counts. */
  private worker(name: string): WorkerRow {
    const fold = this.cluster;
    const own = fold.actors.get(`worker.${name}`);
    const seen = fold.workers.get(name);
    const executing: string[] = [];
    let occupancy = 0;
    let inMemory = 0;
    let bytes = 0;
    for (const [key, facts] of fold.workerTasks.get(`worker.${name}`) ?? []) {
      if (facts.state === "executing") executing.push(key);
      if (COMPUTE_STATES.has(facts.state)) occupancy += facts.duration ?? 0;
      if (facts.state === "memory") {
        inMemory++;
        bytes += this.nbytes.get(key) ?? 0;
      }
    }
    const status = own !== undefined ? (own.stopped ? "stopped" : "running") : seen === undefined ? "unknown" : seen.state === "closed" ? "stopped" : "running";
    const tally = this.tallies.get(name);
    const row: WorkerRow = {
      name,
      status,
      executing: executing.sort(),
      occupancy,
      processing: this.processing.get(name) ?? 0,
      inMemory,
      bytes,
      done: tally?.done ?? 0,
      stealsIn: tally?.stealsIn ?? 0,
      stealsOut: tally?.stealsOut ?? 0,
    };
    if (seen !== undefined) row.schedulerState = seen.state;
    const reason = own?.stopped?.reason ?? seen?.reason;
    if (reason !== undefined) row.reason = reason;
    const nthreads = own?.nthreads ?? seen?.nthreads;
    if (nthreads !== undefined) row.nthreads = nthreads;
    return row;
  }
}

function workerName(actor: string): string {
  return actor.startsWith("worker.") ? actor.slice("worker.".length) : actor;
}
