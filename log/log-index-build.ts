/**
 * Builds a log's index (log/log-index.ts reads it) in two passes over the log:
 *   1. blocks (where each starts, its first record's position, its record count and
 *      earliest `t`), the keys each block names, the reader's problems, each actor's last
 *      record and each scheduler task's last transition;
 *   2. snapshots of the cluster fold (log/cluster-fold.ts: what `inspect` shows) every
 *      SNAPSHOT_RECORDS records, at a block start, its forgotten tasks that never move again
 *      let go (pass 1 says which), so a snapshot's size follows the work in play.
 * Written to a temporary file and renamed, so a reader sees a whole index or none.
 */
import { open, rename, unlink, writeFile } from "node:fs/promises";
import { deflateRawSync } from "node:zlib";
import { LogIndexError } from "../machines/errors.js";
import { scanBlocks } from "./block-scan.js";
import { readFirstLine } from "./first-line.js";
import { sequenceStarts } from "./slice-header.js";
import { openLog } from "./reader.js";
import { ClusterFold } from "./cluster-fold.js";
import { encodeIndexHeader, fingerprintLog, INDEX_FORMAT, INDEX_VERSION, sameLog, sectionRef, type IndexHeader, type SnapshotRef } from "./log-index-file.js";
import { forEachNamedKey, keyHash } from "./record-keys.js";
import type { LogProblem } from "./types.js";

export const SNAPSHOT_RECORDS = 1 << 17;
/** Block numbers take the low 22 bits of a key entry (hash * 2^22 + block, exact in a double). */
const MAX_BLOCKS = 1 << 22;
export const BLOCK_COLUMNS = 4;

export interface IndexBuildStats {
  records: number;
  blocks: number;
  keyEntries: number;
  snapshots: number;
  bytes: number;
  seconds: number;
}

/** The index file of the log at `path`: next to it, `.idx` added. */
export function indexPathOf(path: string): string {
  return `${path}.idx`;
}

