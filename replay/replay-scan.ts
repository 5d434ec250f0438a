/**
 * Reading a log for replay: every line validated as the reader does (same problems, same
 * messages, duplicates dropped), records handed over one at a time through a synchronous
 * handler. Files are read in large chunks into one reused buffer; plain transition lines
 * are handed over in place (see transition-line.ts), everything else as parsed records.
 */
import { open, type FileHandle } from "node:fs/promises";
import { LogCorruptError } from "../machines/errors.js";
import { ActorNames } from "./actor-names.js";
import { decodeHeaderLine, decodeRecordLine, recordShapeProblem } from "../log/codec.js";
import { crc32Range } from "../log/crc32.js";
import { readFirstLine } from "../log/first-line.js";
import { FrameScanner } from "../log/frame-scanner.js";
import { SequenceChecker } from "../log/sequences.js";
import { sequenceStarts } from "../log/slice-header.js";
import { literal, literalBytes, plainString, RecordHead, trailingObject } from "./line-bytes.js";
import { ACTOR, TransitionLine } from "./transition-line.js";
import { LOG_FORMAT_FRAMES, type InputRecord, type LogProblem, type LogRecord } from "../log/types.js";

const INPUT_KIND = literalBytes(',"kind":"input","event":');
const OPEN_ACTOR = literalBytes('{"actor":"');

export interface ScanHandler {
  /** A problem, reported before the record it concerns is handed over (if it is). */
  problem(problem: LogProblem): void;
  /** Return false to stop reading. */
  record(record: LogRecord): boolean;
  /** A plain transition line, valid only during the call. Return false to stop reading. */
  transitionLine(line: TransitionLine, actor: string): boolean;
}

export interface ScanOutcome {
  /** The handler asked to stop before the end of the log. */
  stopped: boolean;
}

/**
 * One part of a log read by several scans at once (replay-parallel.ts): each line belongs
 * to exactly one part, decided from its bytes alone, and only that part checks it and
 * hands it over. A line's actor is the one its JSON starts with (`{"actor":"<name>"`, as
 * every writer writes it); a line that does not start so belongs to the actor it decodes
 * to, and one that does not decode (damaged, empty, torn) to part 0. Sequences are per
 * actor, so each part checks its actors' sequences completely.
 */
export interface ScanShare {
  readonly part: number;
  /** Whether this part takes the lines of `actor`. */
  takes(actor: string): boolean;
  /** Set by the scan: the line of each taken actor's first record (the order the actors appear in). */
  readonly firstLines: Map<string, number>;
  /**
   * Set by the scan, which then stops: a line decoded to another actor than the one it
   * starts with (a duplicate "actor" field), which only a whole-log scan places right.
   */
  misplaced?: string;
}

const CHUNK_BYTES = 1 << 20;
const PREFIX_LENGTH = 9;

/** Reads the log file at `path`. Throws LogCorruptError if it is not a natsched log (as openLog does). */
export async function scanLogFile(path: string, handler: ScanHandler, share?: ScanShare): Promise<ScanOutcome> {
  const handle = await open(path, "r");
  try {
    const first = await readFirstLine(handle);
    if (first === undefined) throw new LogCorruptError(`${path}: no complete header line (empty, torn, or not a natsched log)`, 1);
    const header = decodeHeaderLine(first.line);
    if (!header.ok) {
      if (header.kind === "malformed") throw new LogCorruptError(`${path}: ${header.message}`, 1);
      if (share === undefined || share.part === 0) handler.problem({ kind: "version", line: 1, message: `line 1: ${header.message}; no records read` });
      return { stopped: false };
    }
    const startAt = sequenceStarts(header.header);
    if (header.header.v === LOG_FORMAT_FRAMES) return await scanFrames(handle, first.bytes, handler, share, startAt);
    const lines = new LineChecker(handler, share, startAt);
    let buf = Buffer.allocUnsafe(CHUNK_BYTES);
    let filled = 0;
    let position = first.bytes;
    for (;;) {
      if (filled === buf.length) {
        // One line longer than the buffer: make room for the rest of it.
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, filled);
        buf = bigger;
      }
      const { bytesRead } = await handle.read(buf, filled, buf.length - filled, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const end = filled + bytesRead;
      const view = buf.subarray(0, end);
      let start = 0;
      for (let newline = view.indexOf(0x0a, filled); newline !== -1; newline = view.indexOf(0x0a, start)) {
        const more = lines.line(buf, start, newline);
        start = newline + 1;
        if (!more) return { stopped: true };
      }
      buf.copy(buf, 0, start, end);
      filled = end - start;
    }
    if (share === undefined || share.part === 0) lines.end(filled);
    return { stopped: false };
  } finally {
    await handle.close();
  }
}

