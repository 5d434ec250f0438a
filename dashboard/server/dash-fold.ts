/**
 * The cluster at a point of its log, as the dashboard shows it: inspect's ClusterFold plus
 * what Dask's dashboard counts and the fold does not keep (tasks done and steals in and out
 * per worker, the bytes each holds, each prefix's progress). Fed records in log order.
 */
import type { LogRecord } from "../../log/types.js";
import { ClusterFold } from "../../log/cluster-fold.js";
import { workerName } from "../../log/cluster-rules.js";
import { clusterAt, type Tally } from "./cluster-at.js";
import { countSteal, moveColumn, moveProcessing, noteBytes, progressRowFor, tally, type ProgressPlace } from "./dash-counts.js";
import type { ClusterAt, ProgressRow } from "./wire-types.js";

export type { ClusterAt, ProgressRow, WorkerRow } from "./wire-types.js";

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
  private readonly columns = new Map<string, ProgressPlace>();
  /** Tasks the scheduler has processing on each worker. */
  private readonly processing = new Map<string, number>();

  add(record: LogRecord): void {
    const task = record.kind === "transition" && record.machine === "task" ? record.id : undefined;
    const before = task === undefined ? undefined : this.cluster.tasks.get(task);
    const beforeWorker = before?.state.startsWith("processing") ? before.worker : undefined;
    this.cluster.add(record);
    if (record.kind === "input") {
      noteBytes(this.nbytes, record.event);
      return;
    }
    if (record.kind !== "transition") return;
    if (record.machine === "wtask" && record.from === "executing" && record.to === "memory") {
      tally(this.tallies, workerName(record.actor)).done++;
    } else if (task !== undefined) {
      const why = record.why as { victim?: unknown; worker?: unknown } | undefined;
      if (record.to === "memory" || record.to === "erred") this.outcome.set(task, record.to);
      if (record.to === "processing.stealing" && typeof why?.victim === "string") this.stealing.set(task, why.victim);
      if (record.event === "STEAL_CONFIRM" && typeof why?.worker === "string") countSteal(this.tallies, why.worker, this.stealing.get(task));
      if (record.from === "processing.stealing") this.stealing.delete(task);
      if (record.to === "forgotten") this.nbytes.delete(task);
      const after = this.cluster.tasks.get(task)!;
      moveProcessing(this.processing, beforeWorker, after.state.startsWith("processing") ? after.worker : undefined);
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
    if (place === undefined) this.columns.set(key, (place = { row: progressRowFor(this.progressRows, key), column: "waiting" }));
    moveColumn(place, state, this.outcome.get(key));
  }

  view(): ClusterAt {
    const { records, last, schedulerState, actors, workers, workerTasks, steals } = this.cluster;
    const { progressRows, tallies, nbytes, processing } = this;
    return clusterAt({ records, last, schedulerState, actors, workers, workerTasks, steals, progressRows, tallies, nbytes, processing });
  }
}
