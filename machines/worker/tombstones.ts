/**
 * A worker's tombstones (WorkerCore.voided): key -> the highest assignment number voided
 * for it, at most `max` of them, the least recently voided dropped first.
 *
 * Not a Map used as a queue: dropping a Map's first entry with `keys().next()` walks past
 * every entry deleted before it (V8 keeps them as holes until the table is rebuilt): at the
 * bound each drop walked tens of thousands of holes, and a worker freeing a million keys spent
 * most of its time there. Here the order lives in arrays with a moving head: a key voided
 * again leaves a dead slot behind, skipped once when the head passes it. Slots are numbered
 * for ever (`base` is the number of the arrays' first), so cutting off the passed part renumbers
 * nothing; the arrays are rebuilt only when dead slots outnumber the live ones. Every
 * operation is O(1) amortized, and a tombstone is a Map entry and two array slots, no object.
 */
export class Tombstones {
  /** key -> the number of its slot. */
  private readonly slotOf = new Map<string, number>();
  /** Per slot from `base` on, oldest first: the key (`undefined` once voided again later or dropped) and its number. */
  private keysAt: (string | undefined)[] = [];
  private attemptsAt: number[] = [];
  private base = 0;
  /** Index (in the arrays) of the oldest slot not passed yet. */
  private head = 0;

  constructor(readonly max: number) {}

  get size(): number {
    return this.slotOf.size;
  }

  get(key: string): number | undefined {
    const slot = this.slotOf.get(key);
    return slot === undefined ? undefined : this.attemptsAt[slot - this.base];
  }

  /** Every assignment of `key` numbered up to `attempt` is void; it becomes the newest tombstone. No-op if one as high is kept. */
  void(key: string, attempt: number): void {
    const old = this.slotOf.get(key);
    if (old !== undefined) {
      if (this.attemptsAt[old - this.base]! >= attempt) return;
      this.keysAt[old - this.base] = undefined;
    }
    this.slotOf.set(key, this.base + this.keysAt.length);
    this.keysAt.push(key);
    this.attemptsAt.push(attempt);
    if (this.slotOf.size > this.max) this.dropOldest();
    if (this.head >= 1024 && 2 * this.head >= this.keysAt.length) this.cutPassed();
    else if (this.keysAt.length - this.head > 2 * this.slotOf.size + 64) this.rebuild();
  }

  clear(): void {
    this.slotOf.clear();
    this.keysAt = [];
    this.attemptsAt = [];
    this.base = 0;
    this.head = 0;
  }

  /** Oldest first. */
  *keys(): IterableIterator<string> {
    for (let i = this.head; i < this.keysAt.length; i++) {
      const key = this.keysAt[i];
      if (key !== undefined) yield key;
    }
  }

  /** [key, attempt], oldest first. */
  *[Symbol.iterator](): IterableIterator<[string, number]> {
    for (let i = this.head; i < this.keysAt.length; i++) {
      const key = this.keysAt[i];
      if (key !== undefined) yield [key, this.attemptsAt[i]!];
    }
  }

  private dropOldest(): void {
    const keys = this.keysAt;
    while (this.head < keys.length) {
      const key = keys[this.head];
      keys[this.head++] = undefined;
      if (key !== undefined) {
        this.slotOf.delete(key);
        return;
      }
    }
  }

  /** Forgets the slots the head has passed (no key's number changes). */
  private cutPassed(): void {
    this.keysAt = this.keysAt.slice(this.head);
    this.attemptsAt = this.attemptsAt.slice(this.head);
    this.base += this.head;
    this.head = 0;
  }

  /** Rewrites the arrays with the live slots only (every live key renumbered). */
  private rebuild(): void {
    const keys: string[] = [];
    const attempts: number[] = [];
    const base = this.base;
    for (let i = this.head; i < this.keysAt.length; i++) {
      const key = this.keysAt[i];
      if (key === undefined) continue;
      this.slotOf.set(key, base + keys.length);
      keys.push(key);
      attempts.push(this.attemptsAt[i]!);
    }
    this.keysAt = keys;
    this.attemptsAt = attempts;
    this.head = 0;
  }
}
