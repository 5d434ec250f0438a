/** In-memory and discarding LogSinks, for the simulator, tests and runs without a log. */
import { ClosedError } from "../machines/errors.js";
import type { LogRecord, LogSink } from "./types.js";

export interface MemoryLogSinkOptions {
  /** Shown in messages; default "memory". */
  location?: string;
  /**
   * Keep a JSON copy of each record (default true), so later mutation of the appended
   * object cannot change the log and the array holds exactly what a file log would read
   * back. Pass false to keep the appended objects themselves, when they are never mutated.
   */
  copy?: boolean;
}

export class MemoryLogSink implements LogSink {
  /** Everything appended, in order. */
  readonly records: LogRecord[] = [];
  readonly location: string;
  private readonly copy: boolean;
  private closed = false;

  constructor(options: MemoryLogSinkOptions = {}) {
    this.location = options.location ?? "memory";
    this.copy = options.copy ?? true;
  }

  append(record: LogRecord): void {
    if (this.closed) throw new ClosedError(`log ${this.location}`);
    this.records.push(this.copy ? (JSON.parse(JSON.stringify(record)) as LogRecord) : record);
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

/** Accepts and discards every record. */
export class NullLogSink implements LogSink {
  readonly location = "null";

  append(_record: LogRecord): void {}

  flush(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
