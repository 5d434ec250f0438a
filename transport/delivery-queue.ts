/**
 * One FIFO of pending deliveries for a whole bus. A single queue keeps every
 * publisher→subscriber pair in order for free. Draining starts in a microtask (so
 * delivery never happens inside `publish`) and goes on in batches.
 *
 * Handlers usually publish from a microtask of their own (an actor's outbox flushes at
 * the end of its turn), so one burst of work is a chain of short drains, each started by
 * a microtask, that never returns to the event loop: timers and I/O would wait for the
 * whole burst. So the queue keeps a budget across drains: once a burst has delivered
 * `batchSize` messages or run for BURST_MS, the next drain starts from setImmediate,
 * which lets timers and I/O run, and the budget starts afresh.
 */
import { microtask } from "./microtask.js";
import type { Msg } from "./types.js";

const DEFAULT_BATCH = 4096;
/** The longest the bus keeps the event loop from turning. */
const BURST_MS = 10;
/** Look at the clock once per this many deliveries. */
const CLOCK_EVERY = 64;

interface FlushWaiter {
  readonly upTo: number;
  readonly resolve: () => void;
}

export class DeliveryQueue<Targets> {
  // Parallel arrays rather than entry objects: one allocation less per message.
  #msgs: (Msg | undefined)[] = [];
  #targets: (Targets | undefined)[] = [];
  #head = 0;
  #scheduled = false;
  #enqueued = 0;
  #processed = 0;
  readonly #waiters: FlushWaiter[] = [];
  /** Deliveries since the event loop last turned (as far as the queue knows), and when they began. */
  #burst = 0;
  #burstStart = 0;
  /** A setImmediate is pending that will tell the queue the event loop turned. */
  #watching = false;

  constructor(
    private readonly deliver: (msg: Msg, targets: Targets) => void,
    private readonly batchSize = DEFAULT_BATCH,
  ) {}

  get pending(): number {
    return this.#enqueued - this.#processed;
  }

  push(msg: Msg, targets: Targets): void {
    this.#msgs.push(msg);
    this.#targets.push(targets);
    this.#enqueued++;
    if (!this.#scheduled) {
      this.#scheduled = true;
      if (this.#overBudget()) setImmediate(this.#drain);
      else microtask(this.#drain);
    }
  }

  /** Resolves once everything pushed so far has been handed to `deliver`. */
  whenDelivered(): Promise<void> {
    if (this.#processed === this.#enqueued) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ upTo: this.#enqueued, resolve }));
  }

  readonly #drain = (): void => {
    const msgs = this.#msgs;
    const targets = this.#targets;
    if (!this.#watching) {
      // Any setImmediate runs only once the loop turns: then the burst is over.
      this.#watching = true;
      this.#burstStart = performance.now();
      setImmediate(this.#turned);
    }
    while (this.#head < msgs.length) {
      if (this.#overBudget()) break;
      const at = this.#head++;
      const msg = msgs[at]!;
      const target = targets[at]!;
      msgs[at] = undefined;
      targets[at] = undefined;
      this.#processed++;
      this.#burst++;
      this.deliver(msg, target);
    }
    this.#compact();
    this.#resolveWaiters();
    if (this.#head < this.#msgs.length) setImmediate(this.#drain);
    else this.#scheduled = false;
  };

  readonly #turned = (): void => {
    this.#watching = false;
    this.#burst = 0;
  };

  #overBudget(): boolean {
    const burst = this.#burst;
    if (burst === 0) return false;
    if (burst >= this.batchSize) return true;
    return burst % CLOCK_EVERY === 0 && performance.now() - this.#burstStart > BURST_MS;
  }

  #compact(): void {
    if (this.#head === this.#msgs.length) {
      this.#msgs.length = 0;
      this.#targets.length = 0;
      this.#head = 0;
    } else if (this.#head > this.#msgs.length / 2) {
      this.#msgs = this.#msgs.slice(this.#head);
      this.#targets = this.#targets.slice(this.#head);
      this.#head = 0;
    }
  }

  #resolveWaiters(): void {
    let done = 0;
    while (done < this.#waiters.length && this.#waiters[done].upTo <= this.#processed) this.#waiters[done++].resolve();
    if (done > 0) this.#waiters.splice(0, done);
  }
}
