/**
 * Output commit for a host logging to JetStream: a Transport whose `publish` holds each
 * message until the log has stored every record appended before it. Whatever a peer hears
 * from the host (a reply, a compute-task, a key-in-memory) is then explained by records
 * the log holds, so a host rebuilt from its log after a crash is never behind what the rest
 * of the cluster saw; what it had received but not yet stored, the peers re-send (their
 * replies never came) or re-announce (see actors/process/scheduler-resync.ts).
 *
 * Held messages go out in order, as soon as the sink's durable count reaches them (a
 * JetStream round trip, shared by every message of a turn). Requests and subscriptions pass
 * straight through: they are questions, not statements of the host's state.
 */
import { ClosedError } from "../../machines/errors.js";
import type { MsgHandler, Payload, RequestOptions, SubscribeOptions, Subscription, Transport, WireInfo } from "../../transport/types.js";

/** What the gate needs of a sink: JetStreamLogSink. */
export interface DurableCounter {
  readonly appended: number;
  readonly durable: number;
  onDurable(listener: (durable: number) => void): () => void;
}

interface Held {
  subject: string;
  data: Payload;
  reply: string | undefined;
  /** Released once `durable` reaches this. */
  mark: number;
}

export class LogGatedTransport implements Transport {
  private held: Held[] = [];
  private head = 0;
  private readonly stopListening: () => void;

  constructor(
    private readonly inner: Transport,
    private readonly log: DurableCounter,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {
    this.stopListening = log.onDurable(() => this.release());
  }

  get closed(): boolean {
    return this.inner.closed;
  }

  get wire(): WireInfo | undefined {
    return this.inner.wire;
  }

  /** Messages waiting for the log. */
  get holding(): number {
    return this.held.length - this.head;
  }

  publish(subject: string, data: Payload, reply?: string): void {
    if (this.inner.closed) throw new ClosedError("transport");
    const mark = this.log.appended;
    if (this.head === this.held.length && this.log.durable >= mark) {
      this.inner.publish(subject, data, reply);
      return;
    }
    this.held.push({ subject, data, reply, mark });
  }

  subscribe(subject: string, handler: MsgHandler, opts?: SubscribeOptions): Subscription {
    return this.inner.subscribe(subject, handler, opts);
  }

  request(subject: string, data: Payload, opts?: RequestOptions): Promise<Payload> {
    return this.inner.request(subject, data, opts);
  }

  /**
   * A round trip of the inner transport. Held messages are not waited for (a host's liveness
   * checks flush to know it can hear its peers, and must not stall on the log): flush the
   * log first to send them.
   */
  flush(): Promise<void> {
    return this.inner.flush();
  }

  /** Drops what is still held (the log never stored it, so nobody may hear of it). */
  close(): Promise<void> {
    this.stopListening();
    this.held = [];
    this.head = 0;
    return this.inner.close();
  }

  private release(): void {
    const durable = this.log.durable;
    while (this.head < this.held.length && this.held[this.head]!.mark <= durable) {
      const { subject, data, reply } = this.held[this.head]!;
      this.held[this.head++] = undefined as unknown as Held;
      if (this.inner.closed) continue;
      try {
        this.inner.publish(subject, data, reply);
      } catch (error) {
        this.onError(error);
      }
    }
    if (this.head === this.held.length) {
      this.held = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.held.length) {
      this.held = this.held.slice(this.head);
      this.head = 0;
    }
  }
}
