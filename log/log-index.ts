/**
 * A log's index (built by log/log-index-build.ts), opened and checked against its log: it
 * answers "which records name this key", "where is record n", "which record was at time t",
 * and "what did the cluster look like at snapshot s" (log/cluster-fold.ts) by reading a few
 * blocks of the log instead of all of it. Every block read is checked against the index (its record
 * count), and the index against the log (size and CRC-32 of its ends): a mismatch is a
 * LogIndexError, never a wrong answer.
 */
import { open, type FileHandle } from "node:fs/promises";
import { inflateRawSync } from "node:zlib";
import { LogIndexError } from "../machines/errors.js";
import { decodeRecordLine } from "./codec.js";
import { FrameScanner } from "./frame-scanner.js";
import { ClusterFold, type ClusterFoldData } from "./cluster-fold.js";
import { BLOCK_COLUMNS, indexPathOf } from "./log-index-build.js";
import { fingerprintLog, readIndexHeader, readSection, sameLog, type IndexHeader, type SnapshotRef } from "./log-index-file.js";
import { concernsKey } from "./record-filter.js";
import { keyHash } from "./record-keys.js";
import { LOG_FORMAT_FRAMES, type LogProblem, type LogRecord } from "./types.js";

const MAX_BLOCKS = 1 << 22;
/**
 * Blocks kept decoded, the latest read: `story` reads a key's blocks, then the blocks around
 * them for the causes (tools/index-inputs.ts), mostly the same ones.
 */
const RECENT_BLOCKS = 8;

export class LogIndex {
  private handle: FileHandle | undefined;
  private keys: Float64Array | undefined;
  private readonly recent = new Map<number, LogRecord[]>();

  private constructor(
    readonly logPath: string,
    readonly indexPath: string,
    private readonly header: IndexHeader,
    private readonly dataOffset: number,
    /** Per block: byte offset, first record's position, record count, earliest t. */
    private readonly blocks: Float64Array,
  ) {}

