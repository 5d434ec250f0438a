/**
 * Per-sender FIFO on receipt. The cores assume each sender's messages arrive in the order
 * sent; NATS keeps that in normal operation, but a re-send after a reconnect
 * (nats-resend.ts) can bring an older message after newer ones. Each message carries its
 * tag `<sender>.<n>` and `prev`, the n of the sender's previous message on the same subject
 * (0 when it has none). A receiver delivers a message whose `prev` it has delivered, holds
 * one that comes ahead of a missing earlier one, and delivers the held ones as soon as the
 * gap fills. The wait is bounded: after `maxWaitMs`, or once `maxHeld` messages wait on one
 * (sender, subject), they are delivered anyway in order and the gap is reported; a lost
 * message must not stall an actor forever.
 */
export interface OrderOptions {
  /** Longest a message waits for a missing earlier one (ms). Default: the last re-send delay + 3000. */
  maxWaitMs?: number;
  /** Most messages held for one (sender, subject); past it they are delivered anyway. Default 10,000. */
  maxHeld?: number;
}

interface Held<T> {
  n: number;
  item: T;
}

interface Stream<T> {
  /** The n of the last message delivered in order. */
  last: number;
  /** Messages ahead of a gap, by the n they follow. */
  held: Map<number, Held<T>>;
  timer: ReturnType<typeof setTimeout> | undefined;
  lastAt: number;
}

const IDLE_STREAM_MS = 10 * 60_000;
const SWEEP_EVERY = 10_000;

export class SenderOrder<T> {
  /** By sender, then subject. */
  private readonly streams = new Map<string, Map<string, Stream<T>>>();
  private readonly maxWaitMs: number;
  private readonly maxHeld: number;
  private offered = 0;

  constructor(
    opts: OrderOptions,
    private readonly deliver: (item: T) => void,
    private readonly onGap: (why: string) => void,
  ) {
    this.maxWaitMs = opts.maxWaitMs ?? 8000;
    this.maxHeld = opts.maxHeld ?? 10_000;
  }

  /** Messages currently held back, over every stream. */
  get holding(): number {
    let count = 0;
    for (const bySubject of this.streams.values()) for (const s of bySubject.values()) count += s.held.size;
    return count;
  }

  /**
   * Deliver `item` now, or later when it is ahead of a gap (`keep` then gives the copy that is
   * held: a NATS message's body is a view into the client's read buffer).
   */
  offer(sender: string, subject: string, n: number, prev: number, item: T, keep: (item: T) => T): void {
    const now = Date.now();
    if (++this.offered % SWEEP_EVERY === 0) this.sweep(now);
    let bySubject = this.streams.get(sender);
    if (bySubject === undefined) this.streams.set(sender, (bySubject = new Map()));
    const s = bySubject.get(subject);
    if (s === undefined) {
      // First message of this sender seen here: whatever came before was not ours to wait for.
      bySubject.set(subject, { last: n, held: new Map(), timer: undefined, lastAt: now });
      this.deliver(item);
      return;
    }
    s.lastAt = now;
    if (n <= s.last) {
      this.onGap(`message ${sender}.${n} on ${subject} arrived after later ones (last delivered ${s.last}); delivered out of order`);
      this.deliver(item);
      return;
    }
    if (prev <= s.last) {
      s.last = n;
      this.deliver(item);
      this.drain(s, subject, sender);
      return;
    }
    if (s.held.has(prev)) {
      this.onGap(`two messages of ${sender} on ${subject} follow ${prev}; delivering what is held`);
      this.flush(s, subject, sender);
    }
    s.held.set(prev, { n, item: keep(item) });
    if (s.held.size > this.maxHeld) this.flush(s, subject, sender, `more than ${this.maxHeld} messages waited`);
    else s.timer ??= this.startTimer(s, subject, sender);
  }

  /** Forget every stream; held messages are dropped (their subscription is gone). */
  close(): void {
    for (const bySubject of this.streams.values()) for (const s of bySubject.values()) if (s.timer !== undefined) clearTimeout(s.timer);
    this.streams.clear();
  }

  private drain(s: Stream<T>, subject: string, sender: string): void {
    let next = s.held.get(s.last);
    if (next === undefined) return;
    while (next !== undefined) {
      s.held.delete(s.last);
      s.last = next.n;
      this.deliver(next.item);
      next = s.held.get(s.last);
    }
    if (s.timer !== undefined) clearTimeout(s.timer);
    s.timer = s.held.size > 0 ? this.startTimer(s, subject, sender) : undefined;
  }

  private startTimer(s: Stream<T>, subject: string, sender: string): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => this.flush(s, subject, sender, `waited ${this.maxWaitMs} ms`), this.maxWaitMs);
    timer.unref();
    return timer;
  }

  /** Deliver everything held, in order, skipping the gaps (reported when `why` is given). */
  private flush(s: Stream<T>, subject: string, sender: string, why?: string): void {
    if (s.timer !== undefined) clearTimeout(s.timer);
    s.timer = undefined;
    const held = [...s.held.entries()].sort((a, b) => a[1].n - b[1].n);
    s.held.clear();
    if (why !== undefined && held.length > 0) {
      const missing = held.filter(([prev], i) => prev !== (i === 0 ? s.last : held[i - 1]![1].n)).map(([prev]) => prev);
      this.onGap(`${why} for missing message(s) ${missing.map((m) => `${sender}.${m}`).join(", ")} on ${subject}; delivered ${held.length} later message(s) anyway`);
    }
    for (const [, h] of held) {
      if (h.n > s.last) s.last = h.n;
      this.deliver(h.item);
    }
  }

  private sweep(now: number): void {
    for (const [sender, bySubject] of this.streams) {
      for (const [subject, s] of bySubject) if (s.held.size === 0 && now - s.lastAt > IDLE_STREAM_MS) bySubject.delete(subject);
      if (bySubject.size === 0) this.streams.delete(sender);
    }
  }
}
