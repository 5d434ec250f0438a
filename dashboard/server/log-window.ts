/**
 * The records of a followed log file (log-follow.ts) for the views that read records whole
 * (stories, the scrubber's cuts, machines at a cut, what-if, and the machines' counts
 * carried on), read again from the file when a view asks instead of kept in memory: a live
 * dashboard keeping its latest records had the garbage collector copy every record it
 * folded into the old generation, a quarter of the thread's cost (docs/dashboard.md).
 * It knows where each frame starts and the number of its first record in log order, for
 * the frames that hold the latest `keep` records or more.
 */
import type { FileHandle } from "node:fs/promises";
import { FrameScanner } from "../../log/frame-scanner.js";
import type { LogRecord } from "../../log/types.js";
import { MachineTally } from "./machine-tally.js";

const CHUNK = 8 << 20;
/** The machines count transitions: of an input, only what a record must have is built. */
const TALLY_INPUT_FIELDS: ReadonlySet<string> = new Set(["op"]);

/** Where the frames followed so far end, and how many records they hold. */
export interface LogEnd {
  offset: number;
  records: number;
}

/** Records in log order and how many went before them. */
export interface KeptRecords {
  records: readonly LogRecord[];
  dropped: number;
}

export class LogWindow {
  /** Byte offsets of the frames kept, and the number (in log order) of each one's first record. */
  private offsets: number[] = [];
  private firsts: number[] = [];
  /** The oldest frame still kept, in those arrays. */
  private head = 0;
  /** The machines' counts: from which record, how far, carried on as asked. */
  private tally: { from: number; at: LogEnd; tally: MachineTally } | undefined;
  private tallying: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly handle: FileHandle,
    /** Where the first frame starts (after the header). */
    private readonly start: number,
    /** Records kept at least: the frames before the one that leaves this many go. */
    private readonly keep: number,
  ) {}

  /** A frame starts at byte `offset` with record number `first` (log order). */
  noteFrame(offset: number, first: number): void {
    this.offsets.push(offset);
    this.firsts.push(first);
    while (this.head + 1 < this.firsts.length && this.firsts[this.head + 1]! <= first - this.keep) this.head++;
    if (this.head > 1024 && this.head * 2 > this.firsts.length) {
      this.offsets = this.offsets.slice(this.head);
      this.firsts = this.firsts.slice(this.head);
      this.head = 0;
    }
  }

  /** The records of the frames kept, up to `end` (the frames followed when the view asked). */
  async kept(end: LogEnd): Promise<KeptRecords> {
    if (this.head >= this.firsts.length) return { records: [], dropped: end.records };
    const first = this.firsts[this.head]!;
    return { records: await this.read(this.offsets[this.head]!, end.offset, end.records - first), dropped: first };
  }

  /**
   * The machines of the records up to `end`, from the window's start at the first ask (so
   * that a page opened late on a long run reads no more than the window): those since the
   * last ask are read and counted. `dropped`: the records before the count's start.
   */
  machines(end: LogEnd): Promise<{ tally: MachineTally; records: number; dropped: number }> {
    const counted = this.tallying.then(async () => {
      const kept = (this.tally ??= this.head < this.firsts.length ? { from: this.firsts[this.head]!, at: { offset: this.offsets[this.head]!, records: this.firsts[this.head]! }, tally: new MachineTally() } : { from: 0, at: { offset: this.start, records: 0 }, tally: new MachineTally() });
      if (end.offset > kept.at.offset) {
        for (const record of await this.read(kept.at.offset, end.offset, end.records - kept.at.records, TALLY_INPUT_FIELDS)) if (record.kind === "transition") kept.tally.add(record);
        kept.at = end;
      }
      return { tally: kept.tally, records: kept.at.records - kept.from, dropped: kept.from };
    });
    this.tallying = counted.catch(() => {});
    return counted;
  }

  /** The records of the whole frames in bytes [from, to): at most `most` (those the follower handed on). */
  private async read(from: number, to: number, most: number, inputFields?: ReadonlySet<string>): Promise<LogRecord[]> {
    const records: LogRecord[] = [];
    // A frame's names and shapes are its own: the scan may start at any frame. Problems were the follower's to report.
    const scanner = new FrameScanner(from, { problem: () => {}, record: (record) => (records.push(record), records.length < most) }, inputFields !== undefined ? { inputFields } : {});
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(to - from, 1)));
    for (let at = from; at < to && records.length < most; ) {
      const { bytesRead } = await this.handle.read(chunk, 0, Math.min(chunk.length, to - at), at);
      if (bytesRead === 0) break;
      at += bytesRead;
      if (!scanner.push(chunk.subarray(0, bytesRead))) break;
    }
    return records;
  }
}
