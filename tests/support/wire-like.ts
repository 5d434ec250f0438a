/**
 * A transport of the in-process bus that says it has a wire, so the data plane serializes
 * values and pulls big ones in chunks as it does on NATS (actors/data-plane/).
 */
import type { MsgHandler, Payload, RequestOptions, SubscribeOptions, Subscription, Transport, WireInfo } from "../../transport/types.js";

export class WireLike implements Transport {
  readonly wire: WireInfo;

  constructor(
    private readonly inner: Transport,
    maxPayload = 8192,
  ) {
    this.wire = { maxPayload };
  }

  get closed(): boolean {
    return this.inner.closed;
  }

  publish(subject: string, data: Payload, reply?: string): void {
    this.inner.publish(subject, data, reply);
  }

  subscribe(subject: string, handler: MsgHandler, opts?: SubscribeOptions): Subscription {
    return this.inner.subscribe(subject, handler, opts);
  }

  request(subject: string, data: Payload, opts?: RequestOptions): Promise<Payload> {
    return this.inner.request(subject, data, opts);
  }

  flush(): Promise<void> {
    return this.inner.flush();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
