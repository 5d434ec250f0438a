import type { TaskRec } from "./state.js";

/**
 * One level's stealable tasks on one worker: O(1) add and remove, iterated newest first.
 * The newest tasks are the ones the victim would run last (the "bottom of its stack"), so
 * stealing them does not race the victim for the task it is about to start.
 */
export class StealBin {
  private items: (TaskRec | null)[] = [];
  private readonly index = new Map<TaskRec, number>();
  /** Compaction would move entries under a running iteration: it waits until that ends. */
  private iterating = 0;

  get size(): number {
    return this.index.size;
  }

  add(ts: TaskRec): void {
    if (this.index.has(ts)) return;
    this.index.set(ts, this.items.length);
    this.items.push(ts);
  }

  delete(ts: TaskRec): void {
    const i = this.index.get(ts);
    if (i === undefined) return;
    this.index.delete(ts);
    this.items[i] = null;
    if (i === this.items.length - 1) this.trim();
    else if (this.iterating === 0 && this.index.size * 2 < this.items.length) this.compact();
  }

  has(ts: TaskRec): boolean {
    return this.index.has(ts);
  }

  /** Newest first; deleting the yielded task while iterating is allowed. */
  *newestFirst(): Generator<TaskRec> {
    this.iterating++;
    try {
      for (let i = this.items.length - 1; i >= 0; i--) {
        const ts = this.items[i];
        if (ts !== null && ts !== undefined && this.index.get(ts) === i) yield ts;
      }
    } finally {
      this.iterating--;
      if (this.iterating === 0 && this.index.size * 2 < this.items.length) this.compact();
    }
  }

  *all(): Generator<TaskRec> {
    yield* this.index.keys();
  }

  private trim(): void {
    while (this.items.length > 0 && this.items[this.items.length - 1] === null) this.items.pop();
  }

  private compact(): void {
    const kept = this.items.filter((ts): ts is TaskRec => ts !== null);
    this.items = kept;
    kept.forEach((ts, i) => this.index.set(ts, i));
  }
}
