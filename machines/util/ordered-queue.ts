import { IndexedHeap } from "./heap.js";

/**
 * A priority queue for items that mostly arrive in priority order (the scheduler's queue
 * of root-ish tasks: update-graph makes a graph's tasks runnable in priority order, and a
 * later graph's tasks come after an earlier one's). Same operations and results as
 * IndexedHeap for a strict order (no two items compare equal), with the common case cheap:
 *
 * - an item that comes after the last one appended to the in-order run is appended too, O(1);
 * - anything else goes to an IndexedHeap sharing the items' position property;
 * - the smallest item is the smaller of the run's head and the heap's top, so popping the
 *   head of an in-order run costs O(1) instead of the O(log n) sift-down a heap pays;
 * - an item removed from the middle of the run leaves a hole, skipped when the head gets
 *   there; the run's array is compacted once holes and the consumed prefix make up half of it.
 *
 * With items that compare equal the order among them is still deterministic (a function
 * of the sequence of operations) but may differ from IndexedHeap's; callers needing the
 * heap's exact order must use a strict order (the scheduler's priorities are distinct:
 * generation and graph order make each one unique).
 *
 * Positions live in a property of each item (see IndexedHeap): -1 or absent when not
 * queued, i >= 0 at heap index i (the heap's own bookkeeping), and -2 - j at run index j
 * (which the heap reads as "not mine").
 */
export class OrderedQueue<T extends object> {
  private readonly heap: IndexedHeap<T>;
  /** The in-order run: [runHead, run.length), with holes (undefined) where items were removed. */
  private run: (T | undefined)[] = [];
  private runHead = 0;
  /** Items in the run (holes not counted). */
  private runCount = 0;
  /** The item appended to the run last (perhaps removed since): what the next one must come after. */
  private runTail: T | undefined = undefined;

  constructor(
    private readonly less: (a: T, b: T) => boolean,
    private readonly slot: symbol = Symbol("queue position"),
  ) {
    this.heap = new IndexedHeap(less, slot);
  }

  get size(): number {
    return this.heap.size + this.runCount;
  }

  has(item: T): boolean {
    return this.position(item) !== -1;
  }

  peek(): T | undefined {
    const fromRun = this.runCount > 0 ? this.run[this.runHead] : undefined;
    const top = this.heap.peek();
    if (fromRun === undefined) return top;
    if (top === undefined) return fromRun;
    return this.less(top, fromRun) ? top : fromRun;
  }

  push(item: T): void {
    if (this.position(item) !== -1) return;
    if (this.runCount === 0 || this.less(this.runTail!, item)) this.appendToRun(item);
    else this.heap.push(item);
  }

  pop(): T | undefined {
    const top = this.peek();
    if (top !== undefined) this.remove(top);
    return top;
  }

  remove(item: T): boolean {
    const i = this.position(item);
    if (i === -1) return false;
    if (i >= 0) return this.heap.remove(item);
    const j = -2 - i;
    const run = this.run;
    run[j] = undefined;
    (item as Record<symbol, number>)[this.slot] = -1;
    this.runCount--;
    if (this.runCount === 0) {
      this.clearRun();
      return true;
    }
    if (j === this.runHead) {
      let head = j + 1;
      while (run[head] === undefined) head++;
      this.runHead = head;
    }
    // Compact once the holes and the consumed prefix are half the array.
    if (run.length >= 64 && this.runCount * 2 < run.length) this.compactRun();
    return true;
  }

  /** The n smallest items in order, without removing them: the run's first n merged with the heap's. */
  peekN(n: number): T[] {
    if (n <= 0 || this.size === 0) return [];
    if (n === 1) return [this.peek()!];
    const fromHeap = this.heap.peekN(n);
    const run = this.run;
    const out: T[] = [];
    let h = 0;
    let r = this.runCount > 0 ? this.runHead : run.length;
    while (out.length < n) {
      const fromRun = r < run.length ? run[r] : undefined;
      const top = h < fromHeap.length ? fromHeap[h] : undefined;
      if (fromRun === undefined && top === undefined) break;
      // Ties go to the run, as peek() does.
      if (top === undefined || (fromRun !== undefined && !this.less(top, fromRun))) {
        out.push(fromRun!);
        for (r++; r < run.length && run[r] === undefined; r++);
      } else {
        out.push(top);
        h++;
      }
    }
    return out;
  }

  /** Every item: the heap's, then the run's in order. */
  *values(): IterableIterator<T> {
    yield* this.heap.values();
    const run = this.run;
    for (let j = this.runHead; j < run.length; j++) {
      const item = run[j];
      if (item !== undefined) yield item;
    }
  }

  private position(item: T): number {
    const i = (item as Record<symbol, number | undefined>)[this.slot];
    return i === undefined ? -1 : i;
  }

  private appendToRun(item: T): void {
    (item as Record<symbol, number>)[this.slot] = -2 - this.run.length;
    this.run.push(item);
    this.runCount++;
    this.runTail = item;
  }

  private clearRun(): void {
    this.run = [];
    this.runHead = 0;
    this.runTail = undefined;
  }

  private compactRun(): void {
    const old = this.run;
    const run: T[] = [];
    for (let j = this.runHead; j < old.length; j++) {
      const item = old[j];
      if (item === undefined) continue;
      (item as Record<symbol, number>)[this.slot] = -2 - run.length;
      run.push(item);
    }
    this.run = run;
    this.runHead = 0;
  }
}
