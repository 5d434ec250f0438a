/**
 * Follows a binary (version 2) log file as its writer appends to it: each `read(take)` hands
 * `take` the records of the frames written since the last one, frame by frame as they
 * decode, so that each record is garbage before the next frame is decoded (held in a batch,
 * a read's records would outlive the young generation and be copied into the old one). A
 * frame not yet written whole waits in the scanner for the rest of its bytes. Its `window`
 * reads the latest records again from the file when a view asks (log-window.ts).
 */
import { open, type FileHandle } from "node:fs/promises";
import { decodeHeaderLine } from "../../log/codec.js";
import { FrameScanner } from "../../log/frame-scanner.js";
import { readFirstLine } from "../../log/first-line.js";
import { sequenceStarts } from "../../log/slice-header.js";
import { LOG_FORMAT_FRAMES, type LogProblem, type LogRecord } from "../../log/types.js";
import { LogWindow, type LogEnd } from "./log-window.js";

/** Reads this much at a time: a frame (a few hundred KB under load) cut by a chunk's end is copied whole, so a chunk holds many. */
const CHUNK = 8 << 20;

/**
 * The fields of an input's event that the live model's folds read (first-fold.ts with
 * log/cluster-rules.ts and dash-counts.ts; tools/task-stream.ts): the follower builds no
 * other (the records are not kept: the views that read them whole read the file again).
 * tests/dashboard-live-window.test.ts folds logs with steals, failures, a killed worker and
 * transfers both ways. A fold that reads another field adds it here.
 */
export const LIVE_INPUT_FIELDS: ReadonlySet<string> = new Set(["op", "key", "worker", "name", "nthreads", "nbytes", "keys", "duration", "reason", "from", "received", "missing", "start", "stop"]);

export class LogFollower {
  readonly problems: LogProblem[] = [];
  private take: (record: LogRecord) => void = () => {};
  private taken = 0;
  /** Reused: the scanner copies what it keeps of a chunk. */
  private readonly chunk = Buffer.allocUnsafe(CHUNK);
  readonly window: LogWindow;
  private constructor(
    private readonly handle: FileHandle,
    private offset: number,
    private readonly scanner: FrameScanner,
    readonly created: number,
    keep: number,
  ) {
    this.window = new LogWindow(handle, offset, keep);
  }

  /**
   * Undefined when the file is not a binary log (a JSON-lines log is not followed). `keep`:
   * the latest records its window reads again (at least).
   */
  static async open(path: string, keep: number): Promise<LogFollower | undefined> {
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
        record: (record) => (holder.follower!.taken++, holder.follower!.take(record), true),
      },
      { startAt: sequenceStarts(decoded.header), frameStart: (offset) => holder.follower!.window.noteFrame(offset, holder.follower!.taken), inputFields: LIVE_INPUT_FIELDS },
    );
    holder.follower = new LogFollower(handle, first.bytes, scanner, decoded.header.created, keep);
    return holder.follower;
  }

  /** Hands `take` the records appended since the last read, in log order; answers how many. */
  async read(take: (record: LogRecord) => void): Promise<number> {
    const before = this.taken;
    const chunk = this.chunk;
    for (;;) {
      const { bytesRead } = await this.handle.read(chunk, 0, CHUNK, this.offset);
      if (bytesRead === 0) break;
      this.offset += bytesRead;
      this.take = take;
      try {
        this.scanner.push(chunk.subarray(0, bytesRead));
      } finally {
        this.take = () => {};
      }
      if (bytesRead < CHUNK) break;
    }
    return this.taken - before;
  }

  /** Where the frames read whole so far end, and the records they held (those handed on). */
  end(): LogEnd {
    return { offset: this.offset - this.scanner.held, records: this.taken };
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
