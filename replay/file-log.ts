/**
 * A LogSink writing a natsched log file. `append` turns the record into JSON and writes
 * its line (checksum included) into the current batch buffer; a full batch (~256 KiB)
 * is sealed and handed to the single writer, which writes batches in order, one write
 * at a time. While a write is in flight new records gather into the next batch (group
 * commit); a setImmediate seals a part-full batch so records do not wait for the
 * threshold. Batch buffers are reused once written: fresh memory costs page faults.
 */
import { open, type FileHandle } from "node:fs/promises";
import { ClosedError, LogCorruptError } from "../machines/errors.js";
import { decodeHeaderLine, encodeHeaderLine, makeHeader, maxRecordLineBytes, writeRecordLine } from "./codec.js";
import { readFirstLine } from "./first-line.js";
import { recordJson } from "./record-json.js";
import type { LogRecord, LogSink } from "./types.js";

export interface FileLogSinkOptions {
  /** Stored in the header of a new log. Ignored when appending to an existing one. */
  meta?: Record<string, unknown>;
  /**
   * Append to the log at `path` if it exists (after checking its header) instead of
   * truncating it. A missing or empty file is created as a new log. A torn last record
   * (see `truncatedTail`) is cut off first.
   */
  append?: boolean;
  /** Size of a batch buffer; a batch is sealed when the next record does not fit. Default 256 KiB. */
  batchBytes?: number;
}

const DEFAULT_BATCH_BYTES = 256 * 1024;
/**
 * Batches sealed while a write was in flight go out together in one writev of up to
 * this size. Measured: writes much larger than this were slower, not faster.
 */
const MAX_WRITE_BYTES = 1024 * 1024;
/** Written batch buffers kept for reuse. */
const MAX_POOLED_BUFFERS = 8;

interface Batch {
  /** The part of `buffer` holding record lines. */
  bytes: Buffer;
  buffer: Buffer;
}

