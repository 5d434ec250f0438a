/**
 * One FIFO of pending deliveries for a whole bus. A single queue keeps every
 * publisher→subscriber pair in order for free. Draining starts in a microtask (so
 * delivery never happens inside `publish`) and goes on in batches; past a batch it
 * yields with setImmediate so timers and I/O still run while handlers publish
 * back and forth.
 */
import type { Msg } from "./types.js";

const DEFAULT_BATCH = 4096;

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
      queueMicrotask(this.#drain);
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
    let budget = this.batchSize;
    while (this.#head < msgs.length && budget-- > 0) {
      const at = this.#head++;
      const msg = msgs[at]!;
      const target = targets[at]!;
      msgs[at] = undefined;
      targets[at] = undefined;
      this.#processed++;
      this.deliver(msg, target);
    }
    this.#compact();
    this.#resolveWaiters();
    if (this.#head < this.#msgs.length) setImmediate(this.#drain);
    else this.#scheduled = false;
  };

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
