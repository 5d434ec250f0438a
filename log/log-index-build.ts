/**
 * Builds a log's index (log/log-index.ts reads it) in two passes over the log:
 *   1. blocks (where each starts, its first record's position, its record count and
 *      earliest `t`), the keys each block names, the reader's problems, each actor's last
 *      record and each scheduler task's last transition;
 *   2. snapshots of the cluster fold (log/cluster-fold.ts: what `inspect` shows) every
 *      SNAPSHOT_RECORDS records, at a block start, its forgotten tasks that never move again
 *      let go (pass 1 says which), so a snapshot's size follows the work in play.
 * Its sections go to a file of their own as they are made (the block and key tables after
 * pass 1, each snapshot as pass 2 takes it), so the build holds one snapshot at a time, not
 * the index; the header line, which names where each section is, is written last, and the
 * sections copied after it. Written to a temporary file and renamed, so a reader sees a
 * whole index or none.
 */
import { closeSync, createReadStream, createWriteStream, openSync, writeSync } from "node:fs";
import { open, rename, unlink, writeFile } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import { crc32, deflateRawSync } from "node:zlib";
import { LogIndexError } from "../machines/errors.js";
import { scanBlocks } from "./block-scan.js";
import { readFirstLine } from "./first-line.js";
import { sequenceStarts } from "./slice-header.js";
import { openLog } from "./reader.js";
import { ClusterFold } from "./cluster-fold.js";
import { encodeIndexHeader, fingerprintLog, INDEX_FORMAT, INDEX_VERSION, sameLog, sectionRefOf, type IndexHeader, type SectionRef, type SnapshotRef } from "./log-index-file.js";
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

export interface IndexBuildOptions {
  snapshotRecords?: number;
  /** Lines a block of a version-1 log holds (block-scan.ts). */
  blockLines?: number;
  /** Key entries a chunk of the key table holds while it is built (KeyEntries). */
  keyChunk?: number;
}

export async function buildLogIndex(path: string, out = indexPathOf(path), options: IndexBuildOptions = {}): Promise<IndexBuildStats> {
  const started = performance.now();
  const every = options.snapshotRecords ?? SNAPSHOT_RECORDS;
  const before = await fingerprintLog(path);
  const reader = await openLog(path);
  if (reader.header.v !== 1 && reader.header.v !== 2) throw new LogIndexError("unindexable", `${path}: log format version ${reader.header.v} is not one this build reads`);
  const recordsOffset = await recordsStart(path);
  const temporary = `${out}.${process.pid}.tmp`;
  const sections = new SectionFile(`${temporary}.sections`);
  try {
    const built = await buildSections(path, reader.header.v, recordsOffset, sequenceStarts(reader.header), sections, every, options);
    sections.close();
    const after = await fingerprintLog(path);
    if (!sameLog(before, after)) throw new LogIndexError("stale", `${path} changed while it was being indexed (still being written?)`);
    const header: IndexHeader = {
      format: INDEX_FORMAT,
      v: INDEX_VERSION,
      log: { ...before, format: reader.header.v, recordsOffset },
      records: built.records,
      blocks: built.blocks,
      firstT: built.firstT,
      problems: built.problems,
      snapshots: built.snapshots,
      actorsLast: built.actorsLast,
      sections: { blocks: built.blocksRef, keys: built.keysRef },
    };
    const headerLine = encodeIndexHeader(header);
    await writeFile(temporary, headerLine);
    await pipeline(createReadStream(sections.path, { highWaterMark: 1024 * 1024 }), createWriteStream(temporary, { flags: "a" }));
    await rename(temporary, out);
    return {
      records: built.records,
      blocks: built.blocks,
      keyEntries: built.keyEntries,
      snapshots: built.snapshots.length,
      bytes: headerLine.length + sections.bytes,
      seconds: (performance.now() - started) / 1000,
    };
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw error;
  } finally {
    sections.close();
    await unlink(sections.path).catch(() => {});
  }
}

interface BuiltSections {
  records: number;
  blocks: number;
  firstT: number | null;
  problems: LogProblem[];
  actorsLast: Record<string, number>;
  keyEntries: number;
  blocksRef: SectionRef;
  keysRef: SectionRef;
  snapshots: SnapshotRef[];
}

