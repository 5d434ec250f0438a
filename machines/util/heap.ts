/**
 * A binary min-heap that knows where each item sits, so an item can be removed or checked
 * for membership in O(log n) / O(1). Used for the scheduler's queue of root-ish tasks and
 * for a worker's ready tasks.
 *
 * Each item carries its own position, under a symbol of the heap's (an item may sit in
 * several heaps): moving an item is then a property write, where a Map of positions cost
 * a hash update per move and dominated the scheduler's profile with 100,000 tasks queued.
 * Item classes should declare that property (`[SLOT] = -1`) and pass the symbol: items
 * then keep one hidden class whether or not they were ever in the heap.
 */
export class IndexedHeap<T extends object> {
  private readonly items: T[] = [];

  /** `slot`: the property holding an item's position (-1 or absent: not in this heap); by default one of the heap's own. */
  constructor(
    private readonly less: (a: T, b: T) => boolean,
    private readonly slot: symbol = Symbol("heap position"),
  ) {}

  get size(): number {
    return this.items.length;
  }

  has(item: T): boolean {
    return this.position(item) >= 0;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    if (this.position(item) >= 0) return;
    this.items.push(item);
    this.up(this.items.length - 1);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.removeAt(0);
    return top;
  }

  remove(item: T): boolean {
    const i = this.position(item);
    if (i < 0) return false;
    this.removeAt(i);
    return true;
  }

  /** The n smallest items in order, without removing them. O(n log n). */
  peekN(n: number): T[] {
    const items = this.items;
    if (n <= 0 || items.length === 0) return [];
    if (n === 1) return [items[0]!];
    // Best-first walk of the heap's tree: a small heap of positions (no removals, so no index).
    const out: T[] = [];
    const frontier: number[] = [0];
    const lessAt = (a: number, b: number): boolean => this.less(items[a]!, items[b]!);
    while (out.length < n && frontier.length > 0) {
      const i = frontier[0]!;
      const last = frontier.pop()!;
      if (frontier.length > 0) siftDown(frontier, 0, last, lessAt);
      out.push(items[i]!);
      if (2 * i + 1 < items.length) siftUp(frontier, 2 * i + 1, lessAt);
      if (2 * i + 2 < items.length) siftUp(frontier, 2 * i + 2, lessAt);
    }
    return out;
  }

  values(): IterableIterator<T> {
    return this.items.values();
  }

  private position(item: T): number {
    const i = (item as Record<symbol, number | undefined>)[this.slot];
    return i === undefined ? -1 : i;
  }

  private place(item: T, i: number): void {
    this.items[i] = item;
    (item as Record<symbol, number>)[this.slot] = i;
  }

  private removeAt(i: number): void {
    const items = this.items;
    const removed = items[i]!;
    const last = items.pop()!;
    (removed as Record<symbol, number>)[this.slot] = -1;
    if (i === items.length) return;
    this.place(last, i);
    this.down(i);
    this.up(i);
  }

  private up(i: number): void {
    const { items, less } = this;
    const item = items[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent]!;
      if (!less(item, p)) break;
      this.place(p, i);
      i = parent;
    }
    this.place(item, i);
  }

  private down(i: number): void {
    const { items, less } = this;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && less(items[r]!, items[l]!) ? r : l;
      if (!less(items[c]!, item)) break;
      this.place(items[c]!, i);
      i = c;
    }
    this.place(item, i);
  }
}

/** Pushes `value` onto a plain array heap. */
function siftUp(heap: number[], value: number, less: (a: number, b: number) => boolean): void {
  let i = heap.length;
  heap.push(value);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!less(value, heap[parent]!)) break;
    heap[i] = heap[parent]!;
    i = parent;
  }
  heap[i] = value;
}

/** Puts `value` at `i` of a plain array heap and sifts it down. */
function siftDown(heap: number[], i: number, value: number, less: (a: number, b: number) => boolean): void {
  const n = heap.length;
  for (;;) {
    const l = 2 * i + 1;
    if (l >= n) break;
    const r = l + 1;
    const c = r < n && less(heap[r]!, heap[l]!) ? r : l;
    if (!less(heap[c]!, value)) break;
    heap[i] = heap[c]!;
    i = c;
  }
  heap[i] = value;
}
