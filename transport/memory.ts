/**
 * The in-process transport with NATS core semantics. A MemoryBus plays the server;
 * each `bus.connect()` is one connection (one per actor or client).
 *
 * Matching happens at publish time (that is when "no responders" is decided and when a
 * queue group member is picked); a subscription that goes away before delivery is
 * skipped, one that arrives after the publish does not get the message.
 */
import { BadOptionError, ClosedError, PayloadTooLargeError, ProtocolError, TimeoutError } from "../machines/errors.js";
import { DeliveryQueue } from "./delivery-queue.js";
import { assertValidPattern, assertValidSubject, SubscriptionIndex } from "./subject-match.js";
import type { Msg, MsgHandler, Payload, RequestOptions, SubscribeOptions, Subscription, Transport } from "./types.js";

export interface MemoryBusOptions {
  /** Largest payload in bytes of its JSON encoding; unlimited when unset. */
  maxPayload?: number;
  /** structuredClone() every payload at publish, so receivers never share the sender's objects. */
  copy?: boolean;
  /** Called when a handler throws or its returned promise rejects; default console.error. */
  onError?: (error: unknown, msg: Msg) => void;
}

export interface BusStats {
  /** Messages accepted by publish (including requests and replies). */
  published: number;
  /** Handler invocations: a message fanned out to three subscribers counts three. */
  delivered: number;
  /** Messages that reached no handler: nothing matched, or every match unsubscribed first. */
  dropped: number;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 5000;

export class MemorySubscription implements Subscription {
  active = true;
  /** Pick sequence when this queue member last got a message; 0 = never. */
  lastPicked = 0;

  constructor(
    readonly subject: string,
    readonly handler: MsgHandler,
    readonly queue: string | undefined,
    private readonly onUnsubscribe: (sub: MemorySubscription) => void,
  ) {}

  unsubscribe(): void {
    if (!this.active) return;
    this.active = false;
    this.onUnsubscribe(this);
  }
}

/** What a connection needs from its bus. Not part of the public API. */
export interface BusLink {
  /** Routes a message; returns how many subscriptions matched. Throws on invalid input. */
  publish(subject: string, data: Payload, reply: string | undefined): number;
  add(sub: MemorySubscription): void;
  remove(sub: MemorySubscription): void;
  newInbox(): string;
  whenDelivered(): Promise<void>;
}

export class MemoryBus {
  readonly #index = new SubscriptionIndex<MemorySubscription>();
  readonly #queue = new DeliveryQueue<readonly MemorySubscription[]>((msg, targets) => this.#deliver(msg, targets));
  readonly #maxPayload: number | undefined;
  readonly #copy: boolean;
  readonly #onError: (error: unknown, msg: Msg) => void;
  #queueSubscriptions = 0;
  #pickSequence = 0;
  #published = 0;
  #delivered = 0;
  #dropped = 0;
  #connections = 0;
  #inboxes = 0;

  constructor(options: MemoryBusOptions = {}) {
    const { maxPayload } = options;
    if (maxPayload !== undefined && !(Number.isInteger(maxPayload) && maxPayload > 0)) {
      throw new BadOptionError("maxPayload", `must be a positive integer number of bytes, got ${String(maxPayload)}`);
    }
    this.#maxPayload = maxPayload;
    this.#copy = options.copy ?? false;
    this.#onError = options.onError ?? ((error, msg) => console.error(`natsched: handler for ${msg.subject} failed:`, error));
  }

  connect(name?: string): MemoryTransport {
    this.#connections++;
    return new MemoryTransport(this.#link, name ?? `memory-${this.#connections}`);
  }

  stats(): BusStats {
    return { published: this.#published, delivered: this.#delivered, dropped: this.#dropped };
  }

  readonly #link: BusLink = {
    publish: (subject, data, reply) => this.#publish(subject, data, reply),
    add: (sub) => {
      this.#index.add(sub.subject, sub);
      if (sub.queue !== undefined) this.#queueSubscriptions++;
    },
    remove: (sub) => {
      if (this.#index.remove(sub.subject, sub) && sub.queue !== undefined) this.#queueSubscriptions--;
    },
    newInbox: () => `_INBOX.${(++this.#inboxes).toString(36)}`,
    whenDelivered: () => this.#queue.whenDelivered(),
  };

  #publish(subject: string, data: Payload, reply: string | undefined): number {
    assertValidSubject(subject);
    if (reply !== undefined) assertValidSubject(reply, "reply");
    if (this.#maxPayload !== undefined) checkPayloadSize(subject, data, this.#maxPayload);
    if (this.#copy) data = clonePayload(subject, data);
    this.#published++;
    const matched = this.#index.match(subject);
    if (matched.length === 0) {
      this.#dropped++;
      return 0;
    }
    const targets = this.#queueSubscriptions === 0 ? matched : this.#pickQueueMembers(matched);
    this.#queue.push({ subject, data, reply }, targets);
    return matched.length;
  }

  /** Every plain subscriber, plus per queue group the member that waited longest. */
  #pickQueueMembers(matched: readonly MemorySubscription[]): MemorySubscription[] {
    const targets: MemorySubscription[] = [];
    let chosen: Map<string, MemorySubscription> | undefined;
    for (const sub of matched) {
      if (sub.queue === undefined) {
        targets.push(sub);
        continue;
      }
      chosen ??= new Map();
      const best = chosen.get(sub.queue);
      if (best === undefined || sub.lastPicked < best.lastPicked) chosen.set(sub.queue, sub);
    }
    if (chosen !== undefined) {
      for (const member of chosen.values()) {
        member.lastPicked = ++this.#pickSequence;
        targets.push(member);
      }
    }
    return targets;
  }

  #deliver(msg: Msg, targets: readonly MemorySubscription[]): void {
    let reached = false;
    for (const sub of targets) {
      if (!sub.active) continue;
      reached = true;
      this.#delivered++;
      try {
        const result: unknown = sub.handler(msg);
        if (isPromiseLike(result)) result.then(undefined, (error: unknown) => this.#reportError(error, msg));
      } catch (error) {
        this.#reportError(error, msg);
      }
    }
    if (!reached) this.#dropped++;
  }

  #reportError(error: unknown, msg: Msg): void {
    try {
      this.#onError(error, msg);
    } catch (hookError) {
      console.error("natsched: onError hook threw:", hookError, "while reporting:", error);
    }
  }
}

export class MemoryTransport implements Transport {
  readonly #subscriptions = new Set<MemorySubscription>();
  readonly #pendingRequests = new Set<(error: unknown) => void>();
  #closed = false;

