/**
 * Follows a binary (version 2) log file as its writer appends to it: each `read()` returns
 * the records of the frames written since the last one. A frame not yet written whole waits
 * in the scanner for the rest of its bytes.
 */
import { open, type FileHandle } from "node:fs/promises";
import { decodeHeaderLine } from "../../log/codec.js";
import { FrameScanner } from "../../log/frame-scanner.js";
import { readFirstLine } from "../../log/first-line.js";
import { sequenceStarts } from "../../log/slice-header.js";
import { LOG_FORMAT_FRAMES, type LogProblem, type LogRecord } from "../../log/types.js";

const CHUNK = 1 << 20;

export class LogFollower {
  readonly problems: LogProblem[] = [];
  private pending: LogRecord[] = [];
  private constructor(
    private readonly handle: FileHandle,
    private offset: number,
    private readonly scanner: FrameScanner,
    readonly created: number,
  ) {}

  /** Undefined when the file is not a binary log (a JSON-lines log is not followed). */
  static async open(path: string): Promise<LogFollower | undefined> {
    const handle = await open(path, "r");
    const first = await readFirstLine(handle);
    const decoded = first === undefined ? undefined : decodeHeaderLine(first.line);
    if (first === undefined || !decoded?.ok || decoded.header.v !== LOG_FORMAT_FRAMES) {
      await handle.close();
      return undefined;
    }
    const holder: { follower?: LogFollower } = {};
    const scanner = new FrameScanner(
      first.bytes,
      {
        problem: (problem) => holder.follower!.problems.push(problem),
        record: (record) => (holder.follower!.pending.push(record), true),
      },
      { startAt: sequenceStarts(decoded.header) },
    );
    holder.follower = new LogFollower(handle, first.bytes, scanner, decoded.header.created);
    return holder.follower;
  }

  /** The records appended since the last read. */
  async read(): Promise<LogRecord[]> {
    for (;;) {
      const chunk = Buffer.allocUnsafe(CHUNK);
      const { bytesRead } = await this.handle.read(chunk, 0, CHUNK, this.offset);
      if (bytesRead === 0) break;
      this.offset += bytesRead;
      this.scanner.push(chunk.subarray(0, bytesRead));
      if (bytesRead < CHUNK) break;
    }
    const records = this.pending;
    this.pending = [];
    return records;
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
