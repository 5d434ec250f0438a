/**
 * What a subscription does with a NATS message before decoding it: drop a second copy
 * (nats-dedup.ts), hold fragments until the message is whole (nats-fragments.ts).
 */
import type { Msg as NatsMsg } from "@nats-io/transport-node";
import { BYTES_ENCODING, ENCODING_HEADER } from "./nats-codec.js";
import { DedupFilter } from "./nats-dedup.js";
import { FRAGMENT_HEADER, parseFragmentHeader, Reassembler } from "./nats-fragments.js";

export const SEQ_HEADER = "Natsched-Seq";

export interface InboundOptions {
  dedup: boolean;
  maxMessageBytes: number;
  fragmentTimeoutMs: number;
  onDrop: (why: string) => void;
}

export interface WholeMessage {
  body: Uint8Array;
  binary: boolean;
}

export class Inbound {
  private readonly dedup: DedupFilter | null;
  private reassembler: Reassembler | null = null;

  constructor(private readonly opts: InboundOptions) {
    this.dedup = opts.dedup ? new DedupFilter() : null;
  }

  /** The message's body once it is whole and new; undefined while it is not. */
  accept(msg: NatsMsg): WholeMessage | undefined {
    const hdrs = msg.headers;
    if (hdrs === undefined) return { body: msg.data, binary: false };
    if (this.dedup !== null && !this.dedup.accept(hdrs.get(SEQ_HEADER))) return undefined;
    const binary = hdrs.get(ENCODING_HEADER) === BYTES_ENCODING;
    const fragment = hdrs.get(FRAGMENT_HEADER);
    if (!fragment) return { body: msg.data, binary };
    const info = parseFragmentHeader(fragment);
    if (info === undefined) {
      this.opts.onDrop(`dropped a message on ${msg.subject} with a bad ${FRAGMENT_HEADER} header ${JSON.stringify(fragment)}`);
      return undefined;
    }
    this.reassembler ??= new Reassembler(this.opts.maxMessageBytes, this.opts.fragmentTimeoutMs, this.opts.onDrop);
    const whole = this.reassembler.add(info, msg.data);
    return whole === undefined ? undefined : { body: whole, binary };
  }

  close(): void {
    this.reassembler?.clear();
  }
}