/**
 * A version-2 log's frames (log/frame-scanner.ts). With a share, every part decodes every
 * frame and keeps its actors' records; frame problems are reported by part 0.
 */
async function scanFrames(handle: FileHandle, start: number, handler: ScanHandler, share: ScanShare | undefined, startAt: ReadonlyMap<string, number>): Promise<ScanOutcome> {
  const frames = new FrameScanner(start, handler, share === undefined ? { startAt } : {
    takes: (actor) => share.takes(actor),
    frameProblems: share.part === 0,
    firstRecord: (actor, index) => share.firstLines.set(actor, index),
    startAt,
  });
  let position = start;
  // One buffer for every read: the scanner keeps nothing of a chunk after push().
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, CHUNK_BYTES, position);
    if (bytesRead === 0) break;
    position += bytesRead;
    if (!frames.push(chunk.subarray(0, bytesRead))) return { stopped: true };
  }
  frames.finish();
  return { stopped: false };
}

/** Records from memory or a stream: shape and sequence checked, named by index in problems. */
export async function scanRecordSource(source: Iterable<LogRecord> | AsyncIterable<LogRecord>, handler: ScanHandler): Promise<ScanOutcome> {
  const check = new RecordChecker(handler);
  if (Symbol.iterator in source) {
    // Not `for await`: a turn of the microtask queue per record would dominate in-memory replay.
    for (const record of source) if (!check.record(record)) return { stopped: true };
  } else {
    for await (const record of source) if (!check.record(record)) return { stopped: true };
  }
  return { stopped: false };
}

class RecordChecker {
  private readonly sequences = new SequenceChecker();
  private index = 0;

  constructor(private readonly handler: ScanHandler) {}

  /** False if the handler wants no more. */
  record(record: LogRecord): boolean {
    const at = this.index++;
    const shape = recordShapeProblem(record);
    if (shape !== undefined) {
      this.handler.problem({ kind: "malformed", message: `record #${at}: ${shape}` });
      return true;
    }
    const problem = this.sequences.check(record, { index: at });
    if (problem) {
      this.handler.problem(problem);
      if (problem.kind === "duplicate") return true;
    }
    return this.handler.record(record);
  }
}

/** The checks of LogScanner, line by line, with the plain-transition fast path. */
class LineChecker {
  private lineNumber = 2;
  private readonly sequences = new SequenceChecker();
  private readonly names = new ActorNames();
  private readonly transition = new TransitionLine();
  private readonly head = new RecordHead();
  /** Reused to ask the sequence checker about a line decoded in place. */
  private readonly probe = { actor: "", seq: 0 } as LogRecord;
  /** With a share: the actor the current line belongs to. */
  private lineActor: string | undefined = undefined;
  /** With a share: whether this part takes each actor's lines. */
  private readonly taken = new Map<string, boolean>();
  /** With a share: a misplaced line stopped the scan. */
  private stopped = false;

  constructor(
    private readonly handler: ScanHandler,
    private readonly share?: ScanShare,
    startAt: ReadonlyMap<string, number> = new Map(),
  ) {
    for (const [actor, seq] of startAt) this.sequences.startAt(actor, seq);
  }

  /** The line `buf[start, end)` (without its newline); false if the handler wants no more. */
  line(buf: Buffer, start: number, end: number): boolean {
    const line = this.lineNumber++;
    if (this.share !== undefined && !this.takes(buf, start, end)) return true;
    if (end === start) {
      this.handler.problem({ kind: "malformed", line, message: `line ${line}: empty line` });
      return true;
    }
    const bodyStart = start + PREFIX_LENGTH;
    const checksum = checksumPrefix(buf, start, end);
    if (checksum === undefined || crc32Range(buf, bodyStart, end) !== checksum) return this.slowLine(buf, start, end, line);
    const transition = this.transition;
    if (transition.parse(buf, bodyStart, end)) {
      const actor = this.names.intern(buf, transition.offsets[2 * ACTOR]!, transition.offsets[2 * ACTOR + 1]!);
      this.probe.actor = actor;
      this.probe.seq = transition.seq;
      if (!this.inSequence(this.probe, line)) return !this.stopped;
      return this.handler.transitionLine(transition, actor);
    }
    const input = this.inputRecord(buf, bodyStart, end);
    if (input !== undefined) {
      if (!this.inSequence(input, line)) return !this.stopped;
      return this.handler.record(input);
    }
    let value: unknown;
    try {
      value = JSON.parse(buf.toString("utf8", bodyStart, end));
    } catch {
      return this.slowLine(buf, start, end, line);
    }
    const shape = recordShapeProblem(value);
    if (shape !== undefined) {
      this.handler.problem({ kind: "malformed", line, message: `line ${line}: ${shape}` });
      return true;
    }
    const record = value as LogRecord;
    if (!this.inSequence(record, line)) return !this.stopped;
    return this.handler.record(record);
  }

