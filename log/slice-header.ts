import type { LogHeader } from "./codec.js";
import { readLogHeader } from "./header-file.js";

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
  return isSliceHeader(await readLogHeader(path));
}
