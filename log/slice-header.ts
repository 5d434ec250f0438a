import type { LogHeader } from "./codec.js";
import { readLogHeader } from "./header-file.js";
import { open } from "node:fs/promises";
import { LogCorruptError } from "../machines/errors.js";
import { decodeHeaderLine } from "./codec.js";
import { readFirstLine } from "./first-line.js";

/**
 * Whether a log's header says it is a slice of another log (`natsched export`): a slice cuts
 * its actors before their stop records by construction, so it is read as open on purpose.
 */
export function isSliceHeader(header: Pick<LogHeader, "meta"> | undefined): boolean {
  const meta = header?.meta as Record<string, unknown> | undefined;
  return meta !== undefined && meta.slice !== undefined && meta.slice !== null;
}

/**
 * An actor a slice starts from a snapshot instead of its start record: its role and start
 * record's `init` (to build a fresh core), its core as it stood after its record `seq`
 * (log/core-snapshot.ts, raw-deflated, base64), and the slice holds its records from `seq + 1` on.
 */
export interface SliceStart {
  role: string;
  init: Record<string, unknown>;
  seq: number;
  core: string;
}

/** The actors a slice's header starts from snapshots (`meta.slice.from`), by name; empty for any other log. */
export function sliceStarts(header: Pick<LogHeader, "meta"> | undefined): Map<string, SliceStart> {
  const from = isSliceHeader(header) ? ((header!.meta.slice as { from?: unknown }).from as Record<string, SliceStart> | undefined) : undefined;
  const out = new Map<string, SliceStart>();
  if (from === undefined || from === null || typeof from !== "object") return out;
  for (const [actor, start] of Object.entries(from)) {
    if (typeof start?.seq !== "number" || typeof start.core !== "string" || typeof start.role !== "string") throw new LogCorruptError(`slice header: meta.slice.from.${actor} is not a snapshot (role, init, seq, core)`, 1);
    out.set(actor, start);
  }
  return out;
}

/** Where each actor's sequence starts in the log with this header: after its snapshot in a slice, else 0 (absent). */
export function sequenceStarts(header: Pick<LogHeader, "meta"> | undefined): Map<string, number> {
  return new Map([...sliceStarts(header)].map(([actor, start]) => [actor, start.seq + 1]));
}

/** `sliceStarts` of the log file at `path` (empty if it cannot be read: the reader reports why). */
export async function sliceStartsOfFile(path: string): Promise<Map<string, SliceStart>> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch {
    return new Map();
  }
  try {
    const first = await readFirstLine(handle);
    const decoded = first === undefined ? undefined : decodeHeaderLine(first.line);
    return decoded?.ok ? sliceStarts(decoded.header) : new Map();
  } finally {
    await handle.close();
  }
}

/** `isSliceHeader` of the log file at `path`; false if it cannot be read (the reader reports why). */
export async function isSliceFile(path: string): Promise<boolean> {
  return isSliceHeader(await readLogHeader(path));
}
