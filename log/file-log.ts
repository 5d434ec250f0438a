/**
 * A LogSink writing a natsched log file. `append` captures the record into the current
 * batch (log/log-capture.ts: a compact binary form, taken at once so the caller may
 * reuse the record); a full batch (512 KiB of capture) is sealed and handed to the
 * process's log writer thread (log/log-writer.ts), which writes batches in order: each
 * as one checked frame (format version 2, the default) or as a JSON line per record
 * (version 1, `format: "jsonl"`; docs/log-format.md). A part-full batch is sealed by the
 * first record that comes SEAL_AFTER_MS or more after its first, or by a timer SEAL_QUIET_MS
 * after its first when none comes, so records do not wait for the threshold. The
 * actors' thread pays for the capture only, except for a small batch while the thread has
 * nothing in hand, which it writes itself (log/inline-write.ts): at low rates the log then
 * wakes no other thread.
 */
import { open, type FileHandle } from "node:fs/promises";
import { endianness } from "node:os";
import { BadOptionError, ClosedError, LogCorruptError } from "../machines/errors.js";
import { decodeHeaderLine, encodeHeaderLine, makeHeader } from "./codec.js";
import { writerMeta } from "./package-version.js";
import { readFirstLine } from "./first-line.js";
import { decodeFrameHead, FRAME_HEAD_BYTES, FRAME_MAGIC_BYTES } from "./frame-format.js";
import { LogCapture } from "./log-capture.js";
import { BATCH_CHARS, BATCH_NUMS, LogWriterThread } from "./log-writer.js";
import { inlineWriter, writeBatchHere } from "./inline-write.js";
import type { BatchWriter } from "./log-format-thread.js";
import { LOG_FORMAT_FRAMES, LOG_FORMAT_VERSION, type InputRecord, type LogRecord, type LogSink } from "./types.js";
import type { LoggedWhy, MachineName } from "../machines/reasons.js";

/** A file log's format: "binary" (version 2, frames: the default) or "jsonl" (version 1, a JSON line per record). */
export type LogFileFormat = "binary" | "jsonl";

export interface FileLogSinkOptions {
  /** Stored in the header of a new log. Ignored when appending to an existing one. */
  meta?: Record<string, unknown>;
  /**
   * Append to the log at `path` if it exists (after checking its header) instead of
   * truncating it. A missing or empty file is created as a new log. A torn last record
   * (see `truncatedTail`) is cut off first.
   */
  append?: boolean;
  /** Bytes of capture per batch (default 512 KiB): smaller batches reach the file sooner. */
  batchBytes?: number;
  /**
   * The file's format (default "binary"). Ignored when appending to an existing log, which
   * goes on in its own. `natsched log export` turns one into the other.
   */
  format?: LogFileFormat;
  /** The header's creation time (ms since the epoch) of a new log; default now. A copy keeps its source's. */
  created?: number;
}

/**
 * The format version of a file format option (which must be one). Frames hold their doubles
 * little-endian, as the machine has them: on a big-endian machine the default is JSON lines.
 */
export function logFormatVersion(format: unknown): number {
  if (format === undefined) return LITTLE_ENDIAN ? LOG_FORMAT_FRAMES : LOG_FORMAT_VERSION;
  if (format === "jsonl") return LOG_FORMAT_VERSION;
  if (format === "binary") {
    if (!LITTLE_ENDIAN) throw new BadOptionError("log.format", '"binary" logs are written on little-endian machines only; use "jsonl"');
    return LOG_FORMAT_FRAMES;
  }
  throw new BadOptionError("log.format", `must be "binary" or "jsonl", not ${JSON.stringify(format)}`);
}

const LITTLE_ENDIAN = endianness() === "LE";

/** A part-full batch is sealed by a record that comes this long after its first record (a full one at once)... */
const SEAL_AFTER_MS = 25;
/**
 * ...or by a timer this long after its first record. While records come, they seal the
 * batches and the timer rarely fires: a timer's wake-up of the process (a cleared timer's
 * too) takes a core from the threads running tasks.
 */
const SEAL_QUIET_MS = 100;
/**
 * Largest batch (bytes of capture) the actors' thread writes itself when the writer thread is
 * idle: a frame's checksum and write take a few microseconds per KiB. A version-1 log's lines
 * cost a JSON.stringify per record, so its limit is lower.
 */