/** The two passes: each section appended to `sections` as soon as it is whole. */
async function buildSections(path: string, format: number, recordsOffset: number, starts: ReadonlyMap<string, number> | undefined, sections: SectionFile, every: number, options: IndexBuildOptions): Promise<BuiltSections> {
  // Pass 1.
  const blocks = new Growing();
  const keys = new KeyEntries(options.keyChunk);
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
  await scanBlocks(path, format, recordsOffset, {
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
  }, starts, options.blockLines);
  if (block >= 0) endBlock();
  if (problems.some((p) => p.kind === "duplicate")) throw new LogIndexError("unindexable", `${path}: the log has duplicate records (the reader drops them), so its positions cannot be indexed exactly`);
  const blocksRef = sections.append(blocks.done());
  const keyEntries = keys.length;
  const keysRef = keys.writeSorted(sections);

  // Pass 2.
  const snapshots: SnapshotRef[] = [];
  const fold = new ClusterFold();
  const lastSeq: Record<string, number> = {};
  let maxT: number | null = null;
  let nextSnapshot = every;
  let current = -1;
  await scanBlocks(path, format, recordsOffset, {
    block(_offset, position) {
      current++;
      if (position < nextSnapshot) return;
      nextSnapshot = position + every;
      const ref = sections.append(deflateRawSync(JSON.stringify(fold.data())));
      snapshots.push({ position, block: current, lastSeq: { ...lastSeq }, maxT, ...ref });
    },
    record(record, position) {
      lastSeq[record.actor] = record.seq;
      if (maxT === null || record.t > maxT) maxT = record.t;
      fold.add(record);
      // A hash two keys share keeps the later of their last transitions: a task is kept longer, never let go early.
      if (record.kind === "transition" && record.machine === "task" && lastTransition.get(keyHash(record.id)) === position) fold.retire(record.id);
    },
    problem() {},
  }, starts, options.blockLines);
  return { records, blocks: block + 1, firstT, problems, actorsLast, keyEntries, blocksRef, keysRef, snapshots };
}

/** The index's sections, appended one after another to a file as they are made. */
class SectionFile {
  private fd: number | null;
  bytes = 0;

  constructor(readonly path: string) {
    this.fd = openSync(path, "w");
  }

  private sectionStart = 0;
  private crc = 0;

  /** Writes `data` as a section after the sections before it: where it is (from the first section's start), its size and its CRC-32. */
  append(data: ArrayBufferView): SectionRef {
    this.begin();
    this.write(data);
    return this.end();
  }

  /** A section written in parts: begin(), write() each part in order, end(). */
  begin(): void {
    this.sectionStart = this.bytes;
    this.crc = 0;
  }

  write(data: ArrayBufferView): void {
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    this.crc = crc32(bytes, this.crc);
    for (let done = 0; done < bytes.length; ) done += writeSync(this.fd!, bytes, done, bytes.length - done);
    this.bytes += bytes.length;
  }

  end(): SectionRef {
    return sectionRefOf(this.sectionStart, this.bytes - this.sectionStart, this.crc);
  }

  close(): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
  }
}

async function recordsStart(path: string): Promise<number> {
  const handle = await open(path, "r");
  try {
    return (await readFirstLine(handle))!.bytes;
  } finally {
    await handle.close();
  }
}

/**
 * The key table's entries (hash * 2^22 + block), kept in chunks as they come and written out
 * sorted by a merge of the sorted chunks: the largest thing the build holds, so held once,
 * never copied whole into a bigger array nor sorted into a second one.
 */
class KeyEntries {
  private chunks: Float64Array[] = [];
  private last: Float64Array;
  private used = 0;
  length = 0;

  constructor(private readonly chunk = 1 << 20) {
    this.last = new Float64Array(chunk);
  }

  push(value: number): void {
    if (this.used === this.last.length) {
      this.chunks.push(this.last);
      this.last = new Float64Array(this.chunk);
      this.used = 0;
    }
    this.last[this.used++] = value;
    this.length++;
  }

  /** Writes the entries in ascending order as one section of `sections`, and lets them go. */
  writeSorted(sections: SectionFile): SectionRef {
    const runs = [...this.chunks, this.last.subarray(0, this.used)].map((chunk) => chunk.sort());
    this.chunks = [];
    this.last = new Float64Array(0);
    const at = new Array<number>(runs.length).fill(0);
    const out = new Float64Array(1 << 17);
    let filled = 0;
    sections.begin();
    for (let n = 0; n < this.length; n++) {
      let best = -1;
      let min = Infinity;
      for (let r = 0; r < runs.length; r++) {
        const i = at[r]!;
        if (i < runs[r]!.length && runs[r]![i]! < min) {
          min = runs[r]![i]!;
          best = r;
        }
      }
      at[best]!++;
      out[filled++] = min;
      if (filled === out.length) {
        sections.write(out);
        filled = 0;
      }
    }
    sections.write(out.subarray(0, filled));
    return sections.end();
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
