/**
 * The Transport over a real NATS connection. Same semantics as the in-process bus (see
 * types.ts), with the differences a wire brings:
 * - payloads are encoded (nats-codec.ts): JSON, or raw bytes for a Uint8Array;
 * - a message larger than the server's max_payload goes as fragments (nats-fragments.ts),
 *   up to `maxMessageBytes`; beyond that publish throws PayloadTooLargeError;
 * - `flush()` resolves once the server has every message published so far (a round trip),
 *   which for this connection's own subscriptions also means delivered;
 * - across a server restart, messages of the outage window are re-sent and de-duplicated
 *   (nats-resend.ts), so a run survives it;
 * - each sender's messages on a subject are delivered in the order sent, also across a
 *   re-send (nats-order.ts): one that overtakes a missing earlier one waits, for a bounded time.
 */
import { createInbox, errors as natsErrors, nuid, type NatsConnection, type Subscription as NatsSub } from "@nats-io/transport-node";
import { BadOptionError, ClosedError, PayloadTooLargeError, ProtocolError, TimeoutError } from "../machines/errors.js";
import { decodePayload, encodePayload } from "./nats-codec.js";
import { connectNats, type NatsConnectOptions } from "./nats-connect.js";
import { fromNatsError } from "./nats-errors.js";
import { fragmentHeader, splitFragments } from "./nats-fragments.js";
import { encodeHeaders, readHeaders } from "./nats-headers.js";
import { Inbound, type WholeMessage } from "./nats-inbound.js";
import type { OrderOptions } from "./nats-order.js";
import { DEFAULT_RESEND_DELAYS_MS, ResendBuffer, type ResendOptions, type SentMessage } from "./nats-resend.js";
import { assertValidPattern, assertValidSubject } from "./subject-match.js";
import type { Msg, MsgHandler, Payload, RequestOptions, SubscribeOptions, Subscription, Transport, WireInfo } from "./types.js";

export interface NatsTransportOptions {
  /** Close the NATS connection when the transport closes. Default true. */
  ownsConnection?: boolean;
  /** Called when a handler throws or a message cannot be decoded (it is dropped); default console.error. */
  onError?: (error: unknown, msg?: Msg) => void;
  /** Re-send the outage window after a reconnect; `false` turns it (and the per-message header) off. */
  resend?: ResendOptions | false;
  /**
   * Hold a message that overtook a missing earlier one of its sender until the gap fills
   * (nats-order.ts); needs `resend`. `false` delivers in arrival order.
   */
  order?: OrderOptions | false;
  /**
   * Prefix of reply subjects; must match the connection's permissions. Default: the
   * connection's own (`NatsConnectOptions.inboxPrefix`), else "_INBOX".
   */
  inboxPrefix?: string;
  /** Largest message sent (as fragments when above max_payload). Default 256 MiB; 0 refuses anything above max_payload. */
  maxMessageBytes?: number;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 5000;
/** Most subjects whose last sent message is remembered (for the Natsched-Prev header). */
const MAX_PREV_SUBJECTS = 16_384;
/**
 * Reply subjects start so: nats.js's default inbox prefix, and the per-user ones of
 * docs/nats-roles.conf (`_INBOX_<user>`). A reply under another prefix is remembered like any
 * other subject, within the cap.
 */
const REPLY_SUBJECT_PREFIX = "_INBOX";
/** How much longer than its own last re-send delay a receiver waits for a missing message. */
const ORDER_SLACK_MS = 3000;
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
const CLOSE_FLUSH_MS = 2000;
const DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024;
const FRAGMENT_TIMEOUT_MS = 60_000;
/** Room kept in a message for natsched's headers. */
const HEADER_ROOM = 1024;

interface PendingRequest {
  subject: string;
  resolve: (data: Payload) => void;
  reject: (error: unknown) => void;
  timer: ReturnType<typeof setTimeout>;
}

class NatsSubscription implements Subscription {
  constructor(
    readonly subject: string,
    private readonly sub: NatsSub,
    private readonly forget: (s: NatsSubscription) => void,
  ) {}

