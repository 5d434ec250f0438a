/**
 * Drops second copies of a message (see ResendBuffer): each subscription remembers the
 * `<sender>.<n>` tags it has delivered, up to a window per sender.
 */
const WINDOW = 20_000;
const IDLE_SENDER_MS = 10 * 60_000;
const SWEEP_EVERY = 10_000;

interface SenderWindow {
  /** Every n at or below this counts as seen. */
  floor: number;
  seen: Set<number>;
  lastAt: number;
}

export class DedupFilter {
  private readonly senders = new Map<string, SenderWindow>();
  private accepted = 0;

  /** False when the message with this tag was accepted before. Untagged messages always pass. */
  accept(tag: string | undefined): boolean {
    if (!tag) return true;
    const dot = tag.lastIndexOf(".");
    const n = Number(tag.slice(dot + 1));
    if (dot <= 0 || !Number.isSafeInteger(n)) return true;
    return this.acceptParsed(tag.slice(0, dot), n);
  }

  /** `accept` of the tag `<sender>.<n>`, already split (n a safe integer). */
  acceptParsed(sender: string, n: number): boolean {
    const now = Date.now();
    let w = this.senders.get(sender);
    if (w === undefined) this.senders.set(sender, (w = { floor: 0, seen: new Set(), lastAt: now }));
    if (n <= w.floor || w.seen.has(n)) return false;
    w.seen.add(n);
    w.lastAt = now;
    if (w.seen.size > WINDOW) forgetOldestHalf(w);
    if (++this.accepted % SWEEP_EVERY === 0) this.sweep(now);
    return true;
  }

  private sweep(now: number): void {
    for (const [sender, w] of this.senders) if (now - w.lastAt > IDLE_SENDER_MS) this.senders.delete(sender);
  }
}

function forgetOldestHalf(w: SenderWindow): void {
  let dropped = 0;
  for (const n of w.seen) {
    if (dropped++ >= WINDOW / 2) break;
    w.seen.delete(n);
    if (n > w.floor) w.floor = n;
  }
}
