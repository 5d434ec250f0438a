/**
 * Reading the JSON the recorder writes straight from a line's bytes: its fixed literals,
 * plain strings (printable ASCII without escapes) and numbers. Anything else is for
 * JSON.parse, so every reader built on these accepts only what JSON.parse reads the same.
 */
export const QUOTE = 0x22;
const BACKSLASH = 0x5c;

export const literalBytes = (text: string): Buffer => Buffer.from(text, "latin1");

const OPEN_ACTOR = literalBytes('{"actor":"');
const SEQ_KEY = literalBytes('","seq":');
const T_KEY = literalBytes(',"t":');

/** Whether `text` is at `p`: the position after it, or -1. */
export function literal(buf: Buffer, p: number, end: number, text: Buffer): number {
  if (p + text.length > end) return -1;
  for (let i = 0; i < text.length; i++) if (buf[p + i] !== text[i]) return -1;
  return p + text.length;
}

/** Per byte: 0 plain, 1 the closing quote, 2 anything else (escape, control, non-ASCII). */
const STRING_BYTE = (() => {
  const table = new Uint8Array(256).fill(2);
  for (let c = 0x20; c < 0x80; c++) table[c] = 0;
  table[QUOTE] = 1;
  table[BACKSLASH] = 2;
  return table;
})();

/** Where a string's content starting at `p` ends (at its closing quote); -1 unless plain printable ASCII. */
export function plainString(buf: Buffer, p: number, end: number): number {
  const table = STRING_BYTE;
  for (; p < end; p++) {
    const kind = table[buf[p]!]!;
    if (kind === 0) continue;
    return kind === 1 ? p : -1;
  }
  return -1;
}

function digitAt(buf: Buffer, p: number, end: number): boolean {
  if (p >= end) return false;
  const c = buf[p]!;
  return c >= 0x30 && c <= 0x39;
}

/** The end of a JSON number starting at `p`, or -1. */
export function jsonNumber(buf: Buffer, p: number, end: number): number {
  if (p < end && buf[p] === 0x2d) p++;
  if (p < end && buf[p] === 0x30) p++;
  else if (digitAt(buf, p, end)) while (digitAt(buf, p, end)) p++;
  else return -1;
  if (p < end && buf[p] === 0x2e) {
    p++;
    if (!digitAt(buf, p, end)) return -1;
    while (digitAt(buf, p, end)) p++;
  }
  if (p < end && (buf[p] === 0x65 || buf[p] === 0x45)) {
    p++;
    if (p < end && (buf[p] === 0x2b || buf[p] === 0x2d)) p++;
    if (!digitAt(buf, p, end)) return -1;
    while (digitAt(buf, p, end)) p++;
  }
  return p;
}

/** The fields every record starts with, as the recorder writes them: `{"actor":"..","seq":N,"t":T`. */
export class RecordHead {
  actorStart = 0;
  actorEnd = 0;
  seq = 0;
  tStart = 0;
  tEnd = 0;

  /** Reads the head at `start`: the position after the `t` number, or -1. */
  parse(buf: Buffer, start: number, end: number): number {
    let p = literal(buf, start, end, OPEN_ACTOR);
    if (p < 0) return -1;
    const actorEnd = plainString(buf, p, end);
    if (actorEnd <= p) return -1; // not plain, or empty (a record needs an actor)
    this.actorStart = p;
    this.actorEnd = actorEnd;
    p = literal(buf, actorEnd, end, SEQ_KEY);
    if (p < 0) return -1;
    const seqStart = p;
    let seq = 0;
    while (digitAt(buf, p, end)) seq = seq * 10 + (buf[p++]! - 0x30);
    const digits = p - seqStart;
    if (digits === 0 || digits > 16 || !Number.isSafeInteger(seq) || (digits > 1 && buf[seqStart] === 0x30)) return -1;
    this.seq = seq;
    p = literal(buf, p, end, T_KEY);
    if (p < 0) return -1;
    this.tStart = p;
    p = jsonNumber(buf, p, end);
    this.tEnd = p;
    return p;
  }

  t(buf: Buffer): number {
    return Number(buf.toString("latin1", this.tStart, this.tEnd));
  }
}

/** The JSON object running from `p` (at its "{") to the record's final "}", parsed; undefined if it is not one. */
export function trailingObject(buf: Buffer, p: number, end: number): Record<string, unknown> | undefined {
  if (buf[p] !== 0x7b || buf[end - 1] !== 0x7d) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(buf.toString("utf8", p, end - 1));
  } catch {
    return undefined;
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
