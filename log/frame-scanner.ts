/**
 * Reads the frames of a version-2 log (log/frame-format.ts) from its bytes after the
 * header, in chunks of any size: every frame checked, decoded into records, and the
 * records checked as a version-1 reader checks lines (shape, per-actor sequence;
 * duplicates dropped). What it skips it reports, never silently:
 *   - "torn": the file ends inside a frame (a crash cut the last write short);
 *   - "checksum": a frame whose body does not match its CRC (its records are skipped);
 *   - "malformed": bytes that are not a frame (the scan looks for the next frame head and
 *     goes on from there), or a frame whose body does not decode;
 *   - "gap" / "duplicate": as for version 1.
 */
import { endianness } from "node:os";
import { LogCorruptError } from "../machines/errors.js";
import { captureDecoderProgram, type FrameDecoder, type RecordSink, type TransitionShape } from "./capture-decoder.js";
import { CAPTURE_TAGS } from "./capture-tags.js";
import { recordShapeProblem } from "./codec.js";
import { decodeFrameHead, FRAME_HEAD_BYTES, FRAME_MAGIC_BYTES, frameBodyCrc } from "./frame-format.js";
import { SequenceChecker } from "./sequences.js";
import type { LogProblem, LogRecord } from "./types.js";

const decoders = captureDecoderProgram(CAPTURE_TAGS);
const EMPTY = Buffer.alloc(0);
/** In a frame's decoded records, in place of a transition kept as its parts (FrameScanOptions.transientTransitions). */
const PARTS = Object.freeze({ parts: true }) as unknown as LogRecord;
/** In a frame's decoded records, in place of one of an actor not taken that is not built (FrameScanner.transition). */
const SKIPPED = Object.freeze({ skipped: true }) as unknown as LogRecord;
/** The most room made ahead for a frame cut by the end of a chunk; beyond it the buffer grows as bytes come. */
const MAX_PREALLOCATED = 16 * 1024 * 1024;

export interface FrameScanHandler {
  problem(problem: LogProblem): void;
  /** Return false to stop reading. */
  record(record: LogRecord): boolean;
}

export interface FrameScanOptions {
  /**
   * Only the records of actors this takes are checked and handed over (one share of a
   * parallel scan, replay-parallel.ts); the others are decoded and dropped.
   */
  takes?: (actor: string) => boolean;
  /** Report the problems of the frames themselves (torn, checksum, malformed): one share does. Default true. */
  frameProblems?: boolean;
  /** Called with each taken actor's first record's number in the file. */
  firstRecord?: (actor: string, index: number) => void;
  /** Actors whose records start at a seq other than 0 (a slice that starts them from snapshots: slice-header.ts). */
  startAt?: ReadonlyMap<string, number>;
  /** Called before the records of each frame that decodes, with its byte offset in the file (the log index's blocks). */
  frameStart?: (offset: number) => void;
  /** Inputs' events keep only these fields (capture-decoder.ts: DecoderOptions): for a reader that needs no more. */
  inputFields?: ReadonlySet<string>;
  /** Transitions' whys keep only these fields (DecoderOptions.whyFields). */
  whyFields?: ReadonlySet<string>;
  /**
   * The handler keeps no transition record past its call (a fold that copies fields): every
   * transition comes in one object, refilled, so a pass over a large log builds none.
   */
  transientTransitions?: boolean;
}


export class FrameScanner implements RecordSink {
  private buf: Buffer = EMPTY;
  /** Reused for the bytes pending between chunks (not a chunk: those belong to the caller). */
  private kept: Buffer = EMPTY;
  private start = 0;
  private end = 0;
  /** File offset of buf[0]. */
  private base: number;
  /** Bytes skipped as not a frame, not yet reported: from where, how many. */
  private junkAt = -1;
  private junkBytes = 0;
  private readonly decoder: FrameDecoder;
  private readonly sequences = new SequenceChecker();
  private readonly taken = new Map<string, boolean>();
  private decoded: (LogRecord | string)[] = [];
  /** With transientTransitions: a frame's transitions as their parts, in order, and the next one to hand over. */
  private readonly parts: { shapes: TransitionShape[]; seqs: (number | null)[]; ts: (number | null)[]; ids: string[]; whys: unknown[] } = { shapes: [], seqs: [], ts: [], ids: [], whys: [] };
  private nextPart = 0;
  /** The one transition record handed over, with transientTransitions. */
  private readonly reused = { actor: "", seq: 0 as number | null, t: 0 as number | null, kind: "transition", machine: "", id: "", event: "", from: "", to: "", why: undefined as unknown };
  private index = 0;
  private stopped = false;

