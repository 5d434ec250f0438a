/**
 * How records travel as JetStream messages. A message on an actor's subject holds
 * consecutive record lines of that actor, exactly as a log file holds them (checksum, space,
 * JSON, newline; docs/log-format.md), so a file and a stream hold the same bytes. A record
 * too large for one message (a big `update-graph`) starts a message of its own and is split
 * over consecutive messages that carry `Natsched-Part: <index>/<count>` and nothing else.
 */
import { maxRecordLineBytes, writeRecordLine } from "./codec.js";
import { ABANDON_PART, actorSubject, logMsgId } from "./jetstream-layout.js";
import { recordJson } from "./record-json.js";
import type { LogRecord } from "./types.js";

export interface LogMessage {
  actor: string;
  subject: string;
  /** Its message id without the link (logMsgId): the writer adds the link when it sends it. */
  msgId: string;
  body: Uint8Array;
  /** PART_HEADER value, for a part of a large record or an abandon marker. */
  part: string | undefined;
  /** Seq of the first record in it (of the record it is a part of). */
  firstSeq: number;
  /** Records that are complete once this message is stored. */
  records: number;
  /** The sink's running count of appended records at this message's first record. */
  firstIndex: number;
}

/** Collects one actor's record lines into message bodies of at most `maxBody` bytes. */
export class ActorBatcher {
  private buffer: Buffer;
  private used = 0;
  private firstSeq = -1;
  private count = 0;
  private firstIndex = -1;
  readonly subject: string;

  constructor(
    readonly cluster: string,
    readonly actor: string,
    private maxBody: number,
  ) {
    this.subject = actorSubject(cluster, actor);
    this.buffer = Buffer.allocUnsafe(maxBody);
  }

  /** The append index of the oldest record not sealed yet, or undefined if none is waiting. */
  get pendingFrom(): number | undefined {
    return this.count > 0 ? this.firstIndex : undefined;
  }

  /** A smaller limit (the server's max_payload changed): takes effect from the next message. */
  limit(maxBody: number): void {
    if (maxBody !== this.maxBody && this.used === 0) {
      this.maxBody = maxBody;
      this.buffer = Buffer.allocUnsafe(maxBody);
    }
  }

  /** Adds `record` (the `index`-th appended); returns the messages it completed, in order. */
  add(record: LogRecord, index: number, out: LogMessage[]): void {
    const json = recordJson(record);
    const room = maxRecordLineBytes(json);
    if (room > this.maxBody) {
      const line = Buffer.allocUnsafe(room);
      const length = writeRecordLine(line, 0, json);
      if (length > this.maxBody) {
        this.seal(out);
        this.split(line.subarray(0, length), record.seq, index, out);
        return;
      }
      if (this.used + length > this.maxBody) this.seal(out);
      line.copy(this.buffer, this.used, 0, length);
      this.used += length;
    } else {
      if (this.used + room > this.maxBody) this.seal(out);
      this.used = writeRecordLine(this.buffer, this.used, json);
    }
    if (this.count === 0) {
      this.firstSeq = record.seq;
      this.firstIndex = index;
    }
    this.count++;
  }

  /** Seals what has gathered into a message, if anything. */
  seal(out: LogMessage[]): void {
    if (this.count === 0) return;
    out.push({
      actor: this.actor,
      subject: this.subject,
      msgId: logMsgId(this.actor, this.firstSeq),
      body: Buffer.from(this.buffer.subarray(0, this.used)),
      part: undefined,
      firstSeq: this.firstSeq,
      records: this.count,
      firstIndex: this.firstIndex,
    });
    this.used = 0;
    this.count = 0;
  }

  private split(line: Buffer, seq: number, index: number, out: LogMessage[]): void {
    const count = Math.ceil(line.length / this.maxBody);
    for (let i = 0; i < count; i++) {
      out.push({
        actor: this.actor,
        subject: this.subject,
        msgId: logMsgId(this.actor, seq, i),
        body: line.subarray(i * this.maxBody, Math.min(line.length, (i + 1) * this.maxBody)),
        part: `${i}/${count}`,
        firstSeq: seq,
        records: i === count - 1 ? 1 : 0,
        firstIndex: index,
      });
    }
  }
}

/** The marker that voids the unfinished multi-part record `seq` (its writer died mid-record). */
export function abandonMarker(cluster: string, actor: string, seq: number, index: number): LogMessage {
  return {
    actor,
    subject: actorSubject(cluster, actor),
    msgId: logMsgId(actor, seq, ABANDON_PART),
    body: new Uint8Array(0),
    part: ABANDON_PART,
    firstSeq: seq,
    records: 0,
    firstIndex: index,
  };
}

export type PartInfo = { kind: "part"; index: number; count: number } | { kind: "abandon" } | { kind: "bad"; value: string };

export function parsePart(value: string): PartInfo {
  if (value === ABANDON_PART) return { kind: "abandon" };
  const match = /^(\d+)\/(\d+)$/.exec(value);
  if (match === null) return { kind: "bad", value };
  const index = Number(match[1]);
  const count = Number(match[2]);
  return index < count ? { kind: "part", index, count } : { kind: "bad", value };
}
