/**
 * Most of a log is transition records written by `recordJson` in one fixed layout. Replay
 * reads those in place, as offsets into the line's bytes, and compares them with the
 * reproduced transition byte by byte: no JSON.parse and no strings per line. A line that
 * does not match the layout exactly (another field order, an escape, a non-ASCII byte, an
 * extra field) is left to the generic decoder, so what is accepted here is exactly what
 * JSON.parse and the record shape check would accept.
 */
import { literal, literalBytes, plainString, QUOTE, RecordHead, trailingObject } from "./line-bytes.js";
import type { TransitionRecord } from "../log/types.js";
import type { LoggedWhy } from "../machines/reasons.js";

/** The string fields of a transition, as indexes into `TransitionLine.offsets`. */
export const ACTOR = 0;
export const MACHINE = 1;
export const ID = 2;
export const EVENT = 3;
export const FROM = 4;
export const TO = 5;
export type TransitionField = typeof ACTOR | typeof MACHINE | typeof ID | typeof EVENT | typeof FROM | typeof TO;

/** The literal text before each field after the head, in the order recordJson writes them. */
const BEFORE_STRING: readonly Buffer[] = [
  Buffer.alloc(0),
  literalBytes(',"kind":"transition","machine":"'),
  literalBytes('","id":"'),
  literalBytes('","event":"'),
  literalBytes('","from":"'),
  literalBytes('","to":"'),
];
const WHY_KEY = literalBytes('","why":');

export class TransitionLine {
  buf: Buffer = Buffer.alloc(0);
  /** The record's JSON: [bodyStart, bodyEnd). */
  bodyStart = 0;
  bodyEnd = 0;
  seq = 0;
  /** Start and end of each string field's content: field f at [2f, 2f + 1]. */
  readonly offsets = new Int32Array(12);
  why: LoggedWhy | undefined = undefined;
  private readonly head = new RecordHead();

  /** Decodes `buf[start, end)` (a record's JSON) in place; false if it is not a plain transition. */
  parse(buf: Buffer, start: number, end: number): boolean {
    const head = this.head;
    let p = head.parse(buf, start, end);
    for (let field = MACHINE; field <= TO && p >= 0; field++) p = this.string(buf, p, end, field as TransitionField);
    if (p < 0) return false;
    // The record ends here ("}), or with a `why` object that runs to the final "}".
    if (p + 2 === end && buf[p] === QUOTE && buf[p + 1] === 0x7d) {
      this.why = undefined;
    } else {
      const whyStart = literal(buf, p, end, WHY_KEY);
      const why = whyStart < 0 ? undefined : trailingObject(buf, whyStart, end);
      if (why === undefined) return false;
      this.why = why;
    }
    this.offsets[2 * ACTOR] = head.actorStart;
    this.offsets[2 * ACTOR + 1] = head.actorEnd;
    this.seq = head.seq;
    this.buf = buf;
    this.bodyStart = start;
    this.bodyEnd = end;
    return true;
  }

  /** Whether the field's text is exactly `text`. */
  is(field: TransitionField, text: string): boolean {
    const start = this.offsets[2 * field]!;
    const end = this.offsets[2 * field + 1]!;
    if (end - start !== text.length) return false;
    const buf = this.buf;
    for (let i = 0; i < text.length; i++) if (buf[start + i] !== text.charCodeAt(i)) return false;
    return true;
  }

  text(field: TransitionField): string {
    return this.buf.toString("latin1", this.offsets[2 * field]!, this.offsets[2 * field + 1]!);
  }

  /** The record's time (parsed on demand: replay rarely needs a transition's). */
  t(): number {
    return this.head.t(this.buf);
  }

  /** The whole record (for reports; the fast path never needs it). */
  record(): TransitionRecord {
    return JSON.parse(this.buf.toString("utf8", this.bodyStart, this.bodyEnd)) as TransitionRecord;
  }

  /** The literal before `field`, then the field's plain string: the position of its closing quote, or -1. */
  private string(buf: Buffer, p: number, end: number, field: TransitionField): number {
    p = literal(buf, p, end, BEFORE_STRING[field]!);
    if (p < 0) return -1;
    const close = plainString(buf, p, end);
    if (close < 0) return -1;
    this.offsets[2 * field] = p;
    this.offsets[2 * field + 1] = close;
    return close;
  }
}