export async function buildLogIndex(path: string, out = indexPathOf(path), options: { snapshotRecords?: number; /** Lines a block of a version-1 log holds (block-scan.ts). */ blockLines?: number } = {}): Promise<IndexBuildStats> {
  const started = performance.now();
  const every = options.snapshotRecords ?? SNAPSHOT_RECORDS;
  const before = await fingerprintLog(path);
  const reader = await openLog(path);
  if (reader.header.v !== 1 && reader.header.v !== 2) throw new LogIndexError("unindexable", `${path}: log format version ${reader.header.v} is not one this build reads`);
  const recordsOffset = await recordsStart(path);

  // Pass 1.
  const blocks = new Growing();
  const keys = new Growing();
  const lastTransition = new Map<number, number>();
  const actorsLast: Record<string, number> = {};
  const problems: LogProblem[] = [];
  let blockKeys = new Set<number>();
  let block = -1;
  let records = 0;
  let firstT: number | null = null;
  const endBlock = (): void => {
    for (const hash of blockKeys) keys.push(hash * MAX_BLOCKS + block);
    blockKeys = new Set();
  };
  await scanBlocks(path, reader.header.v, recordsOffset, {
    block(offset, position) {
      if (block >= 0) endBlock();
      if (++block >= MAX_BLOCKS) throw new LogIndexError("unindexable", `${path}: more than ${MAX_BLOCKS} blocks`);
      blocks.push(offset);
      blocks.push(position);
      blocks.push(0);
      blocks.push(Infinity);
    },
    record(record, position) {
      records = position + 1;
      firstT ??= record.t;
      const at = block * BLOCK_COLUMNS;
      blocks.set(at + 2, blocks.get(at + 2) + 1);
      if (record.t < blocks.get(at + 3)) blocks.set(at + 3, record.t);
      forEachNamedKey(record, (key) => blockKeys.add(keyHash(key)));
      actorsLast[record.actor] = position;
      if (record.kind === "transition" && record.machine === "task") lastTransition.set(keyHash(record.id), position);
    },
    problem(problem) {
      problems.push(problem);
    },
  }, sequenceStarts(reader.header), options.blockLines);
  if (block >= 0) endBlock();
  if (problems.some((p) => p.kind === "duplicate")) throw new LogIndexError("unindexable", `${path}: the log has duplicate records (the reader drops them), so its positions cannot be indexed exactly`);
  const blockTable = blocks.done();
  const keyTable = keys.done().sort();

  // Pass 2.
  const snapshots: { ref: Omit<SnapshotRef, "offset" | "bytes" | "crc">; bytes: Buffer }[] = [];
  const fold = new ClusterFold();
  const lastSeq: Record<string, number> = {};
  let maxT: number | null = null;
  let nextSnapshot = every;
  let current = -1;
  await scanBlocks(path, reader.header.v, recordsOffset, {
    block(_offset, position) {
      current++;
      if (position < nextSnapshot) return;
      nextSnapshot = position + every;
      snapshots.push({ ref: { position, block: current, lastSeq: { ...lastSeq }, maxT }, bytes: deflateRawSync(JSON.stringify(fold.data())) });
    },
    record(record, position) {
      lastSeq[record.actor] = record.seq;
      if (maxT === null || record.t > maxT) maxT = record.t;
      fold.add(record);
      // A hash two keys share keeps the later of their last transitions: a task is kept longer, never let go early.
      if (record.kind === "transition" && record.machine === "task" && lastTransition.get(keyHash(record.id)) === position) fold.retire(record.id);
    },
    problem() {},
  }, sequenceStarts(reader.header), options.blockLines);

  const blockBytes = Buffer.from(blockTable.buffer, blockTable.byteOffset, blockTable.byteLength);
  const keyBytes = Buffer.from(keyTable.buffer, keyTable.byteOffset, keyTable.byteLength);
  let offset = 0;
  const blocksRef = sectionRef(offset, blockBytes);
  offset += blockBytes.length;
  const keysRef = sectionRef(offset, keyBytes);
  offset += keyBytes.length;
  const snapshotRefs: SnapshotRef[] = [];
  for (const s of snapshots) {
    snapshotRefs.push({ ...s.ref, ...sectionRef(offset, s.bytes) });
    offset += s.bytes.length;
  }
  const after = await fingerprintLog(path);
  if (!sameLog(before, after)) throw new LogIndexError("stale", `${path} changed while it was being indexed (still being written?)`);
  const header: IndexHeader = {
    format: INDEX_FORMAT,
    v: INDEX_VERSION,
    log: { ...before, format: reader.header.v, recordsOffset },
    records,
    blocks: block + 1,
    firstT,
    problems,
    snapshots: snapshotRefs,
    actorsLast,
    sections: { blocks: blocksRef, keys: keysRef },
  };
  const headerLine = encodeIndexHeader(header);
  const temporary = `${out}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, Buffer.concat([headerLine, blockBytes, keyBytes, ...snapshots.map((s) => s.bytes)]));
    await rename(temporary, out);
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw error;
  }
  return {
    records,
    blocks: block + 1,
    keyEntries: keyTable.length,
    snapshots: snapshots.length,
    bytes: headerLine.length + offset,
    seconds: (performance.now() - started) / 1000,
  };
}

async function recordsStart(path: string): Promise<number> {
  const handle = await open(path, "r");
  try {
    return (await readFirstLine(handle))!.bytes;
  } finally {
    await handle.close();
  }
}

/** A Float64Array that grows. */
class Growing {
  private data = new Float64Array(1024);
  private length = 0;

  push(value: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = value;
  }

  get(i: number): number {
    return this.data[i]!;
  }

  set(i: number, value: number): void {
    this.data[i] = value;
  }

  done(): Float64Array {
    return this.data.slice(0, this.length);
  }
}
