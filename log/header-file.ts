import { open } from "node:fs/promises";
import { decodeHeaderLine, type LogHeader } from "./codec.js";
import { readFirstLine } from "./first-line.js";

/** The header of the log file at `path`; undefined if it cannot be read or is not a valid header (the reader reports why). */
export async function readLogHeader(path: string): Promise<LogHeader | undefined> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch {
    return undefined;
  }
  try {
    const first = await readFirstLine(handle);
    if (first === undefined) return undefined;
    const decoded = decodeHeaderLine(first.line);
    return decoded.ok ? decoded.header : undefined;
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}