  unsubscribe(): void {
    if (this.sub.isClosed()) return;
    this.sub.unsubscribe();
    this.forget(this);
  }
}

export class NatsTransport implements Transport {
  /** Connect to NATS (see NatsConnectOptions) and wrap the connection. */
  static async connect(opts: NatsConnectOptions & NatsTransportOptions = {}): Promise<NatsTransport> {
    const nc = await connectNats(opts);
    return new NatsTransport(nc, opts);
  }

  readonly #subscriptions = new Set<NatsSubscription>();
  readonly #pending = new Map<string, PendingRequest>();
  readonly #onError: (error: unknown, msg?: Msg) => void;
  readonly #sender = nuid.next();
  readonly #resend: ResendBuffer | null;
  readonly #reconnectHandlers = new Set<() => void>();
  readonly #inboxPrefix: string;
  #inbox: NatsSub | null = null;
  #seq = 0;
  /** Per subject, the n of the last message sent on it. */
  readonly #lastOnSubject = new Map<string, number>();
  #fragmented = 0;
  #requests = 0;
  #closed = false;

  constructor(
    readonly nc: NatsConnection,
    private readonly options: NatsTransportOptions = {},
  ) {
    this.#onError = options.onError ?? ((error, msg) => console.error(`natsched: ${msg ? `message on ${msg.subject}: ` : ""}`, error));
    // nats.js keeps its connection options on the connection, though its type does not say so.
    this.#inboxPrefix = createInbox(options.inboxPrefix ?? (nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
    this.#resend = options.resend === false ? null : new ResendBuffer(options.resend ?? {}, (m) => this.#send(m));
    void this.#watchStatus();
  }

  get closed(): boolean {
    return this.#closed || this.nc.isClosed();
  }