const INLINE_FRAME_BYTES = 64 * 1024;
const INLINE_LINES_BYTES = 8 * 1024;
/**
 * A record that does not fit a batch holding others is captured again in an empty batch,
 * which grows in place as the record needs (LogCapture), so the record is walked at most
 * twice. Growing here, and trying again, is only a fallback for a capture that could not.
 */
const GROWTH = 8;

interface FlushWaiter {
  /** Resolve once this many batches have been written. */
  batches: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class FileLogSink implements LogSink {
  static async open(path: string, options: FileLogSinkOptions = {}): Promise<FileLogSink> {
    let v = logFormatVersion(options.format);
    const existing = options.append ? await prepareForAppend(path) : undefined;
    if (existing !== undefined) v = existing.v;
    const handle = await open(path, existing === undefined ? "w" : "a");
    if (existing === undefined) {
      try {
        const header = Buffer.from(encodeHeaderLine(makeHeader({ ...writerMeta(), ...options.meta }, options.created ?? Date.now(), v)), "utf8");
        for (let at = 0; at < header.length; ) at += (await handle.write(header, at)).bytesWritten;
      } catch (err) {
        await handle.close().catch(() => undefined);
        throw err;
      }
    }
    return new FileLogSink(path, handle, v, existing?.truncatedTail ?? 0, options.batchBytes);
  }

  private readonly writer: LogWriterThread;
  private readonly id: number;
  private readonly capture: LogCapture;
  private readonly standardNums: number;
  private sealedCount = 0;
  private writtenCount = 0;
  /** The last batch the thread was asked to answer for (a flush's seal or sync). */
  private askedCount = 0;
  /** The writer of the batches this thread writes itself (made on first use). */
  private inline: BatchWriter | undefined;
  private tickScheduled = false;
  /** performance.now() of the current batch's first record (meaningful while it holds any). */
  private batchStart = 0;
  private failure: { error: unknown } | undefined;
  private waiters: FlushWaiter[] = [];
  private closing: Promise<void> | undefined;

  private constructor(
    readonly location: string,
    private readonly handle: FileHandle,
    /** The file's format version: 1 (JSON lines) or 2 (frames). */
    readonly formatVersion: number,
    /** Bytes of a torn last record cut off the existing log when it was opened to append. */
    readonly truncatedTail: number,
    /** Custom batch size in bytes, or undefined for the writer's standard size. */
    private readonly batchBytes?: number,
  ) {
    this.writer = LogWriterThread.shared();
    this.id = this.writer.open(handle.fd, formatVersion, {
      done: (seq, error) => {
        if (error !== undefined) this.failure ??= { error };
        this.writtenCount = Math.max(this.writtenCount, seq);
        this.settleWaiters();
      },
      lost: (error) => {
        this.failure ??= { error };
        this.writtenCount = this.sealedCount;
        this.settleWaiters();
      },
    });
    const { nums, chars } = this.arrays();
    this.standardNums = nums.length;
    this.capture = new LogCapture(nums, chars);
  }

  append(record: LogRecord): void {
    if (this.closing) throw new ClosedError(`log ${this.location}`);
    // After a write failed nothing more is written (flush and close report the error).
    if (this.failure) return;
    this.sealIfDue();
    if (!this.capture.record(record)) {
      this.makeRoom();
      while (!this.capture.record(record)) this.capture.grow(GROWTH);
    }
    this.started();
  }

  /** The transition record { actor, seq, t, kind: "transition", machine, id, event, from, to, why? }, given as fields. */
  appendTransition(actor: string, seq: number, t: number, machine: MachineName, id: string, event: string, from: string, to: string, why?: LoggedWhy): void {
    if (this.closing) throw new ClosedError(`log ${this.location}`);
    if (this.failure) return;
    this.sealIfDue();
    if (!this.capture.transition(actor, seq, t, machine, id, event, from, to, why)) {
      this.makeRoom();
      while (!this.capture.transition(actor, seq, t, machine, id, event, from, to, why)) this.capture.grow(GROWTH);
    }
    this.started();
  }

  /** The input record { actor, seq, t: event.t, kind: "input", event }, given as fields. */
  appendInput(actor: string, seq: number, event: InputRecord["event"] & { t: number }): void {
    if (this.closing) throw new ClosedError(`log ${this.location}`);
    if (this.failure) return;
    this.sealIfDue();
    if (!this.capture.input(actor, seq, event)) {
      this.makeRoom();
      while (!this.capture.input(actor, seq, event)) this.capture.grow(GROWTH);
    }
    this.started();
  }

  flush(): Promise<void> {
    if (!this.capture.empty) this.seal(true);
    if (this.writtenCount >= this.sealedCount) {
      return this.failure ? Promise.reject(this.failure.error) : Promise.resolve();
    }
    // Batches sealed by the timer are not answered: ask the thread to say when they are written.
    if (this.askedCount < this.sealedCount) {
      try {
        this.writer.sync(this.id, this.sealedCount);
        this.askedCount = this.sealedCount;
      } catch (err) {
        this.failure ??= { error: err };
        this.writtenCount = this.sealedCount;
        return Promise.reject(this.failure.error);
      }
    }
    this.writer.hold();
    return new Promise<void>((resolve, reject) => this.waiters.push({ batches: this.sealedCount, resolve, reject })).finally(() => this.writer.release());
  }

  /** Flushes, syncs the file to disk and closes it. Later appends throw ClosedError. */
  close(): Promise<void> {
    this.closing ??= this.finish();
    return this.closing;
  }

  private async finish(): Promise<void> {
    let error: { error: unknown } | undefined;
    try {
      await this.flush();
      await this.handle.datasync();
    } catch (err) {
      error = { error: err };
    }
    this.writer.forget(this.id);
    try {
      await this.handle.close();
    } catch (err) {
      error ??= { error: err };
    }
    if (error) throw error.error;
  }

  /** Before a record: a part-full batch whose first record is SEAL_AFTER_MS old goes now. */
  private sealIfDue(): void {
    if (!this.capture.empty && performance.now() - this.batchStart >= SEAL_AFTER_MS) this.seal();
  }

  /** After a record: the first of a batch starts its clock, and the timer if none is set. */
  private started(): void {
    if (this.capture.records !== 1) return;
    this.batchStart = performance.now();
    this.scheduleTick(SEAL_QUIET_MS);
  }

  private scheduleTick(ms: number): void {
    if (!this.tickScheduled) {
      this.tickScheduled = true;
      setTimeout(this.onTick, ms).unref();
    }
  }

  /** The batch goes if it is SEAL_AFTER_MS old; a younger one (records still coming) gets the timer again for its own SEAL_QUIET_MS. */
  private readonly onTick = (): void => {
    this.tickScheduled = false;
    if (this.capture.empty || this.failure) return;
    const age = performance.now() - this.batchStart;
    if (age >= SEAL_AFTER_MS) this.seal();
    else this.scheduleTick(SEAL_QUIET_MS - age);
  };

  /** Seals the current batch if it holds anything, so that the next record starts a fresh one. */
  private makeRoom(): void {
    if (!this.capture.empty) this.seal();
  }

  /** Capture arrays of the standard size, or of `batchBytes` in all. */
  private arrays(): { nums: Float64Array; chars: Uint16Array } {
    const bytes = this.batchBytes === undefined ? undefined : Math.max(this.batchBytes, 64);
    return bytes === undefined
      ? { nums: new Float64Array(BATCH_NUMS), chars: new Uint16Array(BATCH_CHARS) }
      : { nums: new Float64Array(Math.ceil(bytes / 16)), chars: new Uint16Array(Math.ceil(bytes / 4)) };
  }

  /**
   * Hands the current batch to the writer thread (which copies it) and starts the next one;
   * `ack`: the thread answers once it is written (a flush waits for it).
   */
  private seal(ack = false): void {
    const capture = this.capture;
    this.sealedCount++;
    // A record bigger than a batch grew the arrays: they go to the thread as they are, and the
    // capture goes back to the standard size.
    const grown = capture.nums.length > this.standardNums;
    const limit = this.formatVersion === LOG_FORMAT_VERSION ? INLINE_LINES_BYTES : INLINE_FRAME_BYTES;
    // With every batch posted before written (and its answer taken), writing here keeps the order.
    if (!grown && capture.n * 8 + capture.c * 2 <= limit && this.writer.idle()) {
      this.writeHere();
      capture.reset();
      return;
    }
    if (ack) this.askedCount = this.sealedCount;
    try {
      this.writer.post(this.id, this.sealedCount, capture.nums, capture.chars, capture.n, capture.c, capture.records, grown, ack);
    } catch (err) {
      this.failure ??= { error: err };
      this.writtenCount = this.sealedCount;
      this.settleWaiters();
    }
    if (grown) {
      const { nums, chars } = this.arrays();
      capture.replace(nums, chars);
    } else {
      capture.reset();
    }
  }

  /** Writes the current batch from this thread; every batch before it is written already. */
  private writeHere(): void {
    const capture = this.capture;
    try {
      writeBatchHere(this.handle.fd, (this.inline ??= inlineWriter(this.formatVersion)), this.formatVersion, capture.nums, capture.chars, capture.n, capture.c, capture.records);
    } catch (err) {
      this.failure ??= { error: err };
    }
    this.writtenCount = this.sealedCount;
    this.settleWaiters();
  }

  private settleWaiters(): void {
    if (this.waiters.length === 0) return;
    const pending: FlushWaiter[] = [];
    for (const waiter of this.waiters) {
      if (waiter.batches > this.writtenCount) pending.push(waiter);
      else if (this.failure) waiter.reject(this.failure.error);
      else waiter.resolve();
    }
    this.waiters = pending;
  }
}

/**
 * Checks the log at `path` before appending to it and cuts off a torn end (version 1: bytes
 * after the last newline; version 2: a frame cut short), a record a crash cut short, which
 * readers skip anyway, so new records start cleanly. Returns the log's version and the number
 * of bytes cut, or undefined when there is no log yet (a missing or empty file).
 */
async function prepareForAppend(path: string): Promise<{ v: number; truncatedTail: number } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, "r+");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  try {
    const { size } = await handle.stat();
    if (size === 0) return undefined;
    const first = await readFirstLine(handle);
    if (first === undefined) throw new LogCorruptError(`${path}: cannot append: the header line is incomplete`, 1);
    const decoded = decodeHeaderLine(first.line);
    if (!decoded.ok) throw new LogCorruptError(`${path}: cannot append: ${decoded.message}`, 1);
    const v = decoded.header.v;
    const end = v === LOG_FORMAT_FRAMES ? await framesEnd(handle, size, first.bytes) : (await lastNewlineOffset(handle, size, first.bytes - 1)) + 1;
    if (end < size) await handle.truncate(end);
    return { v, truncatedTail: size - end };
  } finally {
    await handle.close();
  }
}