  /** Opens the index of the log at `logPath`; LogIndexError if it is stale or corrupt. */
  static async open(logPath: string, indexPath = indexPathOf(logPath)): Promise<LogIndex> {
    const { header, dataOffset } = await readIndexHeader(indexPath);
    const log = await fingerprintLog(logPath);
    if (!sameLog(log, header.log)) {
      throw new LogIndexError("stale", `${indexPath} was built for another state of ${logPath} (${header.log.bytes} bytes then, ${log.bytes} now, or other contents): rebuild it (natsched log index)`);
    }
    const bytes = await readSection(indexPath, dataOffset, header.sections.blocks, "block table");
    const blocks = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.length / 8);
    if (blocks.length !== header.blocks * BLOCK_COLUMNS) throw new LogIndexError("corrupt", `${indexPath}: block table of ${blocks.length / BLOCK_COLUMNS} blocks, header says ${header.blocks}`);
    return new LogIndex(logPath, indexPath, header, dataOffset, blocks);
  }

  /** Records in the log (as the reader returns them). */
  get records(): number {
    return this.header.records;
  }

  /** The problems a full read of the log reports, in its order. */
  get problems(): readonly LogProblem[] {
    return this.header.problems;
  }

  get firstT(): number | null {
    return this.header.firstT;
  }

  /** Where the snapshots stand (records before each), in order. */
  get snapshotPositions(): number[] {
    return this.header.snapshots.map((s) => s.position);
  }

  /** The snapshots: where each stands, each actor's last seq and the latest `t` before it. */
  get snapshots(): readonly SnapshotRef[] {
    return this.header.snapshots;
  }

  /** Each actor's last record's position. */
  get actorsLast(): Readonly<Record<string, number>> {
    return this.header.actorsLast;
  }

  /** The first position from which every record has `t > time` (the records' count if none does). */
  settledAfter(time: number): number {
    let b = this.header.blocks;
    while (b > 0 && this.blocks[(b - 1) * BLOCK_COLUMNS + 3]! > time) b--;
    return b < this.header.blocks ? this.firstPositionOf(b) : this.header.records;
  }

  get blockCount(): number {
    return this.header.blocks;
  }

  async close(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
  }

  /** The records of block `b`, checked against the count the index has for it (read once while among the latest read). */
  async blockRecords(b: number): Promise<readonly LogRecord[]> {
    const kept = this.recent.get(b);
    if (kept !== undefined) return kept;
    const records = await this.readBlock(b);
    if (this.recent.size >= RECENT_BLOCKS) this.recent.delete(this.recent.keys().next().value!);
    this.recent.set(b, records);
    return records;
  }

  private async readBlock(b: number): Promise<LogRecord[]> {
    const start = this.blocks[b * BLOCK_COLUMNS]!;
    const end = b + 1 < this.header.blocks ? this.blocks[(b + 1) * BLOCK_COLUMNS]! : this.header.log.bytes;
    this.handle ??= await open(this.logPath, "r");
    const bytes = Buffer.allocUnsafe(end - start);
    const { bytesRead } = await this.handle.read(bytes, 0, bytes.length, start);
    const records: LogRecord[] = [];
    if (this.header.log.format === LOG_FORMAT_FRAMES) {
      const frames = new FrameScanner(start, { problem() {}, record: (r) => (records.push(r), true) });
      frames.push(bytes.subarray(0, bytesRead));
      frames.finish();
    } else {
      let from = 0;
      for (let newline = bytes.indexOf(0x0a, 0); newline !== -1 && newline < bytesRead; newline = bytes.indexOf(0x0a, from)) {
        const decoded = decodeRecordLine(bytes.subarray(from, newline));
        if (decoded.ok) records.push(decoded.record);
        from = newline + 1;
      }
    }
    const expected = this.blocks[b * BLOCK_COLUMNS + 2]!;
    if (records.length !== expected) {
      throw new LogIndexError("stale", `${this.indexPath}: block ${b} (byte ${start} of ${this.logPath}) holds ${records.length} records, the index says ${expected}: rebuild it (natsched log index)`);
    }
    return records;
  }

  /** The block holding record `position` (the last block starting at or before it). */
  blockOf(position: number): number {
    let lo = 0;
    let hi = this.header.blocks - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.blocks[mid * BLOCK_COLUMNS + 1]! <= position) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  firstPositionOf(block: number): number {
    return this.blocks[block * BLOCK_COLUMNS + 1]!;
  }

  async recordAt(position: number): Promise<LogRecord | undefined> {
    if (position < 0 || position >= this.header.records) return undefined;
    const b = this.blockOf(position);
    return (await this.blockRecords(b))[position - this.firstPositionOf(b)];
  }

  /** Records `from` (a position) up to `to` (excluded), block by block, in log order. */
  async *range(from: number, to: number): AsyncGenerator<LogRecord> {
    if (from >= to) return;
    for (let b = this.blockOf(from); b < this.header.blocks; b++) {
      const first = this.firstPositionOf(b);
      if (first >= to) return;
      const records = await this.blockRecords(b);
      for (let i = Math.max(0, from - first); i < records.length && first + i < to; i++) yield records[i]!;
    }
  }

  /** The records that name `key` (as `concernsKey`), among the first `before`, in log order, each with its position. */
  async keyRecords(key: string, before = this.header.records): Promise<{ record: LogRecord; position: number }[]> {
    const keys = await this.keyTable();
    const hash = keyHash(key);
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (keys[mid]! < hash * MAX_BLOCKS) lo = mid + 1;
      else hi = mid;
    }
    const out: { record: LogRecord; position: number }[] = [];
    for (let i = lo; i < keys.length && keys[i]! < (hash + 1) * MAX_BLOCKS; i++) {
      const b = keys[i]! - hash * MAX_BLOCKS;
      const first = this.firstPositionOf(b);
      if (first >= before) break;
      const records = await this.blockRecords(b);
      for (let k = 0; k < records.length && first + k < before; k++) if (concernsKey(records[k]!, key)) out.push({ record: records[k]!, position: first + k });
    }
    return out;
  }

  /** The cluster fold of the records before snapshot `i` (checked: its CRC-32, and that it folded as many records as it stands after). */
  async foldAt(i: number): Promise<ClusterFold> {
    const ref = this.header.snapshots[i]!;
    const what = `snapshot at record ${ref.position}`;
    const bytes = await readSection(this.indexPath, this.dataOffset, ref, what);
    let data: ClusterFoldData;
    try {
      data = JSON.parse(inflateRawSync(bytes).toString("utf8")) as ClusterFoldData;
    } catch (error) {
      throw new LogIndexError("corrupt", `${this.indexPath}: ${what}: ${(error as Error).message}: rebuild it (natsched log index)`);
    }
    if (data?.records !== ref.position) throw new LogIndexError("corrupt", `${this.indexPath}: ${what} holds the fold of ${data?.records} records: rebuild it (natsched log index)`);
    return ClusterFold.from(data);
  }

  /** The position just after the last record with `t <= time` (0 if none), as Timeline.positionAtTime. */
  async positionAtTime(time: number): Promise<number> {
    let b = -1;
    for (let i = 0; i < this.header.blocks; i++) if (this.blocks[i * BLOCK_COLUMNS + 3]! <= time) b = i;
    if (b < 0) return 0;
    const records = await this.blockRecords(b);
    let position = 0;
    for (let k = 0; k < records.length; k++) if (records[k]!.t <= time) position = this.firstPositionOf(b) + k + 1;
    return position;
  }

  /** The position just after `actor`'s record `seq` (-1 if the log has none), as Timeline.positionOf. */
  async positionOf(actor: string, seq: number): Promise<number> {
    // Between the last snapshot that has not seen it and the next one.
    const snapshots = this.header.snapshots;
    let from = 0;
    let to = this.header.records;
    for (const s of snapshots) {
      const last = s.lastSeq[actor];
      if (last !== undefined && last >= seq) {
        to = s.position;
        break;
      }
      from = s.position;
    }
    let position = from;
    for await (const record of this.range(from, to)) {
      position++;
      if (record.actor === actor && record.seq === seq) return position;
    }
    return -1;
  }

  /** Reads every section of the index and checks its CRC-32 (opening checks the header and the block table only). */
  async verify(): Promise<void> {
    await this.keyTable();
    for (const ref of this.header.snapshots) await readSection(this.indexPath, this.dataOffset, ref, `snapshot at record ${ref.position}`);
  }

  private async keyTable(): Promise<Float64Array> {
    if (this.keys === undefined) {
      const bytes = await readSection(this.indexPath, this.dataOffset, this.header.sections.keys, "key table");
      this.keys = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.length / 8);
    }
    return this.keys;
  }
}