  get wire(): WireInfo {
    return { maxPayload: this.#maxPayload() };
  }

  publish(subject: string, data: Payload, reply?: string): void {
    if (this.closed) throw new ClosedError("NATS transport");
    assertValidSubject(subject);
    if (reply !== undefined) assertValidSubject(reply, "reply");
    this.#publishEncoded(subject, encodePayload(subject, data), reply);
  }

  subscribe(subject: string, handler: MsgHandler, opts: SubscribeOptions = {}): Subscription {
    if (this.closed) throw new ClosedError("NATS transport");
    assertValidPattern(subject);
    const { queue } = opts;
    if (queue !== undefined && (queue.length === 0 || /\s/.test(queue))) {
      throw new BadOptionError("queue", `invalid queue group ${JSON.stringify(queue)}: must be non-empty without whitespace`);
    }
    // A queue group member sees only some of a sender's messages: it cannot wait for the others.
    const inbound = this.#inbound(queue === undefined, (whole) => this.#dispatch(whole, handler));
    const sub = this.nc.subscribe(subject, {
      ...(queue !== undefined ? { queue } : {}),
      callback: (error, msg) => {
        if (error !== null) {
          this.#report(fromNatsError(error, `subscription ${subject}`));
          return;
        }
        // An exception leaving this callback closes the connection's reader (nats.js): one bad
        // message would cut the process off NATS. Whatever goes wrong here is reported instead.
        try {
          inbound.push(msg);
        } catch (failure) {
          this.#report(failure);
        }
      },
    });
    const wrapped = new NatsSubscription(subject, sub, (s) => {
      inbound.close();
      this.#subscriptions.delete(s);
    });
    this.#subscriptions.add(wrapped);
    return wrapped;
  }

  request(subject: string, data: Payload, opts: RequestOptions = {}): Promise<Payload> {
    if (this.closed) return Promise.reject(new ClosedError("NATS transport"));
    const timeout = opts.timeout ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (!(Number.isFinite(timeout) && timeout > 0)) {
      return Promise.reject(new BadOptionError("timeout", `must be a positive number of milliseconds, got ${String(timeout)}`));
    }
    let encoded;
    try {
      assertValidSubject(subject);
      encoded = encodePayload(subject, data);
    } catch (error) {
      return Promise.reject(error);
    }
    this.#ensureInbox();
    const token = (++this.#requests).toString(36);
    return new Promise<Payload>((resolve, reject) => {
      const timer = setTimeout(() => this.#settle(token, new TimeoutError(`request on ${subject} after ${timeout} ms`)), timeout);
      this.#pending.set(token, { subject, resolve, reject, timer });
      try {
        this.#publishEncoded(subject, encoded, `${this.#inboxPrefix}.${token}`);
      } catch (error) {
        this.#settle(token, error);
      }
    });
  }

  async flush(): Promise<void> {
    if (this.closed) throw new ClosedError("NATS transport");
    try {
      await this.nc.flush();
    } catch (error) {
      throw fromNatsError(error, "flush");
    }
  }

  /** Unsubscribes, rejects pending requests, and (when it owns it) flushes and closes the connection. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#resend?.close();
    for (const token of [...this.#pending.keys()]) this.#settle(token, new ClosedError("NATS transport"));
    for (const sub of [...this.#subscriptions]) sub.unsubscribe();
    if (this.#inbox !== null && !this.#inbox.isClosed()) this.#inbox.unsubscribe();
    if (this.options.ownsConnection === false || this.nc.isClosed()) return;
    await withTimeout(this.nc.flush(), CLOSE_FLUSH_MS).catch(() => undefined);
    await this.nc.close().catch(() => undefined);
  }

  #publishEncoded(subject: string, encoded: { bytes: Uint8Array; binary: boolean }, reply: string | undefined): void {
    const { bytes, binary } = encoded;
    const limit = this.#maxPayload();
    if (bytes.length <= limit - HEADER_ROOM) {
      this.#emit({ subject, reply, bytes, binary, tag: "", prev: 0, fragment: "", at: 0 });
      return;
    }
    const maxMessage = this.options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    if (bytes.length > Math.max(maxMessage, limit - HEADER_ROOM)) {
      throw new PayloadTooLargeError(bytes.length, Math.max(maxMessage, limit - HEADER_ROOM), `payload on ${subject}`);
    }
    const id = `${this.#sender}.${(++this.#fragmented).toString(36)}`;
    const parts = splitFragments(bytes, limit - HEADER_ROOM);
    parts.forEach((part, i) => this.#emit({ subject, reply, bytes: part, binary, tag: "", prev: 0, fragment: fragmentHeader(id, i, parts.length), at: 0 }));
  }

  /** Send one message, tagged and kept for re-sending when that is on. */
  #emit(message: SentMessage): void {
    if (this.#resend !== null) {
      const n = ++this.#seq;
      message.tag = `${this.#sender}.${n}`;
      // A reply goes once to its inbox: nothing to order it after, nor to remember.
      if (!message.subject.startsWith(REPLY_SUBJECT_PREFIX)) {
        message.prev = this.#lastOnSubject.get(message.subject) ?? 0;
        this.#rememberLast(message.subject, n);
      }
      message.at = performance.now();
    }
    this.#send(message);
    this.#resend?.record(message);
  }

  #rememberLast(subject: string, n: number): void {
    // Past the cap (many distinct subjects), start over: the next message on each subject
    // then goes without Natsched-Prev, and is delivered as it arrives.
    if (this.#lastOnSubject.size >= MAX_PREV_SUBJECTS && !this.#lastOnSubject.has(subject)) this.#lastOnSubject.clear();
    this.#lastOnSubject.set(subject, n);
  }

  #send(message: SentMessage): void {
    const headed = message.binary || message.tag !== "" || message.fragment !== "";
    try {
      if (!headed && message.reply === undefined) this.nc.publish(message.subject, message.bytes);
      else {
        this.nc.publish(message.subject, message.bytes, {
          ...(message.reply !== undefined ? { reply: message.reply } : {}),
          ...(headed ? { headers: encodeHeaders(message.binary, message.tag, message.prev, message.fragment) } : {}),
        });
      }
    } catch (error) {
      throw fromNatsError(error, `publish on ${message.subject}`, message.bytes.length, this.#maxPayload());
    }
  }

  #dispatch(whole: WholeMessage, handler: MsgHandler): void {
    let data: Payload;
    let problem = whole.problem;
    if (problem === undefined) {
      try {
        data = decodePayload(whole.subject, whole.body, whole.binary);
      } catch (error) {
        this.#report(error);
        // A request is answered all the same: its handler says what is wrong.
        if (whole.reply === undefined) return;
        problem = (error as Error).message;
      }
    }
    const delivered: Msg =
      problem !== undefined
        ? { subject: whole.subject, data: undefined, reply: whole.reply!, problem }
        : whole.reply !== undefined
          ? { subject: whole.subject, data, reply: whole.reply }
          : { subject: whole.subject, data };
    try {
      const result: unknown = handler(delivered);
      if (isPromiseLike(result)) result.then(undefined, (error: unknown) => this.#report(error, delivered));
    } catch (error) {
      this.#report(error, delivered);
    }
  }

  #ensureInbox(): void {
    if (this.#inbox !== null) return;
    const prefixLength = this.#inboxPrefix.length + 1;
    // One reply per subject: nothing to put in order.
    const inbound = this.#inbound(false, (whole) => {
      const token = whole.subject.slice(prefixLength);
      try {
        this.#settle(token, undefined, decodePayload(whole.subject, whole.body, whole.binary));
      } catch (error) {
        this.#settle(token, error);
      }
    });
    this.#inbox = this.nc.subscribe(`${this.#inboxPrefix}.*`, {
      callback: (error, msg) => {
        if (error !== null) return;
        const token = msg.subject.slice(prefixLength);
        const pending = this.#pending.get(token);
        if (pending === undefined) return;
        const hdrs = readHeaders(msg);
        if (hdrs?.status === 503) {
          // During recovery the responder may just not have resubscribed yet: the re-send will reach it.
          if (!this.#resend?.recovering) this.#settle(token, new ProtocolError(`no responders for request on ${pending.subject}`));
          return;
        }
        // As in subscribe: nothing may leave the callback and close the connection's reader.
        try {
          inbound.push(msg, hdrs);
        } catch (failure) {
          this.#settle(token, failure);
        }
      },
    });
  }

