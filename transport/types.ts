/**
 * The transport contract every host implements: the in-process bus, NATS, and the
 * simulator's network. Semantics follow NATS core: subjects are dot-separated tokens,
 * `*` matches one token and `>` matches one or more trailing tokens, a queue group
 * delivers each message to one member of the group, request/reply uses a reply subject.
 *
 * Payloads are plain JSON-compatible values (objects, arrays, strings, numbers,
 * booleans, null), or a Uint8Array, which travels as raw bytes. Hosts that cross a process
 * boundary encode them (JSON has no Infinity or NaN: protocol messages never carry them);
 * the in-process bus passes them by reference, so senders must not mutate a payload after
 * publishing it.
 */
export type Payload = unknown;

export interface Msg {
  readonly subject: string;
  readonly data: Payload;
  /** Subject to answer on, when the sender made a request. */
  readonly reply?: string;
  /**
   * Set on a request whose body could not be read (not JSON, a bad or incomplete fragment):
   * what is wrong. `data` is then undefined, and the handler answers with an error saying so
   * (a request never goes unanswered). Messages without a reply subject are reported to the
   * transport's onError and dropped instead.
   */
  readonly problem?: string;
}

export type MsgHandler = (msg: Msg) => void;

export interface SubscribeOptions {
  /** Queue group name: each message goes to exactly one subscriber of the group. */
  queue?: string;
}

export interface Subscription {
  readonly subject: string;
  unsubscribe(): void;
}

export interface RequestOptions {
  /** Milliseconds to wait for the first reply; default 5000. */
  timeout?: number;
}

/** Present on transports whose messages cross a wire (NATS), absent when payloads pass by reference. */
export interface WireInfo {
  /** Largest message in bytes the server accepts; bigger data must be chunked. */
  readonly maxPayload: number;
}

export interface Transport {
  publish(subject: string, data: Payload, reply?: string): void;
  subscribe(subject: string, handler: MsgHandler, opts?: SubscribeOptions): Subscription;
  /** Publish with a fresh reply subject and resolve with the first reply's payload. */
  request(subject: string, data: Payload, opts?: RequestOptions): Promise<Payload>;
  /** Wait until every message published so far has been delivered (to handlers). */
  flush(): Promise<void>;
  close(): Promise<void>;
  readonly closed: boolean;
  /** Set when payloads are encoded onto a wire: the data plane then serializes and chunks values. */
  readonly wire?: WireInfo;
  /**
   * Calls `handler` each time the connection comes back after it was lost (NATS); returns a
   * function that stops it. A transport that cannot lose its connection (in process) has none.
   */
  onReconnect?(handler: () => void): () => void;
}
