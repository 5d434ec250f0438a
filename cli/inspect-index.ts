/**
 * `natsched inspect` on a large log file: through its index (log/log-index.ts, built on first
 * use) instead of reading the log up to the cut: the cluster fold of the latest snapshot
 * before the cut and the records from there to the cut (tools/fold-at-cut.ts), and the key's
 * own records. The same view as reading the whole log. A snapshot or block that does not
 * check (the index was damaged, or the log changed under it) costs a rebuild, said on stderr.
 */
import { LogIndexError } from "../machines/errors.js";
import { indexOnDemand } from "../log/index-on-demand.js";
import { buildLogIndex } from "../log/log-index-build.js";
import { LogIndex } from "../log/log-index.js";
import { openLog } from "../log/reader.js";
import { TimeBase } from "../log/time-base.js";
import type { CutSpec } from "../replay/log-cut.js";
import { foldAtCut, keyRecordsAtCut } from "../tools/fold-at-cut.js";
import type { InspectSource } from "./inspect-source.js";
import type { Io } from "./run.js";

/** Past this size a log file is inspected through its index unless --full. */
export const LARGE_LOG_BYTES = 256 * 1024 * 1024;

/** Runs `use` on the source at the cut through the index of the log at `path`; false if the log cannot be indexed (read it whole). */
export async function withIndexSource(path: string, spec: CutSpec | undefined, io: Io, use: (source: InspectSource) => Promise<void>): Promise<boolean> {
  let index = await indexOnDemand(path, (note) => io.err(note));
  if (index === undefined) return false;
  try {
    let source: InspectSource;
    try {
      source = await sourceFromIndex(index, spec);
    } catch (error) {
      if (!(error instanceof LogIndexError) || error.reason === "unindexable") throw error;
      io.err(`index ${error.reason}: ${error.message}; rebuilding it`);
      await index.close();
      await buildLogIndex(path, index.indexPath);
      index = await LogIndex.open(path, index.indexPath);
      source = await sourceFromIndex(index, spec);
    }
    for (const problem of index.problems) io.err(`log problem: ${problem.message}`);
    await use(source);
    return true;
  } finally {
    await index.close();
  }
}

async function sourceFromIndex(index: LogIndex, spec: CutSpec | undefined): Promise<InspectSource> {
  const header = (await openLog(index.logPath)).header;
  const at = await foldAtCut(index, spec);
  return {
    fold: at.fold,
    total: index.records,
    time: TimeBase.of(index.firstT ?? undefined, header.created),
    keyRecords: (key) => keyRecordsAtCut(index, at, key),
  };
}