  #inbound(ordered: boolean, deliver: (whole: WholeMessage) => void): Inbound {
    const { order, resend } = this.options;
    // Long enough for a missing message to come with its sender's last re-send (assumed configured like ours).
    const maxWaitMs = Math.max(0, ...(resend ? resend.delaysMs ?? DEFAULT_RESEND_DELAYS_MS : DEFAULT_RESEND_DELAYS_MS)) + ORDER_SLACK_MS;
    return new Inbound(
      {
        dedup: this.#resend !== null,
        order: ordered && order !== false ? { maxWaitMs, ...order } : false,
        maxMessageBytes: this.options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
        fragmentTimeoutMs: FRAGMENT_TIMEOUT_MS,
        onDrop: (why) => this.#report(new ProtocolError(why)),
      },
      deliver,
    );
  }


  #settle(token: string, error: unknown, data?: Payload): void {
    const pending = this.#pending.get(token);
    if (pending === undefined) return;
    this.#pending.delete(token);
    clearTimeout(pending.timer);
    if (error !== undefined) pending.reject(error);
    else pending.resolve(data);
  }

  onReconnect(handler: () => void): () => void {
    this.#reconnectHandlers.add(handler);
    return () => this.#reconnectHandlers.delete(handler);
  }

  async #watchStatus(): Promise<void> {
    try {
      for await (const status of this.nc.status()) {
        if (status.type === "error") {
          if (status.error instanceof natsErrors.PermissionViolationError) this.#refused(status.error);
        } else if (status.type === "disconnect") this.#resend?.disconnected();
        else if (status.type === "reconnect") {
          this.#resend?.reconnected();
          for (const handler of [...this.#reconnectHandlers]) {
            try {
              handler();
            } catch (error) {
              this.#report(error);
            }
          }
        }
      }
    } catch {
      // The iterator ends (or fails) when the connection closes: nothing left to watch.
    }
  }

  /**
   * The server refused a publish (or subscription) for this user's permissions: that comes back
   * only as this asynchronous error. Reported; a request on that subject fails at once with
   * ForbiddenError instead of waiting for its timeout.
   */
  #refused(error: InstanceType<typeof natsErrors.PermissionViolationError>): void {
    const forbidden = fromNatsError(error, `a ${error.operation}`);
    this.#report(forbidden);
    if (error.operation !== "publish") return;
    for (const [token, pending] of [...this.#pending]) if (pending.subject === error.subject) this.#settle(token, forbidden);
  }

  /** The server's limit; it can change when a reconnect lands on another server. */
  #maxPayload(): number {
    return this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
  }

  #report(error: unknown, msg?: Msg): void {
    try {
      this.#onError(error, msg);
    } catch (hookError) {
      console.error("natsched: onError hook threw:", hookError, "while reporting:", error);
    }
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
