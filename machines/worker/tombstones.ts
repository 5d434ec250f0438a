/**
 * A worker's tombstones (WorkerCore.voided): key -> the highest assignment number voided
 * for it, at most `max` of them, the least recently voided dropped first.
 *
 * Not a Map used as a queue: dropping a Map's first entry with `keys().next()` walks past
 * every entry deleted before it (V8 keeps them as holes until the table is rebuilt), so with
 * 65,536 tombstones each drop cost about 25 us and a worker freeing a million keys spent
 * most of its time there. Here the order lives in an array with a moving head: a key voided
 * again leaves a dead slot behind, skipped once when the head passes it; the array is
 * compacted when its passed and dead slots outnumber the live ones. Every operation is O(1) amortized.
 */
export class Tombstones {
  /** key -> [attempt, its slot in `order`]. */
  private readonly entries = new Map<string, { attempt: number; slot: number }>();
  /** Keys from oldest to newest; `undefined` where a key was voided again later (or dropped). */
  private order: (string | undefined)[] = [];
  private head = 0;

  constructor(readonly max: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): number | undefined {
    return this.entries.get(key)?.attempt;
  }

  /** Every assignment of `key` numbered up to `attempt` is void; it becomes the newest tombstone. No-op if one as high is kept. */
  void(key: string, attempt: number): void {
    const old = this.entries.get(key);
    if (old !== undefined) {
      if (old.attempt >= attempt) return;
      this.order[old.slot] = undefined;
      old.attempt = attempt;
      old.slot = this.order.length;
    } else {
      this.entries.set(key, { attempt, slot: this.order.length });
    }
    this.order.push(key);
    if (this.entries.size > this.max) this.dropOldest();
    if (this.order.length > 2 * this.entries.size + 64) this.compact();
  }

  clear(): void {
    this.entries.clear();
    this.order = [];
    this.head = 0;
  }

  /** Oldest first. */
  *keys(): IterableIterator<string> {
    for (let i = this.head; i < this.order.length; i++) {
      const key = this.order[i];
      if (key !== undefined) yield key;
    }
  }

  /** [key, attempt], oldest first. */
  *[Symbol.iterator](): IterableIterator<[string, number]> {
    for (const key of this.keys()) yield [key, this.entries.get(key)!.attempt];
  }

  private dropOldest(): void {
    while (this.head < this.order.length) {
      const key = this.order[this.head];
      this.order[this.head++] = undefined;
      if (key !== undefined) {
        this.entries.delete(key);
        return;
      }
    }
  }

  /** Rewrites `order` with the live keys only (their slots renumbered). */
  private compact(): void {
    const order: string[] = [];
    for (let i = this.head; i < this.order.length; i++) {
      const key = this.order[i];
      if (key === undefined) continue;
      this.entries.get(key)!.slot = order.length;
      order.push(key);
    }
    this.order = order;
    this.head = 0;
  }
}
