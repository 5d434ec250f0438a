import { priorityLess, type Priority } from "../priority.js";

/** What a fetch queue needs of a task: its priority, its holders, and its place in the queues. */
export interface Fetchable {
  priority: Priority;
  readonly holders: ReadonlyMap<string, number>;
  /** When it was queued (a number of the FetchQueues'); -1 while it is not. */
  fetchOrder: number;
}

/** Before in fetch order: by priority, then first queued first (a total order: replay needs one). */
function before(a: Fetchable, b: Fetchable): boolean {
  if (a === b) return false;
  if (priorityLess(a.priority, b.priority)) return true;
  if (priorityLess(b.priority, a.priority)) return false;
  return a.fetchOrder < b.fetchOrder;
}

/**
 * One holder's tasks to fetch, a min-heap in fetch order that knows where each task sits (a
 * task held by several peers sits in each of their heaps, so its place cannot be a property
 * of the task as in IndexedHeap). No function is kept in it: core snapshots restore it.
 */
export class HolderQueue<T extends Fetchable> {
  readonly items: T[] = [];
  readonly at = new Map<T, number>();

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    if (this.at.has(item)) return;
    this.items.push(item);
    this.up(this.items.length - 1);
  }

  remove(item: T): void {
    const i = this.at.get(item);
    if (i === undefined) return;
    const items = this.items;
    const last = items.pop()!;
    this.at.delete(item);
    if (i === items.length) return;
    this.place(last, i);
    this.down(i);
    this.up(i);
  }

  private place(item: T, i: number): void {
    this.items[i] = item;
    this.at.set(item, i);
  }

  private up(i: number): void {
    const items = this.items;
    const item = items[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent]!;
      if (!before(item, p)) break;
      this.place(p, i);
      i = parent;
    }
    this.place(item, i);
  }

  private down(i: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && before(items[r]!, items[l]!) ? r : l;
      if (!before(items[c]!, item)) break;
      this.place(items[c]!, i);
      i = c;
    }
    this.place(item, i);
  }
}

/**
 * A worker's tasks to fetch, kept per peer that holds them (Dask's WorkerState.data_needed):
 * the worker gathers from a peer it is not already gathering from, the one whose first task
 * comes first, and takes that peer's first tasks. A task queued under several holders leaves
 * all their queues when it is taken or removed. Work per input is a look at each holder's
 * first task, whatever the number of tasks waiting for holders already busy.
 */
export class FetchQueues<T extends Fetchable> {
  readonly byHolder = new Map<string, HolderQueue<T>>();
  /** The holders each queued task sits under (usually one). */
  readonly under = new Map<T, string[]>();
  private order = 0;

  get size(): number {
    return this.under.size;
  }

  has(ts: T): boolean {
    return ts.fetchOrder >= 0;
  }

  /** Queue `ts` under each of its holders now (a holder named later joins with holderAdded). */
  push(ts: T): void {
    if (ts.fetchOrder >= 0) return;
    ts.fetchOrder = this.order++;
    const holders: string[] = [];
    for (const holder of ts.holders.keys()) {
      holders.push(holder);
      this.queueOf(holder).push(ts);
    }
    this.under.set(ts, holders);
  }

  remove(ts: T): void {
    if (!(ts.fetchOrder >= 0)) return;
    for (const holder of this.under.get(ts)!) {
      const q = this.byHolder.get(holder)!;
      q.remove(ts);
      if (q.size === 0) this.byHolder.delete(holder);
    }
    this.under.delete(ts);
    ts.fetchOrder = -1;
  }

  /** `holder` now holds `ts`: if it is queued, it waits for that holder too. */
  holderAdded(ts: T, holder: string): void {
    if (!(ts.fetchOrder >= 0)) return;
    const holders = this.under.get(ts)!;
    if (holders.includes(holder)) return;
    holders.push(holder);
    this.queueOf(holder).push(ts);
  }

  /** `holder` no longer holds `ts` (a gather from it failed): it leaves that holder's queue. */
  holderRemoved(ts: T, holder: string): void {
    if (!(ts.fetchOrder >= 0)) return;
    const holders = this.under.get(ts)!;
    const i = holders.indexOf(holder);
    if (i < 0) return;
    holders.splice(i, 1);
    const q = this.byHolder.get(holder)!;
    q.remove(ts);
    if (q.size === 0) this.byHolder.delete(holder);
  }

  /**
   * The holder to gather from next: of those `busy` does not exclude, the one whose first
   * task comes first (a task first in two queues: the holder first in name order).
   */
  nextHolder(busy: ReadonlyMap<string, unknown>): string | undefined {
    let best: string | undefined;
    let top: T | undefined;
    for (const [holder, q] of this.byHolder) {
      if (busy.has(holder)) continue;
      const first = q.peek()!;
      if (top === undefined || before(first, top) || (first === top && holder < best!)) {
        best = holder;
        top = first;
      }
    }
    return best;
  }

  /** Takes up to `max` of `holder`'s tasks, first first, out of every queue. */
  take(holder: string, max: number): T[] {
    const q = this.byHolder.get(holder);
    const out: T[] = [];
    while (q !== undefined && q.size > 0 && out.length < max) {
      const ts = q.peek()!;
      this.remove(ts);
      out.push(ts);
    }
    return out;
  }

  private queueOf(holder: string): HolderQueue<T> {
    let q = this.byHolder.get(holder);
    if (q === undefined) this.byHolder.set(holder, (q = new HolderQueue<T>()));
    return q;
  }
}