/**
 * Where a version-2 log's last frame ends, walking the frame heads from `start`: the end of
 * the file, unless it ends in a torn frame (a head, or part of one, whose body the file
 * does not hold whole). Bytes that are not a frame head stop the walk without being cut:
 * readers report them and find the frames after them.
 */
async function framesEnd(handle: FileHandle, size: number, start: number): Promise<number> {
  const head = Buffer.alloc(FRAME_HEAD_BYTES);
  let at = start;
  while (at < size) {
    if (size - at < FRAME_HEAD_BYTES) {
      const { bytesRead } = await handle.read(head, 0, size - at, at);
      return isMagicPrefix(head.subarray(0, bytesRead)) ? at : size;
    }
    await handle.read(head, 0, FRAME_HEAD_BYTES, at);
    const frame = decodeFrameHead(head, 0);
    if (frame === undefined) return size;
    const next = at + FRAME_HEAD_BYTES + frame.bodyBytes;
    if (next > size) return at;
    at = next;
  }
  return at;
}

function isMagicPrefix(bytes: Buffer): boolean {
  const k = Math.min(bytes.length, FRAME_MAGIC_BYTES.length);
  return k > 0 && FRAME_MAGIC_BYTES.subarray(0, k).equals(bytes.subarray(0, k));
}

/** Offset of the last "\n" in the file, searching backwards; `floor` is known to hold one. */
async function lastNewlineOffset(handle: FileHandle, size: number, floor: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024);
  let end = size;
  while (end > floor + 1) {
    const start = Math.max(floor + 1, end - chunk.length);
    const { bytesRead } = await handle.read(chunk, 0, end - start, start);
    const newline = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (newline !== -1) return start + newline;
    end = start;
  }
  return floor;
}
