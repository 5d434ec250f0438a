/**
 * The task stream arranged for drawing: a row per worker lane, each row's bars in start
 * order (lanes never overlap, so their ends are in order too), found by binary search, so a
 * frame touches only the bars in view. Kept up to date by live deltas without re-sorting.
 */
import type { StreamBar, StreamDeath, StreamSteal, StreamTransfer, StreamWorker, TaskStream, TaskStreamDelta } from "../../tools/task-stream-types.js";

export interface Row {
  worker: string;
  lane: number;
  /** The worker's place in the worker list (rows of one worker are together). */
  workerIndex: number;
}

export class StreamIndex {
  runStart = 0;
  end = 0;
  workers: StreamWorker[] = [];
  rows: Row[] = [];
  bars: StreamBar[] = [];
  transfers: StreamTransfer[] = [];
  steals: StreamSteal[] = [];
  deaths: StreamDeath[] = [];
  /** Executions running at the last live delta (drawn to `end`; not counted as bars until they end). */
  running: StreamBar[] = [];
  /** The longest transfer: how far before the view a transfer in view can start. */
  longestTransfer = 0;
  /** Bar indices per "worker/lane", in start order. */
  private readonly lanes = new Map<string, number[]>();
  /** A worker's first row. */
  private readonly firstRow = new Map<string, number>();

  set(stream: TaskStream): void {
    this.lanes.clear();
    this.bars = [];
    this.marked.length = 0;
    this.transfers = [];
    this.steals = [];
    this.deaths = [];
    this.running = [];
    this.longestTransfer = 0;
    this.end = 0;
    this.apply(stream);
  }

  append(delta: TaskStreamDelta): void {
    this.apply(delta);
    this.running = delta.running ?? [];
  }

  /** The rows of `worker` (first row, count), or undefined if it has none. */
  rowsOf(worker: string): { first: number; count: number } | undefined {
    const first = this.firstRow.get(worker);
    if (first === undefined) return undefined;
    const w = this.workers.find((x) => x.name === worker)!;
    return { first, count: Math.max(w.lanes, 1) };
  }

  /** Bars that did not end well (erred, lost, cancelled): drawn on top, as they are few. */
  readonly marked: number[] = [];

  /** Bar indices of `row`'s lane in start order (and end order). */
  lane(row: number): readonly number[] | undefined {
    const r = this.rows[row];
    return r === undefined ? undefined : this.lanes.get(`${r.worker}/${r.lane}`);
  }

  /** The first position in `list` (a lane) at or after `from` whose bar ends at or after `t`. */
  firstEndingAfter(list: readonly number[], t: number, from = 0): number {
    let lo = from;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.bars[list[mid]!]!.end < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Bar indices of `row` that overlap [t0, t1], in start order. */
  *barsIn(row: number, t0: number, t1: number): Generator<number> {
    const list = this.lane(row);
    if (list === undefined) return;
    for (let i = this.firstEndingAfter(list, t0); i < list.length; i++) {
      const bar = this.bars[list[i]!]!;
      if (bar.start > t1) break;
      yield list[i]!;
    }
  }

  /** The bar on `row` at time `t`, within `slack` seconds either side (the nearest), or -1. */
  hit(row: number, t: number, slack: number): number {
    let best = -1;
    let bestDistance = Infinity;
    for (const i of this.barsIn(row, t - slack, t + slack)) {
      const bar = this.bars[i]!;
      const distance = t < bar.start ? bar.start - t : t > bar.end ? t - bar.end : 0;
      if (distance < bestDistance) {
        best = i;
        bestDistance = distance;
      }
    }
    return best;
  }

  /** Index of the first transfer that may still be in flight at `t` (transfers are kept in start order). */
  firstTransferFrom(t: number): number {
    const from = t - this.longestTransfer;
    let lo = 0;
    let hi = this.transfers.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.transfers[mid]!.start < from) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private apply(part: TaskStream | TaskStreamDelta): void {
    this.runStart = part.runStart;
    this.end = Math.max(part.end, this.end);
    this.workers = part.workers;
    this.rows = [];
    this.firstRow.clear();
    part.workers.forEach((w, workerIndex) => {
      this.firstRow.set(w.name, this.rows.length);
      for (let lane = 0; lane < Math.max(w.lanes, 1); lane++) this.rows.push({ worker: w.name, lane, workerIndex });
    });
    for (const bar of part.bars) {
      const index = this.bars.push(bar) - 1;
      if (bar.outcome !== "ok" && bar.outcome !== "running") this.marked.push(index);
      const id = `${bar.worker}/${bar.lane}`;
      let list = this.lanes.get(id);
      if (list === undefined) this.lanes.set(id, (list = []));
      // Live bars come in the order they end; on one lane that is their start order too.
      if (list.length > 0 && this.bars[list[list.length - 1]!]!.start > bar.start) {
        list.push(index);
        list.sort((a, b) => this.bars[a]!.start - this.bars[b]!.start);
      } else list.push(index);
      if (bar.end > this.end) this.end = bar.end;
    }
    let sorted = true;
    for (const x of part.transfers) {
      const last = this.transfers[this.transfers.length - 1];
      if (last !== undefined && last.start > x.start) sorted = false;
      this.transfers.push(x);
      this.longestTransfer = Math.max(this.longestTransfer, x.end - x.start);
    }
    if (!sorted) this.transfers.sort((a, b) => a.start - b.start);
    this.steals.push(...part.steals);
    this.deaths.push(...part.deaths);
  }
}
