/**
 * Messages bigger than the server's max_payload (a 10,000-task graph, a large batch of
 * reports) travel as fragments: each carries `Natsched-Frag: <id>/<index>/<count>` and the
 * message's reply subject; a receiver concatenates the bodies in index order. NATS keeps one
 * publisher's order to a subscriber, but fragments are indexed anyway so a re-sent one
 * (nats-resend.ts) lands in its place. A queue group may split a message's fragments across
 * members, so fragmented messages need plain subscriptions (natsched uses no queue groups).
 */
export const FRAGMENT_HEADER = "Natsched-Frag";

export interface FragmentInfo {
  id: string;
  index: number;
  count: number;
}

export function fragmentHeader(id: string, index: number, count: number): string {
  return `${id}/${index}/${count}`;
}

export function parseFragmentHeader(value: string): FragmentInfo | undefined {
  const parts = value.split("/");
  if (parts.length !== 3) return undefined;
  const index = Number(parts[1]);
  const count = Number(parts[2]);
  if (!parts[0] || !Number.isSafeInteger(index) || !Number.isSafeInteger(count) || index < 0 || index >= count) return undefined;
  return { id: parts[0], index, count };
}

/** `bytes` cut into pieces of at most `size` bytes (views, not copies). */
export function splitFragments(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let start = 0; start < bytes.length; start += size) out.push(bytes.subarray(start, Math.min(start + size, bytes.length)));
  return out;
}

interface Partial {
  /** The message's subject and reply subject: a request whose fragments are dropped is answered with why. */
  subject: string;
  reply: string | undefined;
  parts: (Uint8Array | undefined)[];
  received: number;
  bytes: number;
  timer: ReturnType<typeof setTimeout>;
}

/** Ids of dropped messages remembered, so that their later fragments are ignored instead of starting over. */
const MAX_DROPPED_IDS = 1024;

/** Collects one subscription's fragments; gives back a whole body once every fragment is in. */
export class Reassembler {
  private readonly partial = new Map<string, Partial>();
  /** Dropped message ids, each with the last reply subject told so. */
  private readonly dropped = new Map<string, string | undefined>();
  /** Bytes of every message being put together. */
  private held = 0;

  /** `onDrop` hears of each message given up, with its subject and, for a request, its reply subject. */
  constructor(
    private readonly maxBytes: number,
    private readonly timeoutMs: number,
    private readonly onDrop: (why: string, reply: string | undefined, subject: string) => void,
  ) {}

  add(info: FragmentInfo, body: Uint8Array, reply?: string, subject = ""): Uint8Array | undefined {
    if (this.dropped.has(info.id)) {
      // A request reusing a dropped message's id (natsched never does) is answered too.
      if (reply !== undefined && this.dropped.get(info.id) !== reply) {
        this.dropped.set(info.id, reply);
        this.onDrop(`fragment of message ${info.id}, which was dropped`, reply, subject);
      }
      return undefined;
    }
    let p = this.partial.get(info.id);
    if (p === undefined) {
      // Every fragment carries at least a byte: more of them than maxBytes is a message too large
      // (and a header's word, which must not size an array before a byte of it arrived).
      if (info.count > this.maxBytes) {
        this.forget(info.id, reply);
        this.onDrop(`message ${info.id} of ${info.count} fragments exceeds ${this.maxBytes} bytes`, reply, subject);
        return undefined;
      }
      const timer = setTimeout(() => this.drop(info.id, `fragments of message ${info.id} incomplete after ${this.timeoutMs} ms`), this.timeoutMs);
      timer.unref();
      p = { subject, reply, parts: new Array<Uint8Array | undefined>(info.count), received: 0, bytes: 0, timer };
      this.partial.set(info.id, p);
    }
    if (p.parts.length !== info.count || p.parts[info.index] !== undefined) return undefined;
    // The client hands out views into its read buffer: fragments are kept, so copied.
    p.parts[info.index] = Buffer.from(body);
    p.received++;
    p.bytes += body.length;
    this.held += body.length;
    if (p.bytes > this.maxBytes) {
      this.drop(info.id, `message ${info.id} exceeds ${this.maxBytes} bytes`);
      return undefined;
    }
    // All messages being put together share the budget: many incomplete ones, each under the
    // limit, would otherwise hold any amount for the fragment timeout.
    if (this.held > this.maxBytes) {
      this.drop(info.id, `messages being put together on ${subject} exceed ${this.maxBytes} bytes`);
      return undefined;
    }
    if (p.received < info.count) return undefined;
    clearTimeout(p.timer);
    this.partial.delete(info.id);
    this.held -= p.bytes;
    return Buffer.concat(p.parts as Uint8Array[], p.bytes);
  }

  clear(): void {
    for (const p of this.partial.values()) clearTimeout(p.timer);
    this.partial.clear();
    this.dropped.clear();
    this.held = 0;
  }

  private drop(id: string, why: string): void {
    const p = this.partial.get(id);
    if (p === undefined) return;
    clearTimeout(p.timer);
    this.partial.delete(id);
    this.held -= p.bytes;
    this.forget(id, p.reply);
    this.onDrop(why, p.reply, p.subject);
  }

  /** Later fragments of message `id` are ignored (`reply` was told why). */
  private forget(id: string, reply: string | undefined): void {
    if (this.dropped.size >= MAX_DROPPED_IDS) this.dropped.clear();
    this.dropped.set(id, reply);
  }
}