interface FlushWaiter {
  /** Resolve once this many batches have been written. */
  batches: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class FileLogSink implements LogSink {
  static async open(path: string, options: FileLogSinkOptions = {}): Promise<FileLogSink> {
    const truncatedTail = options.append ? await prepareForAppend(path) : undefined;
    const handle = await open(path, truncatedTail === undefined ? "w" : "a");
    if (truncatedTail === undefined) {
      try {
        await writeFully(handle, [Buffer.from(encodeHeaderLine(makeHeader(options.meta)), "utf8")]);
      } catch (err) {
        await handle.close().catch(() => undefined);
        throw err;
      }
    }
    return new FileLogSink(path, handle, options.batchBytes ?? DEFAULT_BATCH_BYTES, truncatedTail ?? 0);
  }

  private buffer: Buffer;
  /** Bytes of `buffer` filled with record lines. */
  private used = 0;
  private readonly pool: Buffer[] = [];
  /** Sealed batches waiting for the writer, in order. */
  private sealed: Batch[] = [];
  private sealedCount = 0;
  private writtenCount = 0;
  private writing = false;
  private tickScheduled = false;
  private failure: { error: unknown } | undefined;
  private waiters: FlushWaiter[] = [];
  private closing: Promise<void> | undefined;

  private constructor(
    readonly location: string,
    private readonly handle: FileHandle,
    private readonly batchBytes: number,
    /** Bytes of a torn last record cut off the existing log when it was opened to append. */
    readonly truncatedTail: number,
  ) {
    this.buffer = Buffer.allocUnsafe(batchBytes);
  }

  append(record: LogRecord): void {
    if (this.closing) throw new ClosedError(`log ${this.location}`);
    // After a write failed nothing more is written (flush and close report the error).
    if (this.failure) return;
    // Serialise now: the caller may reuse or mutate the record once append returns.
    const json = recordJson(record);
    const room = maxRecordLineBytes(json);
    if (this.used + room > this.buffer.length) {
      if (this.used > 0) {
        this.seal(room);
        if (!this.writing) void this.pump();
      } else {
        // A record bigger than a whole batch gets a buffer of its own.
        if (this.buffer.length === this.batchBytes && this.pool.length < MAX_POOLED_BUFFERS) this.pool.push(this.buffer);
        this.buffer = Buffer.allocUnsafe(room);
      }
    }
    this.used = writeRecordLine(this.buffer, this.used, json);
    if (!this.tickScheduled && !this.writing) {
      this.tickScheduled = true;
      setImmediate(this.onTick);
    }
  }

  flush(): Promise<void> {
    if (this.used > 0) this.seal();
    if (this.writtenCount === this.sealedCount) {
      return this.failure ? Promise.reject(this.failure.error) : Promise.resolve();
    }
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ batches: this.sealedCount, resolve, reject }));
    if (!this.writing) void this.pump();
    return done;
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
    try {
      await this.handle.close();
    } catch (err) {
      error ??= { error: err };
    }
    if (error) throw error.error;
  }

  private readonly onTick = (): void => {
    this.tickScheduled = false;
    if (!this.writing && this.used > 0) {
      this.seal();
      void this.pump();
    }
  };

  /** Hands the current batch to the writer and starts a new one with room for `room` bytes. */
  private seal(room = 0): void {
    this.sealed.push({ bytes: this.buffer.subarray(0, this.used), buffer: this.buffer });
    this.sealedCount++;
    this.buffer = room > this.batchBytes ? Buffer.allocUnsafe(room) : (this.pool.pop() ?? Buffer.allocUnsafe(this.batchBytes));
    this.used = 0;
  }

  /** The single writer: runs until nothing is left to write. Never rejects. */
  private async pump(): Promise<void> {
    this.writing = true;
    try {
      for (;;) {
        if (this.sealed.length === 0) {
          if (this.used === 0) break;
          this.seal();
        }
        const batches = this.takeSealed();
        if (!this.failure) {
          try {
            await writeFully(this.handle, batches.map((batch) => batch.bytes));
          } catch (err) {
            // Stop writing for good: the file stays a clean prefix of the log.
            this.failure = { error: err };
          }
        }
        for (const { buffer } of batches) {
          if (buffer.length === this.batchBytes && this.pool.length < MAX_POOLED_BUFFERS) this.pool.push(buffer);
        }
        this.writtenCount += batches.length;
        this.settleWaiters();
      }
    } finally {
      this.writing = false;
    }
  }

  /** The batches for one write: at least one, and no more than MAX_WRITE_BYTES unless one is larger. */
  private takeSealed(): Batch[] {
    let count = 0;
    let bytes = 0;
    while (count < this.sealed.length && (count === 0 || bytes + this.sealed[count]!.bytes.length <= MAX_WRITE_BYTES)) {
      bytes += this.sealed[count]!.bytes.length;
      count++;
    }
    return this.sealed.splice(0, count);
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
 * Checks the log at `path` before appending to it and cuts off a torn last line (bytes
 * after the last newline: a record a crash cut short, which readers skip anyway), so new
 * records start on a line of their own. Returns the number of bytes cut, or undefined
 * when there is no log yet (a missing or empty file).
 */
async function prepareForAppend(path: string): Promise<number | undefined> {
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
    const end = (await lastNewlineOffset(handle, size, first.bytes - 1)) + 1;
    if (end < size) await handle.truncate(end);
    return size - end;
  } finally {
    await handle.close();
  }
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

async function writeFully(handle: FileHandle, buffers: Buffer[]): Promise<void> {
  let pending = buffers.filter((buffer) => buffer.length > 0);
  while (pending.length > 0) {
    let { bytesWritten } = await handle.writev(pending);
    // A short write: drop what was written and go on with the rest.
    while (pending.length > 0 && bytesWritten >= pending[0]!.length) bytesWritten -= pending.shift()!.length;
    if (pending.length > 0 && bytesWritten > 0) pending[0] = pending[0]!.subarray(bytesWritten);
  }
}
