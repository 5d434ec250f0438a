/**
 * The dashboard's cache next to a log file (`run.natlog.dash`): what the page shows first
 * (the summary at the log's end and the whole task stream, as JSON text), so a log opened
 * again is drawn before it is read. Derived from the log, like its index: it names the log
 * it was made from (size and CRC-32 of its ends, log/log-index-file.ts), and one made from
 * another state of the log, of another version or unreadable is ignored (and rewritten
 * once the log has been read). Gzip of three lines: a header, the summary, the stream.
 */
import { rename, readFile, unlink, writeFile } from "node:fs/promises";
import { gunzip, gzip } from "node:zlib";
import { promisify } from "node:util";
import { fingerprintLog, sameLog, type LogFingerprint } from "../../log/log-index-file.js";
import type { OpeningView } from "./model.js";
import type { Summary } from "./wire-types.js";

const FORMAT = "natsched-dashboard-cache";
/** Changes when the summary's or the stream's wire form does. */
const VERSION = 1;

const zip = promisify(gzip);
const unzip = promisify(gunzip);

interface CacheHeader {
  format: string;
  version: number;
  log: LogFingerprint;
}

export function cachePathOf(logPath: string): string {
  return `${logPath}.dash`;
}

/** The cached opening view of the log at `logPath`, or undefined when there is none that matches it. */
export async function readOpeningCache(logPath: string, cachePath = cachePathOf(logPath)): Promise<OpeningView | undefined> {
  let text: string;
  try {
    text = (await unzip(await readFile(cachePath))).toString("utf8");
  } catch {
    return undefined;
  }
  const first = text.indexOf("\n");
  const second = text.indexOf("\n", first + 1);
  if (first < 0 || second < 0) return undefined;
  try {
    const header = JSON.parse(text.slice(0, first)) as CacheHeader;
    if (header.format !== FORMAT || header.version !== VERSION) return undefined;
    if (!sameLog(header.log, await fingerprintLog(logPath))) return undefined;
    return { summary: JSON.parse(text.slice(first + 1, second)) as Summary, streamJson: text.slice(second + 1) };
  } catch {
    return undefined;
  }
}

/** Writes the cache (through a temporary file, so a reader never sees half of one); false if it could not be written (a read-only directory). */
export async function writeOpeningCache(logPath: string, view: OpeningView, cachePath = cachePathOf(logPath)): Promise<boolean> {
  const header: CacheHeader = { format: FORMAT, version: VERSION, log: await fingerprintLog(logPath) };
  const temporary = `${cachePath}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, await zip(`${JSON.stringify(header)}\n${JSON.stringify(view.summary)}\n${view.streamJson}`));
    await rename(temporary, cachePath);
    return true;
  } catch {
    await unlink(temporary).catch(() => {});
    return false;
  }
}
