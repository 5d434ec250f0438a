/**
 * Which messages on an actor's subject are its log. Anyone allowed to publish on
 * `natsched.<cluster>.log.<actor>` can put a message there; the actor's log is only the
 * chain its writers published: each writer's message carries the id
 * `<actor>:<seq>[/<part>]@<link>` (jetstream-layout.ts), where `link` is the stream sequence
 * of the log's message before it. Reading the subject in stream order, a message is the
 * log's next one when its id is of that form for this actor and links to the log's last
 * message; anything else is foreign: reported (a `foreign` problem, located by stream
 * sequence, with what it was) and skipped whole. A writer that finds a foreign message
 * after its own goes on linking to its own (jetstream-log.ts), so the log goes on past it.
 *
 * One writer: a second writer of the same actor takes over the log only by linking to its
 * last message, which is what a restarted writer does (it reads the log first); the
 * previous writer then finds a message of the log it did not write, and stops
 * (LogConflictError). Two writers never interleave: the server's expected-last-subject-
 * sequence check lets only one of them append after a given message.
 *
 * Messages written before links existed (ids without `@<link>`) are accepted as the log
 * while no linked message has been read for the actor. A link to a message deleted from
 * the stream (an operator's `nats stream rmm`) continues the log, and the records it
 * lost show as a gap.
 */
import { ABANDON_PART, parseLogMsgId, type LogMsgId } from "./jetstream-layout.js";
import type { LogProblem } from "./types.js";

/** What the chain needs to know of a message: its headers, size, and the start of its body. */
export interface ChainMessage {
  streamSeq: number;
  /** Its Nats-Msg-Id header. */
  msgId: string | undefined;
  /** Its Natsched-Part header. */
  part: string | undefined;
  /** Its body's size in bytes. */
  size: number;
  /** The start of its body (or all of it), for the problem's description. */
  body?: Uint8Array | undefined;
}

export type ChainVerdict = { chain: true; id: LogMsgId; gap?: LogProblem } | { chain: false; problem: LogProblem };

const PREVIEW_BYTES = 48;
const NO_DELETIONS: ReadonlySet<number> = new Set();

export class LogChain {
  /** Stream sequence of the log's last message so far (0: none yet). */
  tail: number;
  private linked: boolean;

  constructor(
    readonly actor: string,
    readonly subject: string,
    /** Stream sequences of messages deleted from the stream (from its info with deleted details). */
    private readonly deleted: ReadonlySet<number> = NO_DELETIONS,
    /** Where the log is known to stand already: its last message's stream sequence. */
    from: { tail: number } = { tail: 0 },
  ) {
    this.tail = from.tail;
    this.linked = from.tail > 0;
  }

  /** Whether `m`, the subject's next message in stream order, is the log's next one; the log advances if it is. */
  classify(m: ChainMessage): ChainVerdict {
    const id = parseLogMsgId(m.msgId);
    const reason = this.foreignReason(m, id);
    if (reason !== undefined) return { chain: false, problem: this.foreign(m, reason) };
    let gap: LogProblem | undefined;
    if (id!.link !== undefined) {
      if (id!.link !== this.tail) {
        gap = {
          kind: "gap",
          actor: this.actor,
          streamSeq: m.streamSeq,
          message: `stream seq ${m.streamSeq}: the log of ${this.actor} continues after stream seq ${id!.link}, a message deleted from the stream (its last message read is stream seq ${this.tail})`,
        };
      }
      this.linked = true;
    }
    this.tail = m.streamSeq;
    return gap === undefined ? { chain: true, id: id! } : { chain: true, id: id!, gap };
  }

  private foreignReason(m: ChainMessage, id: LogMsgId | undefined): string | undefined {
    if (id === undefined) return m.msgId ? "its message id is not one of a natsched log" : "it has no message id";
    if (id.actor !== this.actor) return `its message id names the log of ${id.actor}`;
    const part = m.part || undefined;
    if ((part === undefined) !== (id.part === undefined) || (part !== undefined && !partMatches(part, id.part!))) {
      return `its Natsched-Part header (${part === undefined ? "none" : JSON.stringify(part)}) does not match its message id`;
    }
    if (id.link === undefined) return this.linked ? "its message id has no link, and the log's messages before it do" : undefined;
    if (id.link === this.tail) return undefined;
    if (id.link > this.tail && this.deleted.has(id.link)) return undefined;
    return `it follows stream seq ${id.link}, and the log's last message is stream seq ${this.tail === 0 ? "none" : this.tail}`;
  }

  private foreign(m: ChainMessage, reason: string): LogProblem {
    const id = m.msgId ? `, message id ${JSON.stringify(m.msgId)}` : "";
    const part = m.part ? `, Natsched-Part ${JSON.stringify(m.part)}` : "";
    return {
      kind: "foreign",
      actor: this.actor,
      streamSeq: m.streamSeq,
      message: `stream seq ${m.streamSeq}: a foreign message on ${this.subject} (${m.size} bytes${id}${part}), skipped: ${reason}${m.body === undefined ? "" : bodyPreview(m.body, m.size)}`,
    };
  }
}

function partMatches(header: string, idPart: number | typeof ABANDON_PART): boolean {
  if (idPart === ABANDON_PART) return header === ABANDON_PART;
  return header.startsWith(`${idPart}/`);
}

/** How a foreign message's problem shows its body: `; it starts "<its first bytes>"`. */
export function bodyPreview(body: Uint8Array, size = body.byteLength): string {
  if (size === 0) return "";
  const bytes = Buffer.from(body.buffer, body.byteOffset, Math.min(body.byteLength, PREVIEW_BYTES));
  return `; it starts ${JSON.stringify(bytes.toString("latin1"))}${size > PREVIEW_BYTES ? "…" : ""}`;
}