  /**
   * An input record as the recorder writes it, `{"actor":..,"seq":..,"t":..,"kind":"input","event":{..}}`,
   * with only its event left to JSON.parse (a log's inputs are a third of its lines); undefined
   * for anything else, which the generic path reads. Accepts exactly what it would accept.
   */
  private inputRecord(buf: Buffer, start: number, end: number): InputRecord | undefined {
    const head = this.head;
    let p = head.parse(buf, start, end);
    if (p < 0) return undefined;
    p = literal(buf, p, end, INPUT_KIND);
    if (p < 0) return undefined;
    const event = trailingObject(buf, p, end);
    if (event === undefined || typeof event.op !== "string") return undefined;
    const actor = this.names.intern(buf, head.actorStart, head.actorEnd);
    return { actor, seq: head.seq, t: head.t(buf), kind: "input", event: event as InputRecord["event"] };
  }

  /** The end of the file, with `tail` bytes after the last newline. */
  end(tail: number): void {
    if (tail === 0) return;
    const line = this.lineNumber++;
    this.handler.problem({ kind: "torn", line, message: `line ${line}: torn last record (${tail} bytes without a final newline)` });
  }

  /** A line that failed a fast check: the codec decides, and words the problem as the reader does. */
  private slowLine(buf: Buffer, start: number, end: number, line: number): boolean {
    const decoded = decodeRecordLine(buf.subarray(start, end));
    if (!decoded.ok) {
      this.handler.problem({ kind: decoded.kind, line, message: `line ${line}: ${decoded.message}` });
      return true;
    }
    if (!this.inSequence(decoded.record, line)) return !this.stopped;
    return this.handler.record(decoded.record);
  }

  /** Whether this scan's share takes the line `buf[start, end)` (see ScanShare). */
  private takes(buf: Buffer, start: number, end: number): boolean {
    const share = this.share!;
    this.lineActor = undefined;
    const p = literal(buf, start + PREFIX_LENGTH, end, OPEN_ACTOR);
    if (p >= 0) {
      const close = plainString(buf, p, end);
      if (close > p) return this.takesActor(this.names.intern(buf, p, close));
    }
    if (end > start) {
      const decoded = decodeRecordLine(buf.subarray(start, end));
      if (decoded.ok) return this.takesActor(decoded.record.actor);
    }
    return share.part === 0;
  }

  private takesActor(actor: string): boolean {
    this.lineActor = actor;
    let takes = this.taken.get(actor);
    if (takes === undefined) this.taken.set(actor, (takes = this.share!.takes(actor)));
    return takes;
  }

  /** Reports a sequence problem; false for a duplicate, which is dropped. */
  private inSequence(record: LogRecord, line: number): boolean {
    const share = this.share;
    if (share !== undefined) {
      if (record.actor !== this.lineActor) {
        share.misplaced = `line ${line}: a record of ${record.actor} that starts as one of ${String(this.lineActor)}`;
        this.stopped = true;
        return false;
      }
      if (!share.firstLines.has(record.actor)) share.firstLines.set(record.actor, line);
    }
    const problem = this.sequences.check(record, { line });
    if (problem === undefined) return true;
    this.handler.problem(problem);
    return problem.kind !== "duplicate";
  }
}

/** The checksum in a line's "xxxxxxxx " prefix, or undefined if the prefix is not that. */
function checksumPrefix(buf: Buffer, start: number, end: number): number | undefined {
  if (end - start < PREFIX_LENGTH || buf[start + 8] !== 0x20) return undefined;
  let value = 0;
  for (let i = start; i < start + 8; i++) {
    const c = buf[i]!;
    let digit: number;
    if (c >= 0x30 && c <= 0x39) digit = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) digit = c - 0x61 + 10;
    else return undefined;
    value = value * 16 + digit;
  }
  return value;
}
