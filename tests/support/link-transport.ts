/**
 * A Transport over another one whose link the test can cut: while down, nothing it
 * publishes leaves and nothing arrives (as with a network partition); requests fail.
 */
import { ProtocolError } from "../../machines/errors.js";
import type { MsgHandler, Payload, RequestOptions, SubscribeOptions, Subscription, Transport } from "../../transport/types.js";

export class LinkTransport implements Transport {
  private linked = true;

  constructor(private readonly inner: Transport) {}

  down(): void {
    this.linked = false;
  }

  up(): void {
    this.linked = true;
  }

  get closed(): boolean {
    return this.inner.closed;
  }

  publish(subject: string, data: Payload, reply?: string): void {
    if (this.linked) this.inner.publish(subject, data, reply);
  }

  subscribe(subject: string, handler: MsgHandler, opts?: SubscribeOptions): Subscription {
    return this.inner.subscribe(subject, (msg) => (this.linked ? handler(msg) : undefined), opts);
  }

  request(subject: string, data: Payload, opts?: RequestOptions): Promise<Payload> {
    if (!this.linked) return Promise.reject(new ProtocolError(`link down: request on ${subject}`));
    return this.inner.request(subject, data, opts);
  }

  flush(): Promise<void> {
    return this.inner.flush();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
