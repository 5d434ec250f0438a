/**
 * Reading natsched log files: streaming (`openLog`, for logs of any size) and all at
 * once (`readLogSync`, for small logs). Both validate every line and report what they
 * skip as LogProblems; see docs/log-format.md.
 */
import { createReadStream, readFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { LogCorruptError } from "../machines/errors.js";
import { decodeHeaderLine, type LogHeader } from "./codec.js";
import { firstLineOf, readFirstLine, type FirstLine } from "./first-line.js";
import { FrameScanner } from "./frame-scanner.js";
import { LineSplitter } from "./line-splitter.js";
import { LogScanner } from "./log-scanner.js";
import { compileFilter, type RecordFilter } from "./record-filter.js";
import { sequenceStarts } from "./slice-header.js";
import { LOG_FORMAT_FRAMES, type LogProblem, type LogRecord } from "./types.js";

export interface LogContents {
  header: LogHeader;
  records: LogRecord[];
  problems: LogProblem[];
}

export interface LogReader {
  readonly path: string;
  readonly header: LogHeader;
  /**
   * Problems found by the latest pass over the records (each `records()` or `readAll()`
   * starts a new pass), in line order; complete once the pass has finished.
   */
  readonly problems: readonly LogProblem[];
  /** Streams the records matching `filter`. Validation covers every line regardless. */
  records(filter?: RecordFilter): AsyncIterableIterator<LogRecord>;
  /**
   * The same records handed to `visit` as each chunk of the file is decoded, a step after
   * each chunk (a log file's reader has it): a pass that folds a large log and keeps nothing
   * pays no async step per record, and each record is garbage as soon as it is folded.
   */
  visit?(visit: (record: LogRecord) => void, filter?: RecordFilter, options?: VisitOptions): AsyncIterableIterator<void>;
  readAll(filter?: RecordFilter): Promise<{ records: LogRecord[]; problems: LogProblem[] }>;
}

/** For a pass that needs less than whole records (a binary log's reader builds less; a JSON-lines one ignores it). */
export interface VisitOptions {
  /** Inputs' events keep only these fields (FrameScanOptions.inputFields). */
  inputFields?: ReadonlySet<string>;
  /** Transitions' whys keep only these fields (FrameScanOptions.whyFields). */
  whyFields?: ReadonlySet<string>;
  /** `visit` keeps no transition record past its call: they come in one object, refilled (FrameScanOptions.transientTransitions). */
  transientTransitions?: boolean;
}

const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * Opens a log for reading and checks its header. Throws LogCorruptError when the file
 * is not a natsched log at all (no complete header line, or one that is not a header).
 * A header of another version is not thrown: it is reported as a "version" problem and
 * no records are read.
 */
export async function openLog(path: string): Promise<LogReader> {
  const handle = await open(path, "r");
  let first: FirstLine | undefined;
  try {
    first = await readFirstLine(handle);
  } finally {
    await handle.close();
  }
  const { header, versionProblem } = checkHeader(path, first);
  return new FileLogReader(path, header, first!.bytes, versionProblem);
}

/** Reads a whole (small) log into memory; same checks and problems as `openLog`. */
export function readLogSync(path: string, filter?: RecordFilter): LogContents {
  const data = readFileSync(path);
  const first = firstLineOf(data);
  const { header, versionProblem } = checkHeader(path, first);
  if (versionProblem) return { header, records: [], problems: [versionProblem] };
  const match = compileFilter(filter);
  const records: LogRecord[] = [];
  if (header.v === LOG_FORMAT_FRAMES) {
    const problems: LogProblem[] = [];
    const frames = new FrameScanner(
      first!.bytes,
      {
        problem: (problem) => problems.push(problem),
        record: (record) => {
          if (match(record)) records.push(record);
          return true;
        },
      },
      { startAt: sequenceStarts(header) },
    );
    frames.push(data.subarray(first!.bytes));
    frames.finish();
    return { header, records, problems };
  }
  const scanner = new LogScanner(2, sequenceStarts(header));
  const splitter = new LineSplitter();
  splitter.push(data.subarray(first!.bytes), (line) => {
    const record = scanner.line(line);
    if (record && match(record)) records.push(record);
  });
  scanner.end(splitter.finish());
  return { header, records, problems: scanner.problems };
}

class FileLogReader implements LogReader {
  private currentProblems: LogProblem[] = [];

  constructor(
    readonly path: string,
    readonly header: LogHeader,
    private readonly recordsOffset: number,
    private readonly versionProblem: LogProblem | undefined,
  ) {}

  get problems(): readonly LogProblem[] {
    return this.currentProblems;
  }

  async *records(filter?: RecordFilter): AsyncIterableIterator<LogRecord> {
    let ready: LogRecord[] = [];
    for await (const _ of this.visit((record) => ready.push(record), filter)) {
      const batch = ready;
      ready = [];
      yield* batch;
    }
    yield* ready;
  }

  async *visit(visit: (record: LogRecord) => void, filter?: RecordFilter, options?: VisitOptions): AsyncIterableIterator<void> {
    if (this.header.v === LOG_FORMAT_FRAMES && !this.versionProblem) {
      yield* this.visitFrames(visit, filter, options);
      return;
    }
    const scanner = new LogScanner(2, sequenceStarts(this.header));
    this.currentProblems = scanner.problems;
    if (this.versionProblem) {
      scanner.problems.push(this.versionProblem);
      return;
    }
    const match = compileFilter(filter);
    const splitter = new LineSplitter();
    const stream = createReadStream(this.path, { start: this.recordsOffset, highWaterMark: READ_CHUNK_BYTES });
    const collect = (line: Buffer): void => {
      const record = scanner.line(line);
      if (record && match(record)) visit(record);
    };
    try {
      for await (const chunk of stream) {
        splitter.push(chunk as Buffer, collect);
        yield;
      }
      scanner.end(splitter.finish());
    } finally {
      stream.destroy();
    }
  }

  private async *visitFrames(visit: (record: LogRecord) => void, filter?: RecordFilter, options: VisitOptions = {}): AsyncIterableIterator<void> {
    const problems: LogProblem[] = [];
    this.currentProblems = problems;
    const match = compileFilter(filter);
    const frames = new FrameScanner(
      this.recordsOffset,
      {
        problem: (problem) => problems.push(problem),
        record: (record) => {
          if (match(record)) visit(record);
          return true;
        },
      },
      { ...options, startAt: sequenceStarts(this.header) },
    );
    const stream = createReadStream(this.path, { start: this.recordsOffset, highWaterMark: READ_CHUNK_BYTES });
    try {
      for await (const chunk of stream) {
        frames.push(chunk as Buffer);
        yield;
      }
      frames.finish();
    } finally {
      stream.destroy();
    }
  }

  async readAll(filter?: RecordFilter): Promise<{ records: LogRecord[]; problems: LogProblem[] }> {
    const records: LogRecord[] = [];
    for await (const record of this.records(filter)) records.push(record);
    return { records, problems: [...this.currentProblems] };
  }
}

function checkHeader(path: string, first: FirstLine | undefined): { header: LogHeader; versionProblem?: LogProblem } {
  if (first === undefined) throw new LogCorruptError(`${path}: no complete header line (empty, torn, or not a natsched log)`, 1);
  const decoded = decodeHeaderLine(first.line);
  if (decoded.ok) return { header: decoded.header };
  if (decoded.kind === "malformed") throw new LogCorruptError(`${path}: ${decoded.message}`, 1);
  return { header: decoded.header, versionProblem: { kind: "version", line: 1, message: `line 1: ${decoded.message}; no records read` } };
}
