/**
 * Core NATS delivers at most once: messages in flight when a server goes down, and messages
 * published after a reconnect to peers that have not resubscribed yet, are lost. A
 * ResendBuffer keeps what its connection published recently and, once reconnected, publishes
 * the outage window again (twice, so peers that come back late get it too); receivers drop
 * the copies they already have (DedupFilter, by the `Natsched-Seq` header).
 */
export const DEFAULT_RESEND_DELAYS_MS: readonly number[] = [1500, 5000];

export interface ResendOptions {
  /** Milliseconds of messages kept from before a disconnect was noticed. Default 2000. */
  retainMs?: number;
  /** After a reconnect, the window is re-sent after each of these delays (ms). Default [1500, 5000]. */
  delaysMs?: number[];
  /** Bytes kept at most; the oldest messages go first. Default 64 MiB. */
  maxBytes?: number;
}

export interface SentMessage {
  subject: string;
  reply: string | undefined;
  bytes: Uint8Array;
  binary: boolean;
  /** `<sender>.<n>`, unique per message of this connection; "" when re-sending is off. */
  tag: string;
  /** The n of this connection's previous message on the same subject, 0 when none (Natsched-Prev). */
  prev: number;
  /** The Natsched-Frag header value of a fragment, else "". */
  fragment: string;
  at: number;
}

export class ResendBuffer {
  private entries: SentMessage[] = [];
  private head = 0;
  private bytes = 0;
  private outageSince: number | null = null;
  private timers: ReturnType<typeof setTimeout>[] = [];
  /** Trims a connection that stopped publishing, so old payloads are not pinned in memory. */
  private readonly sweeper: ReturnType<typeof setInterval>;
  private readonly retainMs: number;
  private readonly delaysMs: number[];
  private readonly maxBytes: number;

  constructor(
    opts: ResendOptions,
    private readonly resend: (message: SentMessage) => void,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.retainMs = opts.retainMs ?? 2000;
    this.delaysMs = [...(opts.delaysMs ?? DEFAULT_RESEND_DELAYS_MS)].sort((a, b) => a - b);
    this.maxBytes = opts.maxBytes ?? 64 * 1024 * 1024;
    this.sweeper = setInterval(() => this.trim(), this.retainMs);
    this.sweeper.unref();
  }

  /** True from a disconnect until the last re-send after the reconnect. */
  get recovering(): boolean {
    return this.outageSince !== null;
  }

  record(message: SentMessage): void {
    this.entries.push(message);
    this.bytes += message.bytes.length;
    this.trim();
  }

  disconnected(): void {
    this.outageSince ??= this.now();
    this.cancelTimers();
  }

  reconnected(): void {
    this.cancelTimers();
    this.delaysMs.forEach((delay, i) => {
      const timer = setTimeout(() => {
        this.resendAll();
        if (i === this.delaysMs.length - 1) {
          this.outageSince = null;
          this.timers = [];
          this.trim();
        }
      }, delay);
      timer.unref();
      this.timers.push(timer);
    });
    if (this.delaysMs.length === 0) this.outageSince = null;
  }

  close(): void {
    clearInterval(this.sweeper);
    this.cancelTimers();
    this.entries = [];
    this.head = 0;
    this.bytes = 0;
  }

  private resendAll(): void {
    // Copied first: re-sending may record nothing, but trimming must not shift the array under us.
    for (const message of this.entries.slice(this.head)) this.resend(message);
  }

  private cancelTimers(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
  }

  private trim(): void {
    const cutoff = (this.outageSince ?? this.now()) - this.retainMs;
    while (this.head < this.entries.length) {
      const oldest = this.entries[this.head]!;
      if (oldest.at >= cutoff && this.bytes <= this.maxBytes) break;
      this.bytes -= oldest.bytes.length;
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }
}
