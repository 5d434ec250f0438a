import { PROTOCOL_VERSION, type Envelope } from "../machines/protocol.js";
import type { Transport } from "../transport/types.js";
import { microtask } from "../transport/microtask.js";
import { appendOp } from "./host/op-batch.js";

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
  /** Milliseconds, for how long a subject was quiet (default performance.now; tests give their own). */
  now?: () => number;
}

/** The ops waiting for one subject. Kept from turn to turn: a batch object per subject, not per message. */
interface Batch<Op> {
  readonly subject: string;
  ops: Op[];
  /** Holds an op that goes at the end of the turn (not only ops that may linger). */
  urgent: boolean;
  /** In `pending` (it holds ops). */
  pending: boolean;
  /** When it was last published (performance.now() ms; -Infinity: never). */
  publishedAt: number;
}

/** Past this many subjects, batches that hold nothing are forgotten (clients come and go). */
const MAX_KEPT_BATCHES = 4096;

/**
 * Batches an actor's outgoing ops per subject and publishes each batch as one Envelope at
 * the end of the current turn, the way Dask's BatchedSend does: one message per
 * destination per turn instead of one per op. With `linger`, ops sent as `lazy` and every op
 * to a subject `linger.matches` may wait up to `linger.ms` for company: a subject whose batch
 * holds only such ops is published by the linger timer, or at the end of the turn in which
 * an urgent op joins it. A subject's ops always go out in the order sent; subjects go out in
 * the order of their first op.
 */
export class Outbox<Op> {
  private readonly batches = new Map<string, Batch<Op>>();
  /** The batches that hold ops, in the order of their first op. */
  private pending: Batch<Op>[] = [];
  private scheduled = false;
  private lingerTimer: ReturnType<typeof setTimeout> | null = null;
  private armScheduled = false;
  /** Per subject, whether every op to it lingers (the predicate is asked once per subject). */
  private readonly lingers = new Map<string, boolean>();
  private readonly immediate: boolean;
  private readonly flushNow = (): void => this.flush();
  private readonly flushAllNow = (): void => this.flushAll();
  /** End of a turn that queued a lingering op: start the linger timer if ops still wait (an end-of-turn flush does it itself). */
  private readonly armLinger = (): void => {
    this.armScheduled = false;
    if (!this.scheduled) this.startLingerTimer();
  };
  private readonly now: () => number;

  constructor(
    private readonly transport: Transport,
    private readonly from: string,
    private readonly opts: OutboxOptions = {},
  ) {
    this.immediate = opts.turn === "immediate";
    this.now = opts.now ?? (() => performance.now());
  }

  /** Queue `op` for `subject`; `lazy`: nobody's next step waits on it, it may linger (free-keys). */
  send(subject: string, op: Op, lazy = false): void {
    let batch = this.batches.get(subject);
    if (batch === undefined) {
      if (this.batches.size >= MAX_KEPT_BATCHES) this.forgetIdleBatches();
      this.batches.set(subject, (batch = { subject, ops: [], urgent: false, pending: false, publishedAt: -Infinity }));
    }
    if (!batch.pending) {
      batch.pending = true;
      this.pending.push(batch);
    }
    // A batch's first op makes an array of one (most batches hold one or two ops).
    if (batch.ops.length === 0) batch.ops = [op];
    else appendOp(batch.ops, op);
    const linger = this.opts.linger;
    if (linger !== undefined && (lazy || this.lingersOn(linger, subject))) {
      // The timer is set at the end of the turn, if the op is still waiting then: most turns
      // that queue a lingering op also publish it (an urgent op's flush takes it along), and a
      // cleared timer still wakes the event loop when it would have fired.
      if (this.lingerTimer === null && !this.armScheduled) {
        this.armScheduled = true;
        microtask(this.armLinger);
      }
      return;
    }
    batch.urgent = true;
    if (!this.scheduled) {
      this.scheduled = true;
      if (this.immediate) setImmediate(this.flushNow);
      else microtask(this.flushNow);
    }
  }

  /**
   * Publish the batches that hold an urgent op, and the lingering batches of subjects that
   * were quiet for the linger time: the urgent ones are written to the socket now anyway, and
   * a quiet subject has no company coming, so its ops ride along instead of costing a write of
   * their own when the timer fires (at low rates, one socket write a turn instead of two).
   * The other lingering batches keep waiting for the timer.
   */
  flush(): void {
    this.scheduled = false;
    const pending = this.pending;
    if (pending.length === 0 || this.transport.closed) return;
    const lingerMs = this.opts.linger?.ms ?? 0;
    let now = -1;
    let kept = 0;
    let i = 0;
    try {
      for (; i < pending.length; i++) {
        const batch = pending[i]!;
        if (batch.urgent) this.publish(batch);
        else if ((now < 0 ? (now = this.now()) : now) - batch.publishedAt >= lingerMs) this.publish(batch, now);
        else pending[kept++] = batch;
      }
    } finally {
      // After a publish threw (its batch is gone), the batches not reached stay for next time.
      for (i++; i < pending.length; i++) pending[kept++] = pending[i]!;
      pending.length = kept;
      // Nothing left to linger: no wake-up for an empty timer.
      if (kept === 0 && this.lingerTimer !== null) {
        clearTimeout(this.lingerTimer);
        this.lingerTimer = null;
      } else if (kept > 0) this.startLingerTimer();
    }
  }

  /** Publish everything, lingering ops included (the linger timer; a closing actor's last words). */
  flushAll(): void {
    if (this.lingerTimer !== null) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    if (this.pending.length === 0 || this.transport.closed) return;
    const pending = this.pending;
    this.pending = [];
    let i = 0;
    try {
      for (; i < pending.length; i++) this.publish(pending[i]!);
    } finally {
      for (i++; i < pending.length; i++) this.pending.push(pending[i]!);
    }
  }

  /** Publishes a batch's ops and empties it (the envelope keeps the ops array: a receiver may hold on to it). */
  private publish(batch: Batch<Op>, now?: number): void {
    const envelope: Envelope<Op> = { v: PROTOCOL_VERSION, from: this.from, ops: batch.ops };
    batch.ops = [];
    batch.urgent = false;
    batch.pending = false;
    if (this.opts.linger !== undefined) batch.publishedAt = now ?? this.now();
    this.transport.publish(batch.subject, envelope);
  }

  private startLingerTimer(): void {
    const linger = this.opts.linger;
    if (linger === undefined || this.lingerTimer !== null || this.pending.length === 0 || this.transport.closed) return;
    this.lingerTimer = setTimeout(this.flushAllNow, linger.ms);
  }

  private forgetIdleBatches(): void {
    for (const [subject, batch] of this.batches) if (!batch.pending) this.batches.delete(subject);
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
