/**
 * One line of a natsched log file, encoded and decoded. See docs/log-format.md.
 *
 *   header:  {"format":"natsched-log","v":1,"created":<ms epoch>,"meta":{...},"crc":"<crc32>"}\n
 *            (the crc32 of the line before `,"crc"`, closed with "}"; absent in older logs)
 *   record:  <crc32 of the JSON, 8 lowercase hex digits> <JSON of the record>\n   (version 1)
 *
 * A version-2 file has the same header line (padded with spaces to a multiple of 8 bytes)
 * and frames after it (log/frame-format.ts).
 */
import { crc32 } from "node:zlib";
import { crc32Range } from "./crc32.js";
import { LOG_FORMAT_FRAMES, LOG_FORMAT_VERSION, LOG_FORMAT_VERSIONS, type LogRecord, type RecordKind } from "./types.js";

export const LOG_FORMAT_NAME = "natsched-log";

export interface LogHeader {
  format: typeof LOG_FORMAT_NAME;
  v: number;
  /** When the log was created, ms since the epoch. */
  created: number;
  /** Free-form description of the run (host, config, command line...). */
  meta: Record<string, unknown>;
}

export type HeaderDecoding =
  | { ok: true; header: LogHeader }
  /** A natsched log of a version this code does not read; `header` is what it says. */
  | { ok: false; kind: "version"; message: string; header: LogHeader }
  | { ok: false; kind: "malformed"; message: string };

export type RecordDecoding =
  | { ok: true; record: LogRecord }
  | { ok: false; kind: "checksum" | "malformed"; message: string };

export function makeHeader(meta: Record<string, unknown> = {}, created = Date.now(), v = LOG_FORMAT_VERSION): LogHeader {
  return { format: LOG_FORMAT_NAME, v, created, meta };
}

/**
 * The header line, ending in `"crc":"<crc32 of the line before that field, closed with "}">"`;
 * a version-2 one padded with spaces to a multiple of 8 bytes (its frames' alignment).
 */
export function encodeHeaderLine(header: LogHeader): string {
  const body = JSON.stringify({ format: header.format, v: header.v, created: header.created, meta: header.meta });
  const json = `${body.slice(0, -1)},"crc":"${hex8(crc32(body))}"}`;
  if (header.v !== LOG_FORMAT_FRAMES) return json + "\n";
  const bytes = Buffer.byteLength(json, "utf8") + 1;
  return json + " ".repeat((8 - (bytes & 7)) & 7) + "\n";
}

/** `line` without its trailing newline. */
export function decodeHeaderLine(line: string): HeaderDecoding {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return { ok: false, kind: "malformed", message: `header is not JSON: ${(err as Error).message}` };
  }
  if (!isObject(value) || value.format !== LOG_FORMAT_NAME) {
    return { ok: false, kind: "malformed", message: `header does not start a ${LOG_FORMAT_NAME} file` };
  }
  if (typeof value.v !== "number" || typeof value.created !== "number" || (value.meta !== undefined && !isObject(value.meta))) {
    return { ok: false, kind: "malformed", message: "header needs a numeric v, a numeric created and an object meta" };
  }
  if (value.crc !== undefined) {
    const damage = headerChecksumDamage(line);
    if (damage !== undefined) return { ok: false, kind: "malformed", message: `header checksum: ${damage} (the header is damaged)` };
  } else {
    // Written before the checksum: exactly these fields. Another one may be a damaged "crc".
    const unknown = Object.keys(value).filter((key) => !UNCHECKED_HEADER_FIELDS.has(key));
    if (unknown.length > 0) return { ok: false, kind: "malformed", message: `header without a checksum has unknown field(s) ${unknown.map((k) => JSON.stringify(k)).join(", ")} (damaged?)` };
  }
  const header: LogHeader = { format: LOG_FORMAT_NAME, v: value.v, created: value.created, meta: (value.meta as Record<string, unknown> | undefined) ?? {} };
  if (!LOG_FORMAT_VERSIONS.includes(header.v)) {
    return { ok: false, kind: "version", message: `log format version ${header.v} is not supported (this reader reads versions ${LOG_FORMAT_VERSIONS.join(" and ")})`, header };
  }
  return { ok: true, header };
}

/** The fields of a header written before the checksum; one with "crc" may have more (it covers them). */
const UNCHECKED_HEADER_FIELDS: ReadonlySet<string> = new Set(["format", "v", "created", "meta"]);

/** Why the header line's "crc" does not match the bytes before it, or undefined if it does. */
function headerChecksumDamage(line: string): string | undefined {
  const found = /,"crc":"([0-9a-f]{8})"\} *$/.exec(line);
  if (found === null) return `the line does not end with "crc":"<8 hex digits>"} (and padding spaces)`;
  const body = line.slice(0, found.index) + "}";
  const computed = hex8(crc32(body));
  return computed === found[1] ? undefined : `recorded ${found[1]}, computed ${computed}`;
}

