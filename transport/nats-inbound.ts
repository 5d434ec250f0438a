/**
 * What a subscription does with a NATS message before decoding it: drop a second copy
 * (nats-dedup.ts), put each sender's messages back in order (nats-order.ts), hold fragments
 * until the message is whole (nats-fragments.ts).
 */
import type { Msg as NatsMsg } from "@nats-io/transport-node";
import { BYTES_ENCODING, ENCODING_HEADER } from "./nats-codec.js";
import { DedupFilter } from "./nats-dedup.js";
import { FRAGMENT_HEADER, parseFragmentHeader, Reassembler } from "./nats-fragments.js";
import { SenderOrder, type OrderOptions } from "./nats-order.js";

export const SEQ_HEADER = "Natsched-Seq";
/** The n of the sender's previous message on the same subject; absent when there was none. */
export const PREV_HEADER = "Natsched-Prev";

export interface InboundOptions {
  dedup: boolean;
  /** Per-sender order (needs dedup's tags); false for queue groups and reply inboxes. */
  order: OrderOptions | false;
  maxMessageBytes: number;
  fragmentTimeoutMs: number;
  onDrop: (why: string) => void;
}

export interface WholeMessage {
  subject: string;
  reply: string | undefined;
  body: Uint8Array;
  binary: boolean;
}

/** One NATS message as the receive path keeps it. */
interface Arrival {
  subject: string;
  reply: string | undefined;
  data: Uint8Array;
  binary: boolean;
  fragment: string | undefined;
}

export class Inbound {
  private readonly dedup: DedupFilter | null;
  private readonly order: SenderOrder<Arrival> | null;
  private reassembler: Reassembler | null = null;

  /** `deliver` gets each message once it is whole, new and in order; possibly later than its arrival. */
  constructor(
    private readonly opts: InboundOptions,
    private readonly deliver: (whole: WholeMessage) => void,
  ) {
    this.dedup = opts.dedup ? new DedupFilter() : null;
    this.order = opts.dedup && opts.order !== false ? new SenderOrder<Arrival>(opts.order, (a) => this.assemble(a), opts.onDrop) : null;
  }

  push(msg: NatsMsg): void {
    const hdrs = msg.headers;
    const reply = msg.reply ? msg.reply : undefined;
    if (hdrs === undefined) {
      this.deliver({ subject: msg.subject, reply, body: msg.data, binary: false });
      return;
    }
    const tag = hdrs.get(SEQ_HEADER);
    if (this.dedup !== null && !this.dedup.accept(tag)) return;
    const fragment = hdrs.get(FRAGMENT_HEADER);
    const arrival: Arrival = { subject: msg.subject, reply, data: msg.data, binary: hdrs.get(ENCODING_HEADER) === BYTES_ENCODING, fragment: fragment || undefined };
    const dot = tag ? tag.lastIndexOf(".") : -1;
    const n = dot > 0 ? Number(tag.slice(dot + 1)) : NaN;
    if (this.order === null || !Number.isSafeInteger(n)) {
      this.assemble(arrival);
      return;
    }
    const prev = Number(hdrs.get(PREV_HEADER) || 0);
    this.order.offer(tag.slice(0, dot), msg.subject, n, Number.isSafeInteger(prev) ? prev : 0, arrival, keepCopy);
  }

  close(): void {
    this.order?.close();
    this.reassembler?.clear();
  }

  private assemble(a: Arrival): void {
    if (a.fragment === undefined) {
      this.deliver({ subject: a.subject, reply: a.reply, body: a.data, binary: a.binary });
      return;
    }
    const info = parseFragmentHeader(a.fragment);
    if (info === undefined) {
      this.opts.onDrop(`dropped a message on ${a.subject} with a bad ${FRAGMENT_HEADER} header ${JSON.stringify(a.fragment)}`);
      return;
    }
    this.reassembler ??= new Reassembler(this.opts.maxMessageBytes, this.opts.fragmentTimeoutMs, this.opts.onDrop);
    const whole = this.reassembler.add(info, a.data);
    if (whole !== undefined) this.deliver({ subject: a.subject, reply: a.reply, body: whole, binary: a.binary });
  }
}

/** A held message outlives the client's read buffer its body points into. */
function keepCopy(a: Arrival): Arrival {
  return { ...a, data: Buffer.from(a.data) };
}
