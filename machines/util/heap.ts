/**
 * A binary min-heap that knows where each item sits, so an item can be removed or checked
 * for membership in O(log n) / O(1). Used for the scheduler's queue of root-ish tasks and
 * for a worker's ready tasks.
 */
export class IndexedHeap<T> {
  private readonly items: T[] = [];
  private readonly index = new Map<T, number>();

  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  has(item: T): boolean {
    return this.index.has(item);
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    if (this.index.has(item)) return;
    this.items.push(item);
    this.index.set(item, this.items.length - 1);
    this.up(this.items.length - 1);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.removeAt(0);
    return top;
  }

  remove(item: T): boolean {
    const i = this.index.get(item);
    if (i === undefined) return false;
    this.removeAt(i);
    return true;
  }

  /** The n smallest items in order, without removing them. O(n log n). */
  peekN(n: number): T[] {
    const out: T[] = [];
    if (n <= 0 || this.items.length === 0) return out;
    const frontier = new IndexedHeap<number>((a, b) => this.less(this.items[a]!, this.items[b]!));
    frontier.push(0);
    while (out.length < n && frontier.size > 0) {
      const i = frontier.pop()!;
      out.push(this.items[i]!);
      if (2 * i + 1 < this.items.length) frontier.push(2 * i + 1);
      if (2 * i + 2 < this.items.length) frontier.push(2 * i + 2);
    }
    return out;
  }

  values(): IterableIterator<T> {
    return this.items.values();
  }

  private removeAt(i: number): void {
    const removed = this.items[i]!;
    const last = this.items.pop()!;
    this.index.delete(removed);
    if (i === this.items.length) return;
    this.items[i] = last;
    this.index.set(last, i);
    this.down(i);
    this.up(i);
  }

  private up(i: number): void {
    const { items, index, less } = this;
    const item = items[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent]!;
      if (!less(item, p)) break;
      items[i] = p;
      index.set(p, i);
      i = parent;
    }
    items[i] = item;
    index.set(item, i);
  }

  private down(i: number): void {
    const { items, index, less } = this;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && less(items[r]!, items[l]!) ? r : l;
      if (!less(items[c]!, item)) break;
      items[i] = items[c]!;
      index.set(items[i]!, i);
      i = c;
    }
    items[i] = item;
    index.set(item, i);
  }
}
