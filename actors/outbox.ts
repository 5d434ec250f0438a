import { PROTOCOL_VERSION, type Envelope } from "../machines/protocol.js";
import type { Transport } from "../transport/types.js";
import { appendOp } from "./op-batch.js";

export interface OutboxOptions {
  /**
   * When the end-of-turn flush runs: `"microtask"` (default) once the current task's
   * microtasks are done; `"immediate"` from setImmediate, after the event loop's I/O
   * callbacks of this iteration, so what several callbacks of one iteration send (a worker's
   * task results) travels together. Neither waits for a timer.
   */
  turn?: "microtask" | "immediate";
  /**
   * Ops that may wait up to `ms` milliseconds for more (Dask's BatchedSend, interval 2 ms to
   * clients): fewer messages, and fewer wake-ups of the receiver, for what nobody's next step
   * waits on: the ops sent as `lazy`, and every op to a subject `matches` accepts.
   */
  linger?: { ms: number; matches?: (subject: string) => boolean };
}

/** The ops waiting for one subject. */
interface Batch<Op> {
  ops: Op[];
  /** Holds an op that goes at the end of the turn (not only ops that may linger). */
  urgent: boolean;
}

/**
 * Batches an actor's outgoing ops per subject and publishes each batch as one Envelope at
 * the end of the current turn, the way Dask's BatchedSend does: one message per
 * destination per turn instead of one per op. With `linger`, ops sent as `lazy` and every op
 * to a subject `linger.matches` may wait up to `linger.ms` for company: a subject whose batch
 * holds only such ops is published by the linger timer, or at the end of the turn in which
 * an urgent op joins it. A subject's ops always go out in the order sent.
 */
export class Outbox<Op> {
  private batches = new Map<string, Batch<Op>>();
  private scheduled = false;
  private lingerTimer: ReturnType<typeof setTimeout> | null = null;
  /** Per subject, whether every op to it lingers (the predicate is asked once per subject). */
  private readonly lingers = new Map<string, boolean>();
  private readonly immediate: boolean;

  constructor(
    private readonly transport: Transport,
    private readonly from: string,
    private readonly opts: OutboxOptions = {},
  ) {
    this.immediate = opts.turn === "immediate";
  }

  /** Queue `op` for `subject`; `lazy`: nobody's next step waits on it, it may linger (free-keys). */
  send(subject: string, op: Op, lazy = false): void {
    let batch = this.batches.get(subject);
    if (batch === undefined) this.batches.set(subject, (batch = { ops: [], urgent: false }));
    appendOp(batch.ops, op);
    const linger = this.opts.linger;
    if (linger !== undefined && (lazy || this.lingersOn(linger, subject))) {
      this.lingerTimer ??= setTimeout(() => this.flushAll(), linger.ms);
      return;
    }
    batch.urgent = true;
    if (!this.scheduled) {
      this.scheduled = true;
      if (this.immediate) setImmediate(() => this.flush());
      else queueMicrotask(() => this.flush());
    }
  }

  /** Publish the batches that hold an urgent op (the others keep waiting for the linger timer). */
  flush(): void {
    this.scheduled = false;
    if (this.batches.size === 0 || this.transport.closed) return;
    for (const [subject, batch] of this.batches) {
      if (!batch.urgent) continue;
      this.batches.delete(subject);
      this.publish(subject, batch.ops);
    }
  }

  /** Publish everything, lingering ops included (the linger timer; a closing actor's last words). */
  flushAll(): void {
    if (this.lingerTimer !== null) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    if (this.batches.size === 0 || this.transport.closed) return;
    const batches = this.batches;
    this.batches = new Map();
    for (const [subject, batch] of batches) this.publish(subject, batch.ops);
  }

  private publish(subject: string, ops: Op[]): void {
    const envelope: Envelope<Op> = { v: PROTOCOL_VERSION, from: this.from, ops };
    this.transport.publish(subject, envelope);
  }

  private lingersOn(linger: NonNullable<OutboxOptions["linger"]>, subject: string): boolean {
    let yes = this.lingers.get(subject);
    if (yes === undefined) {
      if (this.lingers.size >= 4096) this.lingers.clear();
      yes = linger.matches?.(subject) ?? false;
      this.lingers.set(subject, yes);
    }
    return yes;
  }
}
