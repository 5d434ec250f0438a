/**
 * What a subscription does with a NATS message before decoding it: drop a second copy
 * (nats-dedup.ts), put each sender's messages back in order (nats-order.ts), hold fragments
 * until the message is whole (nats-fragments.ts).
 */
import type { Msg as NatsMsg } from "@nats-io/transport-node";
import { DedupFilter } from "./nats-dedup.js";
import { FRAGMENT_HEADER, parseFragmentHeader, Reassembler } from "./nats-fragments.js";
import { readHeaders, type NatschedHeaders } from "./nats-headers.js";
import { SenderOrder, type OrderOptions } from "./nats-order.js";

export { PREV_HEADER, SEQ_HEADER } from "./nats-headers.js";

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
  /**
   * Set on a request given up (a bad fragment header, fragments too large or incomplete):
   * what is wrong, for the handler's error reply. The body is then empty.
   */
  problem?: string;
}

const EMPTY = new Uint8Array(0);

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

  /** `hdrs`: the message's headers when the caller has read them already. */
  push(msg: NatsMsg, hdrs: NatschedHeaders | undefined = readHeaders(msg)): void {
    const reply = msg.reply ? msg.reply : undefined;
    if (hdrs === undefined) {
      this.deliver({ subject: msg.subject, reply, body: msg.data, binary: false });
      return;
    }
    const tag = hdrs.seq;
    const dot = tag ? tag.lastIndexOf(".") : -1;
    const n = dot > 0 ? Number(tag.slice(dot + 1)) : NaN;
    const tagged = Number.isSafeInteger(n);
    const sender = tagged ? tag.slice(0, dot) : "";
    if (this.dedup !== null && tagged && !this.dedup.acceptParsed(sender, n)) return;
    const arrival: Arrival = { subject: msg.subject, reply, data: msg.data, binary: hdrs.binary, fragment: hdrs.fragment || undefined };
    if (this.order === null || !tagged) {
      this.assemble(arrival);
      return;
    }
    const prev = Number(hdrs.prev || 0);
    this.order.offer(sender, msg.subject, n, Number.isSafeInteger(prev) ? prev : 0, arrival, keepCopy);
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
      this.giveUp(a.subject, a.reply, `dropped a message on ${a.subject} with a bad ${FRAGMENT_HEADER} header ${JSON.stringify(a.fragment)} (expected <id>/<index>/<count>)`);
      return;
    }
    this.reassembler ??= new Reassembler(this.opts.maxMessageBytes, this.opts.fragmentTimeoutMs, (why, reply, subject) => this.giveUp(subject, reply, why));
    const whole = this.reassembler.add(info, a.data, a.reply, a.subject);
    if (whole !== undefined) this.deliver({ subject: a.subject, reply: a.reply, body: whole, binary: a.binary });
  }

  /** A message that cannot be put together: reported; a request is also delivered, empty, with why (its handler answers). */
  private giveUp(subject: string, reply: string | undefined, why: string): void {
    this.opts.onDrop(why);
    if (reply !== undefined) this.deliver({ subject, reply, body: EMPTY, binary: false, problem: why });
  }
}

/** A held message outlives the client's read buffer its body points into. */
function keepCopy(a: Arrival): Arrival {
  return { ...a, data: Buffer.from(a.data) };
}
