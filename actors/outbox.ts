import { PROTOCOL_VERSION, type Envelope } from "../machines/protocol.js";
import type { Transport } from "../transport/types.js";

export interface OutboxOptions {
  /**
   * When the end-of-turn flush runs: `"microtask"` (default) once the current task's
   * microtasks are done; `"immediate"` from setImmediate, after the event loop's I/O
   * callbacks of this iteration, so what several callbacks of one iteration send (a worker's
   * task results) travels together. Neither waits for a timer.
   */
  turn?: "microtask" | "immediate";
  /**
   * Subjects whose ops may wait up to `ms` milliseconds for more (Dask's BatchedSend to
   * clients, interval 2 ms): fewer messages, and fewer wake-ups of the receiver, for reports
   * nobody's next step waits on. Every op to such a subject waits, so its order is kept.
   */
  linger?: { ms: number; matches: (subject: string) => boolean };
}

/**
 * Batches an actor's outgoing ops per subject and publishes each batch as one Envelope at
 * the end of the current turn, the way Dask's BatchedSend does: one message per
 * destination per turn instead of one per op. Subjects chosen by `linger` are sent at most
 * every `linger.ms` instead.
 */
export class Outbox<Op> {
  private pending = new Map<string, Op[]>();
  private scheduled = false;
  private lingering = new Map<string, Op[]>();
  private lingerTimer: ReturnType<typeof setTimeout> | null = null;
  /** Per subject, whether it lingers (the predicate is asked once per subject). */
  private readonly lingers = new Map<string, boolean>();
  private readonly immediate: boolean;

  constructor(
    private readonly transport: Transport,
    private readonly from: string,
    private readonly opts: OutboxOptions = {},
  ) {
    this.immediate = opts.turn === "immediate";
  }

  send(subject: string, op: Op): void {
    if (this.opts.linger !== undefined && this.lingersOn(subject)) {
      let ops = this.lingering.get(subject);
      if (ops === undefined) this.lingering.set(subject, (ops = []));
      ops.push(op);
      this.lingerTimer ??= setTimeout(() => this.flushLingering(), this.opts.linger.ms);
      return;
    }
    let ops = this.pending.get(subject);
    if (ops === undefined) this.pending.set(subject, (ops = []));
    ops.push(op);
    if (!this.scheduled) {
      this.scheduled = true;
      if (this.immediate) setImmediate(() => this.flush());
      else queueMicrotask(() => this.flush());
    }
  }

  /** Publish what this turn sent (lingering subjects keep waiting for their timer). */
  flush(): void {
    this.scheduled = false;
    if (this.pending.size === 0 || this.transport.closed) return;
    const batches = this.pending;
    this.pending = new Map();
    this.publish(batches);
  }

  /** Publish everything, lingering subjects included (a closing actor's last words). */
  flushAll(): void {
    this.flush();
    this.flushLingering();
  }

  private flushLingering(): void {
    if (this.lingerTimer !== null) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    if (this.lingering.size === 0 || this.transport.closed) return;
    const batches = this.lingering;
    this.lingering = new Map();
    this.publish(batches);
  }

  private publish(batches: Map<string, Op[]>): void {
    for (const [subject, ops] of batches) {
      const envelope: Envelope<Op> = { v: PROTOCOL_VERSION, from: this.from, ops };
      this.transport.publish(subject, envelope);
    }
  }

  private lingersOn(subject: string): boolean {
    let yes = this.lingers.get(subject);
    if (yes === undefined) {
      if (this.lingers.size >= 4096) this.lingers.clear();
      yes = this.opts.linger!.matches(subject);
      this.lingers.set(subject, yes);
    }
    return yes;
  }
}