  /** Use `bus.connect()`. */
  constructor(
    private readonly link: BusLink,
    readonly name: string,
  ) {}

  get closed(): boolean {
    return this.#closed;
  }

  publish(subject: string, data: Payload, reply?: string): void {
    if (this.#closed) throw this.#closedError();
    this.link.publish(subject, data, reply);
  }

  subscribe(subject: string, handler: MsgHandler, opts: SubscribeOptions = {}): Subscription {
    if (this.#closed) throw this.#closedError();
    assertValidPattern(subject);
    const { queue } = opts;
    if (queue !== undefined && (queue.length === 0 || /\s/.test(queue))) {
      throw new BadOptionError("queue", `invalid queue group ${JSON.stringify(queue)}: must be non-empty without whitespace`);
    }
    const sub = new MemorySubscription(subject, handler, queue, (gone) => {
      this.#subscriptions.delete(gone);
      this.link.remove(gone);
    });
    this.link.add(sub);
    this.#subscriptions.add(sub);
    return sub;
  }

  request(subject: string, data: Payload, opts: RequestOptions = {}): Promise<Payload> {
    if (this.#closed) return Promise.reject(this.#closedError());
    const timeout = opts.timeout ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (!(Number.isFinite(timeout) && timeout > 0)) {
      return Promise.reject(new BadOptionError("timeout", `must be a positive number of milliseconds, got ${String(timeout)}`));
    }
    return new Promise<Payload>((resolve, reject) => {
      let settled = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settle = (outcome: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        inbox.unsubscribe();
        this.#pendingRequests.delete(fail);
        outcome();
      };
      const fail = (error: unknown): void => settle(() => reject(error));
      const inbox = this.subscribe(this.link.newInbox(), (msg) => settle(() => resolve(msg.data)));
      this.#pendingRequests.add(fail);
      let responders: number;
      try {
        responders = this.link.publish(subject, data, inbox.subject);
      } catch (error) {
        fail(error);
        return;
      }
      if (responders === 0) fail(new ProtocolError(`no responders for request on ${subject}`));
      else timer = setTimeout(() => fail(new TimeoutError(`request on ${subject} after ${timeout} ms`)), timeout);
    });
  }

  flush(): Promise<void> {
    if (this.#closed) return Promise.reject(this.#closedError());
    return this.link.whenDelivered();
  }

  /** Drops this connection's subscriptions and rejects its pending requests. Idempotent. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    for (const fail of [...this.#pendingRequests]) fail(this.#closedError());
    for (const sub of [...this.#subscriptions]) sub.unsubscribe();
    return Promise.resolve();
  }

  #closedError(): ClosedError {
    return new ClosedError(`transport ${this.name}`);
  }
}

function checkPayloadSize(subject: string, data: Payload, limit: number): void {
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch (error) {
    throw new ProtocolError(`payload on ${subject} is not JSON-serializable: ${errorMessage(error)}`);
  }
  if (json === undefined) return;
  // A UTF-16 code unit is 1 to 3 UTF-8 bytes, so counting bytes is only needed near the limit.
  if (json.length * 3 <= limit) return;
  const size = Buffer.byteLength(json, "utf8");
  if (size > limit) throw new PayloadTooLargeError(size, limit, `payload on ${subject}`);
}

function clonePayload(subject: string, data: Payload): Payload {
  try {
    return structuredClone(data);
  } catch (error) {
    throw new ProtocolError(`payload on ${subject} cannot be copied: ${errorMessage(error)}`);
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
