/**
 * One pass over a log file in blocks: the unit the log index (log/log-index.ts) points at.
 * A block of a version-2 log is a frame that decodes; of a version-1 log, a run of
 * BLOCK_LINES lines. Records are numbered as the reader returns them (from 0), and the
 * problems are the reader's (frame-scanner.ts, log-scanner.ts): the same records, the same
 * order, so a position in the index is a position in `openLog(...).records()`.
 */
import { createReadStream } from "node:fs";
import { FrameScanner } from "./frame-scanner.js";
import { LineSplitter } from "./line-splitter.js";
import { LogScanner } from "./log-scanner.js";
import { LOG_FORMAT_FRAMES, type LogProblem, type LogRecord } from "./types.js";

export const BLOCK_LINES = 256;

export interface BlockScanHandler {
  /** A new block starts at byte `offset`; its first record will be number `position`. */
  block(offset: number, position: number): void;
  record(record: LogRecord, position: number): void;
  problem(problem: LogProblem): void;
}

/** Scans the log at `path` whose records start at byte `recordsOffset` (after the header line). */
export async function scanBlocks(path: string, format: number, recordsOffset: number, handler: BlockScanHandler, startAt?: ReadonlyMap<string, number>, blockLines = BLOCK_LINES): Promise<void> {
  let position = 0;
  const stream = createReadStream(path, { start: recordsOffset, highWaterMark: 1024 * 1024 });
  if (format === LOG_FORMAT_FRAMES) {
    const frames = new FrameScanner(
      recordsOffset,
      {
        problem: (problem) => handler.problem(problem),
        record: (record) => {
          handler.record(record, position++);
          return true;
        },
      },
      { frameStart: (offset) => handler.block(offset, position), ...(startAt === undefined ? {} : { startAt }) },
    );
    for await (const chunk of stream) frames.push(chunk as Buffer);
    frames.finish();
    return;
  }
  const scanner = new LogScanner(2, startAt);
  let reported = 0;
  const flushProblems = (): void => {
    while (reported < scanner.problems.length) handler.problem(scanner.problems[reported++]!);
  };
  const splitter = new LineSplitter();
  let offset = recordsOffset;
  let lines = 0;
  for await (const chunk of stream) {
    splitter.push(chunk as Buffer, (line) => {
      if (lines++ % blockLines === 0) handler.block(offset, position);
      offset += line.length + 1;
      const record = scanner.line(line);
      flushProblems();
      if (record !== undefined) handler.record(record, position++);
    });
  }
  scanner.end(splitter.finish());
  flushProblems();
}
