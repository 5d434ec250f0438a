/**
 * The log index file's layout (docs/replay.md, "Seeking: the log index"): one JSON header
 * line with its own CRC-32, then binary sections and compressed snapshots, each with the
 * CRC-32 the header gives it. The header names the log it was built from by the log's size
 * and the CRC-32 of its first and last 64 KiB, so an index of another log, or of this log
 * before it grew, was cut or rewritten, is told apart ("stale").
 */
import { open } from "node:fs/promises";
import { crc32 } from "node:zlib";
import { LogIndexError } from "../machines/errors.js";
import type { LogProblem } from "./types.js";

export const INDEX_FORMAT = "natsched-log-index";
/** 2: snapshots of the cluster fold (log/cluster-fold.ts) with each one's latest `t`, each actor's last record. */
export const INDEX_VERSION = 2;
const FINGERPRINT_BYTES = 64 * 1024;

/** What identifies the log an index was built from. */
export interface LogFingerprint {
  bytes: number;
  headCrc: string;
  tailCrc: string;
}

export interface SectionRef {
  /** Bytes from the end of the header line. */
  offset: number;
  bytes: number;
  crc: string;
}

export interface SnapshotRef extends SectionRef {
  /** Records before it (the position it stands at), the block it starts, each actor's last seq before it. */
  position: number;
  block: number;
  lastSeq: Record<string, number>;
  /** The latest `t` of the records before it (null: none), so a time cut knows no actor passed it before the snapshot. */
  maxT: number | null;
}

export interface IndexHeader {
  format: typeof INDEX_FORMAT;
  v: number;
  log: LogFingerprint & { format: number; recordsOffset: number };
  records: number;
  blocks: number;
  firstT: number | null;
  problems: LogProblem[];
  snapshots: SnapshotRef[];
  /** Each actor's last record's position: past it, the actor has nothing more in the log. */
  actorsLast: Record<string, number>;
  sections: { blocks: SectionRef; keys: SectionRef };
}

export async function fingerprintLog(path: string): Promise<LogFingerprint> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    const part = Math.min(FINGERPRINT_BYTES, size);
    const head = Buffer.alloc(part);
    const tail = Buffer.alloc(part);
    await handle.read(head, 0, part, 0);
    await handle.read(tail, 0, part, size - part);
    return { bytes: size, headCrc: hex(crc32(head)), tailCrc: hex(crc32(tail)) };
  } finally {
    await handle.close();
  }
}

export function sameLog(a: LogFingerprint, b: LogFingerprint): boolean {
  return a.bytes === b.bytes && a.headCrc === b.headCrc && a.tailCrc === b.tailCrc;
}

/** The header line: the JSON of `header`, its CRC-32 added last as `"crc"` (as a log header's). */
export function encodeIndexHeader(header: IndexHeader): Buffer {
  const body = JSON.stringify(header);
  return Buffer.from(`${body.slice(0, -1)},"crc":"${hex(crc32(Buffer.from(body, "utf8")))}"}\n`, "utf8");
}

/** Reads and checks the header line of the index at `path`: its header, and where the sections start. */
export async function readIndexHeader(path: string): Promise<{ header: IndexHeader; dataOffset: number }> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    const chunk = Buffer.alloc(Math.min(size, 64 * 1024 * 1024));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, 0);
    const newline = chunk.subarray(0, bytesRead).indexOf(0x0a);
    if (newline < 0) throw corrupt(path, "no complete header line");
    const line = chunk.toString("utf8", 0, newline);
    const at = line.lastIndexOf(',"crc":"');
    if (at < 0 || !line.endsWith('"}')) throw corrupt(path, "the header line has no checksum");
    const recorded = line.slice(at + 8, -2);
    const computed = hex(crc32(Buffer.from(`${line.slice(0, at)}}`, "utf8")));
    if (recorded !== computed) throw corrupt(path, `header checksum: recorded ${recorded}, computed ${computed}`);
    const header = JSON.parse(`${line.slice(0, at)}}`) as IndexHeader;
    if (header.format !== INDEX_FORMAT) throw corrupt(path, "not a natsched log index");
    if (header.v !== INDEX_VERSION) throw new LogIndexError("stale", `${path}: index version ${header.v}, this build reads ${INDEX_VERSION}: rebuild it (natsched log index)`);
    const dataOffset = newline + 1;
    const end = Math.max(header.sections.blocks.offset + header.sections.blocks.bytes, header.sections.keys.offset + header.sections.keys.bytes, ...header.snapshots.map((s) => s.offset + s.bytes));
    if (dataOffset + end !== size) throw corrupt(path, `${size} bytes where the header says ${dataOffset + end}`);
    return { header, dataOffset };
  } finally {
    await handle.close();
  }
}

/** Reads a section whole and checks its CRC-32. */
export async function readSection(path: string, dataOffset: number, ref: SectionRef, what: string): Promise<Buffer> {
  const handle = await open(path, "r");
  try {
    // Its own ArrayBuffer (not a pooled one), so a Float64Array can view it in place.
    const bytes = Buffer.from(new ArrayBuffer(ref.bytes));
    const { bytesRead } = await handle.read(bytes, 0, ref.bytes, dataOffset + ref.offset);
    if (bytesRead !== ref.bytes) throw corrupt(path, `${what}: ${bytesRead} of ${ref.bytes} bytes`);
    const crc = hex(crc32(bytes));
    if (crc !== ref.crc) throw corrupt(path, `${what}: checksum mismatch (recorded ${ref.crc}, computed ${crc})`);
    return bytes;
  } finally {
    await handle.close();
  }
}

/** A section of `bytes` bytes at `offset` whose CRC-32 is `crc` (computed as it was written). */
export function sectionRefOf(offset: number, bytes: number, crc: number): SectionRef {
  return { offset, bytes, crc: hex(crc) };
}

function corrupt(path: string, message: string): LogIndexError {
  return new LogIndexError("corrupt", `${path}: ${message}: rebuild it (natsched log index)`);
}

function hex(value: number): string {
  return value.toString(16).padStart(8, "0");
}
