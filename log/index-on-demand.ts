/**
 * The index of a log file, built when it is missing (quietly for a small log: it is a cache next to the log)
 * and rebuilt when it no longer matches its log (stale) or does not check (corrupt), saying
 * so through `note`. Undefined when the
 * log cannot be indexed (duplicate records, an index that cannot be written): the caller
 * reads the log whole, as without an index.
 */
import { access, stat } from "node:fs/promises";
import { LogIndexError, NatschedError } from "../machines/errors.js";
import { buildLogIndex, indexPathOf } from "./log-index-build.js";
import { LogIndex } from "./log-index.js";

/** Building the index of a log larger than this takes long enough to say so. */
const SAY_BUILDING_BYTES = 64 * 1024 * 1024;

export async function indexOnDemand(logPath: string, note: (message: string) => void = () => {}): Promise<LogIndex | undefined> {
  const indexPath = indexPathOf(logPath);
  const exists = await access(indexPath).then(
    () => true,
    () => false,
  );
  if (exists) {
    try {
      return await LogIndex.open(logPath, indexPath);
    } catch (error) {
      if (!(error instanceof LogIndexError)) throw error;
      note(`index ${error.reason}: ${error.message}; rebuilding it`);
    }
  } else if ((await stat(logPath)).size > SAY_BUILDING_BYTES) {
    note(`indexing ${logPath} once (${indexPath}; natsched log index builds it beforehand)`);
  }
  try {
    await buildLogIndex(logPath, indexPath);
    return await LogIndex.open(logPath, indexPath);
  } catch (error) {
    if (error instanceof LogIndexError || (!(error instanceof NatschedError) && (error as NodeJS.ErrnoException).code !== undefined && (error as NodeJS.ErrnoException).code !== "ENOENT")) {
      note(`no index (${(error as Error).message}): reading the whole log`);
      return undefined;
    }
    throw error;
  }
}
