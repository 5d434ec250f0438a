import { PROTOCOL_VERSION, type Envelope } from "../machines/protocol.js";
import type { Transport } from "../transport/types.js";

/**
 * Batches an actor's outgoing ops per subject and publishes each batch as one Envelope at
 * the end of the current turn, the way Dask's BatchedSend does: one message per
 * destination per turn instead of one per op.
 */
export class Outbox<Op> {
  private pending = new Map<string, Op[]>();
  private scheduled = false;

  constructor(
    private readonly transport: Transport,
    private readonly from: string,
  ) {}

  send(subject: string, op: Op): void {
    let ops = this.pending.get(subject);
    if (ops === undefined) this.pending.set(subject, (ops = []));
    ops.push(op);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.flush());
    }
  }

  flush(): void {
    this.scheduled = false;
    if (this.pending.size === 0 || this.transport.closed) return;
    const batches = this.pending;
    this.pending = new Map();
    for (const [subject, ops] of batches) {
      const envelope: Envelope<Op> = { v: PROTOCOL_VERSION, from: this.from, ops };
      this.transport.publish(subject, envelope);
    }
  }
}