function hex8(n: number): string {
  return n.toString(16).padStart(8, "0");
}

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** One record line, "\n" included, as a string (the file writer uses writeRecordLine instead). */
export function encodeRecordLine(record: LogRecord): string {
  const json = JSON.stringify(record);
  const c = crc32(json);
  return HEX_BYTE[c >>> 24]! + HEX_BYTE[(c >>> 16) & 255]! + HEX_BYTE[(c >>> 8) & 255]! + HEX_BYTE[c & 255]! + " " + json + "\n";
}

const PREFIX_LENGTH = 9; // 8 hex digits and a space
const HEX_DIGIT = Buffer.from("0123456789abcdef", "latin1");

/** Room `writeRecordLine` may need for `json`: 3 UTF-8 bytes per UTF-16 unit at worst. */
export function maxRecordLineBytes(json: string): number {
  return PREFIX_LENGTH + json.length * 3 + 1;
}

/**
 * Writes the record line for `json` (a record's JSON) into `target` at `offset`, which
 * must have maxRecordLineBytes(json) bytes of room, and returns the offset after it. The
 * file writer's encoder: no intermediate strings, the checksum computed over the bytes
 * just written.
 */
export function writeRecordLine(target: Buffer, offset: number, json: string): number {
  const bodyStart = offset + PREFIX_LENGTH;
  const bodyEnd = bodyStart + target.write(json, bodyStart, "utf8");
  const c = crc32Range(target, bodyStart, bodyEnd);
  for (let digit = 0; digit < 8; digit++) target[offset + digit] = HEX_DIGIT[(c >>> (28 - 4 * digit)) & 15]!;
  target[offset + 8] = 0x20;
  target[bodyEnd] = 0x0a;
  return bodyEnd + 1;
}

/**
 * `line` without its trailing newline. Given bytes, the checksum is verified over the
 * exact bytes in the file; given a string, over its UTF-8 encoding (the same thing for
 * any line that is valid UTF-8).
 */
export function decodeRecordLine(line: Uint8Array | string): RecordDecoding {
  const bytes =
    typeof line === "string" ? Buffer.from(line, "utf8") : Buffer.isBuffer(line) ? line : Buffer.from(line.buffer, line.byteOffset, line.byteLength);
  const expected = parseChecksumPrefix(bytes);
  if (expected === undefined) {
    return { ok: false, kind: "malformed", message: "line does not start with an 8-digit lowercase hex checksum and a space" };
  }
  const body = bytes.subarray(PREFIX_LENGTH);
  const actual = crc32(body);
  if (actual !== expected) {
    return { ok: false, kind: "checksum", message: `checksum mismatch: line says ${hex(expected)}, content hashes to ${hex(actual)}` };
  }
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch (err) {
    return { ok: false, kind: "malformed", message: `record is not JSON: ${(err as Error).message}` };
  }
  const problem = recordShapeProblem(value);
  if (problem !== undefined) return { ok: false, kind: "malformed", message: problem };
  return { ok: true, record: value as LogRecord };
}

function parseChecksumPrefix(bytes: Uint8Array): number | undefined {
  if (bytes.length < PREFIX_LENGTH || bytes[8] !== 0x20) return undefined;
  let value = 0;
  for (let i = 0; i < 8; i++) {
    const c = bytes[i]!;
    let digit: number;
    if (c >= 0x30 && c <= 0x39) digit = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) digit = c - 0x61 + 10;
    else return undefined;
    value = value * 16 + digit; // multiplication, not <<, so the result stays unsigned
  }
  return value;
}

function hex(value: number): string {
  return value.toString(16).padStart(8, "0");
}

const KINDS: ReadonlySet<RecordKind> = new Set<RecordKind>(["start", "input", "transition", "stop"]);

/** Why `value` is not a LogRecord, or undefined if it is one. Unknown extra fields are allowed. */
export function recordShapeProblem(value: unknown): string | undefined {
  if (!isObject(value)) return "record is not a JSON object";
  if (typeof value.actor !== "string" || value.actor === "") return "record has no actor";
  if (typeof value.seq !== "number" || !Number.isSafeInteger(value.seq) || value.seq < 0) return "record seq is not a non-negative integer";
  if (typeof value.t !== "number") return "record t is not a number";
  const kind = value.kind;
  if (typeof kind !== "string" || !KINDS.has(kind as RecordKind)) return `unknown record kind ${JSON.stringify(kind)}`;
  switch (kind as RecordKind) {
    case "start":
      if (typeof value.role !== "string") return "start record has no role";
      if (!isObject(value.init)) return "start record init is not an object";
      return undefined;
    case "input":
      if (!isObject(value.event) || typeof value.event.op !== "string") return "input record event has no op";
      return undefined;
    case "transition":
      // Named loads, not a loop over the names: keyed loads on every transition were a tenth of a binary log's first pass.
      if (typeof value.machine !== "string") return "transition record machine is not a string";
      if (typeof value.id !== "string") return "transition record id is not a string";
      if (typeof value.event !== "string") return "transition record event is not a string";
      if (typeof value.from !== "string") return "transition record from is not a string";
      if (typeof value.to !== "string") return "transition record to is not a string";
      if (value.why !== undefined && !isObject(value.why)) return "transition record why is not an object";
      return undefined;
    case "stop":
      if (value.reason !== undefined && typeof value.reason !== "string") return "stop record reason is not a string";
      return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
