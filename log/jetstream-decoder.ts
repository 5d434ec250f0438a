/**
 * Turns a cluster log's JetStream messages, in stream order, back into records, with the
 * checks of the file reader (reader.ts, log-scanner.ts): every line's checksum and shape,
 * each actor's seqs gap-free, duplicates dropped. Messages on an actor's subject that are
 * not its log (jetstream-chain.ts) are reported as `foreign` and skipped. Problems are
 * located by stream sequence.
 */
import { decodeRecordLine } from "./codec.js";
import { LogChain } from "./jetstream-chain.js";
import { parsePart } from "./jetstream-messages.js";
import { SequenceChecker } from "./sequences.js";
import type { LogProblem, LogRecord } from "./types.js";

interface PendingParts {
  seqAt: number;
  next: number;
  count: number;
  chunks: Buffer[];
}

/** A message on an actor's subject, as the decoder needs it. */
export interface LogStreamMessage {
  subject: string;
  streamSeq: number;
  body: Uint8Array;
  /** Its Nats-Msg-Id and Natsched-Part headers. */
  msgId: string | undefined;
  part: string | undefined;
}

export class JetStreamLogDecoder {
  readonly problems: LogProblem[] = [];
  private readonly sequences = new SequenceChecker();
  private readonly parts = new Map<string, PendingParts>();
  private readonly chains = new Map<string, LogChain>();
  private index = 0;

  /** Actors read from the middle of their log: their first record sets where their seqs start. */
  private readonly midway = new Set<string>();

  constructor(
    /** Stream sequences of messages deleted from the stream (a link to one continues the log). */
    private readonly deleted: ReadonlySet<number> = new Set(),
    /** Reading one actor's log after one of its messages (`tail`, a stream sequence) instead of from its start. */
    from?: { actor: string; subject: string; tail: number },
  ) {
    if (from !== undefined) {
      this.chains.set(from.actor, new LogChain(from.actor, from.subject, deleted, { tail: from.tail }));
      this.midway.add(from.actor);
    }
  }

  /** One message of `actor`'s subject; its records go to `out`. */
  message(actor: string, m: LogStreamMessage, out: LogRecord[]): void {
    let chain = this.chains.get(actor);
    if (chain === undefined) this.chains.set(actor, (chain = new LogChain(actor, m.subject, this.deleted)));
    const verdict = chain.classify({ streamSeq: m.streamSeq, msgId: m.msgId, part: m.part, size: m.body.byteLength, body: m.body });
    if (!verdict.chain) {
      this.problems.push(verdict.problem);
      return;
    }
    if (verdict.gap !== undefined) this.problems.push(verdict.gap);
    const { body, part, streamSeq } = m;
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    if (part) {
      this.part(actor, bytes, part, streamSeq, out);
      return;
    }
    this.unfinished(actor, streamSeq);
    let start = 0;
    for (let newline = bytes.indexOf(0x0a); newline !== -1; newline = bytes.indexOf(0x0a, start)) {
      this.line(actor, bytes.subarray(start, newline), streamSeq, out);
      start = newline + 1;
    }
    if (start < bytes.length) {
      this.problems.push({ kind: "malformed", actor, message: `stream seq ${streamSeq}: the message of ${actor} ends without a newline (${bytes.length - start} bytes)` });
    }
  }

  /** The end of what was read: records left unfinished are torn. */
  end(): void {
    for (const actor of [...this.parts.keys()]) this.unfinished(actor, undefined);
  }

  private part(actor: string, bytes: Buffer, value: string, streamSeq: number, out: LogRecord[]): void {
    const info = parsePart(value);
    if (info.kind === "abandon") {
      // Its writer died mid-record and the next writer voided it: not a problem of the log.
      this.parts.delete(actor);
      return;
    }
    if (info.kind === "bad") {
      this.problems.push({ kind: "malformed", actor, message: `stream seq ${streamSeq}: bad Natsched-Part header ${JSON.stringify(info.value)}` });
      return;
    }
    let pending = this.parts.get(actor);
    if (info.index === 0) {
      this.unfinished(actor, streamSeq);
      this.parts.set(actor, (pending = { seqAt: streamSeq, next: 0, count: info.count, chunks: [] }));
    } else if (pending === undefined || pending.next !== info.index || pending.count !== info.count) {
      this.parts.delete(actor);
      this.problems.push({ kind: "malformed", actor, message: `stream seq ${streamSeq}: part ${value} of a record of ${actor} without the parts before it` });
      return;
    }
    pending.chunks.push(bytes);
    pending.next++;
    if (pending.next < pending.count) return;
    this.parts.delete(actor);
    const line = Buffer.concat(pending.chunks);
    if (line[line.length - 1] !== 0x0a) {
      this.problems.push({ kind: "malformed", actor, message: `stream seq ${streamSeq}: a record of ${actor} in ${pending.count} parts does not end with a newline` });
      return;
    }
    this.line(actor, line.subarray(0, line.length - 1), streamSeq, out);
  }

  private unfinished(actor: string, streamSeq: number | undefined): void {
    const pending = this.parts.get(actor);
    if (pending === undefined) return;
    this.parts.delete(actor);
    const where = streamSeq === undefined ? "the end of the log" : `stream seq ${streamSeq}`;
    this.problems.push({
      kind: "torn",
      actor,
      message: `stream seq ${pending.seqAt}: a record of ${actor} in ${pending.count} parts stops after part ${pending.next} at ${where}`,
    });
  }

  private line(actor: string, line: Buffer, streamSeq: number, out: LogRecord[]): void {
    const at = `stream seq ${streamSeq}`;
    if (line.length === 0) {
      this.problems.push({ kind: "malformed", actor, message: `${at}: empty line` });
      return;
    }
    const decoded = decodeRecordLine(line);
    if (!decoded.ok) {
      this.problems.push({ kind: decoded.kind, actor, message: `${at}: ${decoded.message}` });
      return;
    }
    const record = decoded.record;
    if (record.actor !== actor) {
      this.problems.push({ kind: "malformed", actor, message: `${at}: a record of ${record.actor} on the subject of ${actor}` });
      return;
    }
    if (this.midway.delete(actor)) this.sequences.startAt(actor, record.seq);
    const problem = this.sequences.check(record, { index: this.index++ });
    if (problem) {
      problem.message = problem.message.replace(/^record #\d+/, at);
      this.problems.push(problem);
      if (problem.kind === "duplicate") return;
    }
    out.push(record);
  }
}
