import { open } from "node:fs/promises";
import { decodeHeaderLine, type LogHeader } from "./codec.js";
import { readFirstLine } from "./first-line.js";

/**
 * Whether a log's header says it is a slice of another log (`natsched export`): a slice cuts
 * its actors before their stop records by construction, so it is read as open on purpose.
 */
export function isSliceHeader(header: Pick<LogHeader, "meta"> | undefined): boolean {
  const meta = header?.meta as Record<string, unknown> | undefined;
  return meta !== undefined && meta.slice !== undefined && meta.slice !== null;
}

/** `isSliceHeader` of the log file at `path`; false if it cannot be read (the reader reports why). */
export async function isSliceFile(path: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch {
    return false;
  }
  try {
    const first = await readFirstLine(handle);
    if (first === undefined) return false;
    const decoded = decodeHeaderLine(first.line);
    return decoded.ok && isSliceHeader(decoded.header);
  } catch {
    return false;
  } finally {
    await handle.close();
  }
}