  /** `offset`: where in the file the first byte pushed is. */
  constructor(
    offset: number,
    private readonly handler: FrameScanHandler,
    private readonly options: FrameScanOptions = {},
  ) {
    if (endianness() !== "LE") throw new LogCorruptError("version-2 (binary) logs are read on little-endian machines only: convert it to JSON lines on one (natsched log export --format jsonl)");
    const { inputFields, whyFields } = options;
    this.decoder = decoders.decoder({ ...(inputFields !== undefined ? { inputFields } : {}), ...(whyFields !== undefined ? { whyFields } : {}) });
    this.base = offset;
    for (const [actor, seq] of options.startAt ?? []) this.sequences.startAt(actor, seq);
  }

  /**
   * Takes the next bytes of the file; false once the handler asked to stop. `chunk` is not
   * kept after the call (what a frame still needs of it is copied), so the caller may reuse it.
   */
  push(chunk: Buffer): boolean {
    if (this.stopped) return false;
    let from = 0;
    // Bytes left from earlier chunks: only what their frame still needs is copied to them,
    // so each chunk is read in place but for its first frame.
    while (this.end > this.start && from < chunk.length) {
      // Less than a head pending (junk skipped, or a head cut short): a few KB more, so that
      // junk is searched in long runs.
      const needed = this.end - this.start < FRAME_HEAD_BYTES ? Math.max(this.needed(), 4096) : this.needed();
      const take = Math.min(needed, chunk.length - from);
      this.append(chunk, from, from + take);
      from += take;
      this.frames();
      if (this.stopped) return false;
    }
    if (from === chunk.length) return true;
    this.base += this.start;
    this.buf = from === 0 ? chunk : chunk.subarray(from);
    this.start = 0;
    this.end = this.buf.length;
    this.frames();
    const left = this.end - this.start;
    this.base += this.start;
    if (left > 0) {
      // Room for the whole frame if its head says how long it is (within reason: a head
      // may claim more bytes than the file has).
      const head = left >= FRAME_HEAD_BYTES ? decodeFrameHead(this.buf, this.start) : undefined;
      const frame = head === undefined ? 0 : Math.min(FRAME_HEAD_BYTES + head.bodyBytes, MAX_PREALLOCATED);
      const rest = this.spare(Math.max(left, frame));
      this.buf.copy(rest, 0, this.start, this.end);
      this.buf = rest;
      this.end = left;
    } else {
      this.buf = EMPTY;
      this.end = 0;
    }
    this.start = 0;
    return !this.stopped;
  }

  /** Bytes pushed and not yet read as frames: the start of a frame waiting for the rest of it. */
  get held(): number {
    return this.end - this.start;
  }

  /** How many more bytes the bytes pending need before frames() can go on: the rest of a head, or of a frame. */
  private needed(): number {
    const left = this.end - this.start;
    if (left < FRAME_HEAD_BYTES) return FRAME_HEAD_BYTES - left;
    const head = decodeFrameHead(this.buf, this.start);
    // frames() leaves a head it cannot read only when fewer bytes than a head follow it.
    return head === undefined ? 1 : FRAME_HEAD_BYTES + head.bodyBytes - left;
  }

  /** Appends chunk[from, to) to the bytes pending. */
  private append(chunk: Buffer, from: number, to: number): void {
    const left = this.end - this.start;
    if (this.end + (to - from) > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(left + (to - from), 2 * this.buf.length));
      this.buf.copy(bigger, 0, this.start, this.end);
      this.base += this.start;
      this.start = 0;
      this.end = left;
      this.buf = this.kept = bigger;
    }
    chunk.copy(this.buf, this.end, from, to);
    this.end += to - from;
  }

  /** A buffer of at least `bytes` for the bytes pending: the one kept from before when it is large enough. */
  private spare(bytes: number): Buffer {
    if (this.kept.length < bytes) this.kept = Buffer.allocUnsafe(Math.max(bytes, 64 * 1024));
    return this.kept;
  }

  /** The end of the file: whatever is left is a torn frame or not a frame. */
  finish(): void {
    if (this.stopped) return;
    const left = this.end - this.start;
    if (left > 0) {
      const at = this.base + this.start;
      const head = decodeFrameHead(this.buf.subarray(0, this.end), this.start);
      const magic = FRAME_MAGIC_BYTES.subarray(0, Math.min(4, left)).equals(this.buf.subarray(this.start, this.start + Math.min(4, left)));
      if (head !== undefined || (left < FRAME_HEAD_BYTES && magic)) {
        this.reportJunk();
        const whole = head === undefined ? "" : ` of ${FRAME_HEAD_BYTES + head.bodyBytes}`;
        this.frameProblem({ kind: "torn", offset: at, message: `frame at byte ${at}: torn last frame (${left}${whole} bytes)` });
      } else {
        this.junk(at, left);
      }
      this.start = this.end;
    }
    this.reportJunk();
  }

  // RecordSink: the decoder's output for one frame, kept until the frame has decoded whole.
  record(record: LogRecord): void {
    this.decoded.push(record);
  }

  raw(json: string): void {
    this.decoded.push(json);
  }

  /**
   * A transition: built as a record, except one of an actor this scan already knows it does
   * not take, whose shape is right (recordShapeProblem would find nothing): only counted.
   */
  transition(shape: TransitionShape, seq: number | null, t: number | null, id: string, why: unknown): void {
    const actor = shape.actor;
    if (
      this.options.takes !== undefined &&
      this.taken.get(actor) === false &&
      actor !== "" &&
      typeof seq === "number" &&
      Number.isSafeInteger(seq) &&
      seq >= 0 &&
      typeof t === "number" &&
      (why === undefined || (typeof why === "object" && why !== null && !Array.isArray(why)))
    ) {
      this.decoded.push(SKIPPED);
      return;
    }
    if (this.options.transientTransitions === true) {
      const parts = this.parts;
      parts.shapes.push(shape);
      parts.seqs.push(seq);
      parts.ts.push(t);
      parts.ids.push(id);
      parts.whys.push(why);
      this.decoded.push(PARTS);
      return;
    }
    const { machine, event, from, to } = shape;
    this.decoded.push((why === undefined ? { actor, seq, t, kind: "transition", machine, id, event, from, to } : { actor, seq, t, kind: "transition", machine, id, event, from, to, why }) as LogRecord);
  }

  private frames(): void {
    const buf = this.buf;
    while (!this.stopped) {
      const left = this.end - this.start;
      if (left < FRAME_HEAD_BYTES) return;
      const at = this.base + this.start;
      const head = decodeFrameHead(buf, this.start);
      if (head === undefined) {
        // Not a frame head: on to the next place that starts like one.
        const next = buf.subarray(0, this.end).indexOf(FRAME_MAGIC_BYTES, this.start + 1);
        const skip = next === -1 ? Math.max(1, left - (FRAME_MAGIC_BYTES.length - 1)) : next - this.start;
        this.junk(at, skip);
        this.start += skip;
        continue;
      }
      const total = FRAME_HEAD_BYTES + head.bodyBytes;
      if (left < total) return;
      this.reportJunk();
      const body = buf.subarray(this.start + FRAME_HEAD_BYTES, this.start + total);
      this.start += total;
      const crc = frameBodyCrc(body, head);
      if (crc !== head.bodyCrc) {
        this.frameProblem({ kind: "checksum", offset: at, message: `frame at byte ${at}: checksum mismatch (head says ${hex(head.bodyCrc)}, body hashes to ${hex(crc)}): its ${head.records} records are skipped` });
        continue;
      }
      this.frame(body, head.n, head.c, head.records, at);
    }
  }

  private frame(body: Buffer, n: number, c: number, records: number, at: number): void {
    const offset = body.byteOffset;
    const nums = offset % 8 === 0 ? new Float64Array(body.buffer, offset, n) : new Float64Array(copyOf(body, 0, n * 8));
    const chars = (offset + n * 8) % 2 === 0 ? new Uint16Array(body.buffer, offset + n * 8, c) : new Uint16Array(copyOf(body, n * 8, c * 2));
    this.decoded = [];
    const parts = this.parts;
    parts.shapes.length = parts.seqs.length = parts.ts.length = parts.ids.length = parts.whys.length = 0;
    this.nextPart = 0;
    try {
      this.decoder.decode(nums, chars, n, c, this);
      if (this.decoded.length !== records) throw new Error(`${this.decoded.length} records where the head says ${records}`);
    } catch (err) {
      this.frameProblem({ kind: "malformed", offset: at, message: `frame at byte ${at}: ${(err as Error).message}: its records are skipped` });
      return;
    }
    const decoded = this.decoded;
    this.decoded = [];
    this.options.frameStart?.(at);
    for (let k = 0; k < decoded.length && !this.stopped; k++) this.take(decoded[k]!, at);
  }

  private take(item: LogRecord | string, at: number): void {
    const index = this.index++;
    if (item === SKIPPED) return;
    let record: LogRecord;
    if (item === PARTS) {
      const { shapes, seqs, ts, ids, whys } = this.parts;
      const k = this.nextPart++;
      const reused = this.reused;
      const shape = shapes[k]!;
      reused.actor = shape.actor;
      reused.seq = seqs[k]!;
      reused.t = ts[k]!;
      reused.machine = shape.machine;
      reused.id = ids[k]!;
      reused.event = shape.event;
      reused.from = shape.from;
      reused.to = shape.to;
      reused.why = whys[k];
      record = reused as unknown as LogRecord;
    } else if (typeof item === "string") {
      let value: unknown;
      try {
        value = JSON.parse(item);
      } catch (err) {
        this.frameProblem({ kind: "malformed", offset: at, message: `record #${index} (frame at byte ${at}): record is not JSON: ${(err as Error).message}` });
        return;
      }
      record = value as LogRecord;
    } else {
      record = item;
    }
    const shape = recordShapeProblem(record);
    if (shape !== undefined) {
      this.frameProblem({ kind: "malformed", offset: at, message: `record #${index} (frame at byte ${at}): ${shape}` });
      return;
    }
    const takes = this.options.takes;
    if (takes !== undefined) {
      let taken = this.taken.get(record.actor);
      if (taken === undefined) {
        this.taken.set(record.actor, (taken = takes(record.actor)));
        if (taken) this.options.firstRecord?.(record.actor, index);
      }
      if (!taken) return;
    }
    const problem = this.sequences.check(record, { index, offset: at });
    if (problem !== undefined) {
      this.handler.problem(problem);
      if (problem.kind === "duplicate") return;
    }
    if (!this.handler.record(record)) this.stopped = true;
  }

  private junk(at: number, bytes: number): void {
    if (this.junkAt < 0) this.junkAt = at;
    this.junkBytes += bytes;
  }

  private reportJunk(): void {
    if (this.junkAt < 0) return;
    const at = this.junkAt;
    const bytes = this.junkBytes;
    this.junkAt = -1;
    this.junkBytes = 0;
    this.frameProblem({ kind: "malformed", offset: at, message: `bytes ${at}..${at + bytes - 1} are not a frame (${bytes} bytes skipped)` });
  }

  private frameProblem(problem: LogProblem): void {
    if (this.options.frameProblems === false) return;
    this.handler.problem(problem);
  }
}

function copyOf(body: Buffer, start: number, bytes: number): ArrayBuffer {
  const copy = new Uint8Array(bytes);
  copy.set(body.subarray(start, start + bytes));
  return copy.buffer;
}

function hex(value: number): string {
  return value.toString(16).padStart(8, "0");
}
