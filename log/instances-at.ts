import type { InstanceCounts } from "./instance-counts.js";
import type { LogIndex } from "./log-index.js";

/**
 * The instance counts after the log's first `position` records: the latest snapshot at or
 * before it, and the transitions from there on (at most one snapshot interval of records).
 */
export async function instanceCountsAt(index: LogIndex, position: number): Promise<InstanceCounts> {
  const snapshot = await index.snapshotBefore(position);
  for await (const record of index.range(snapshot.position, position)) if (record.kind === "transition") snapshot.counts.apply(record);
  return snapshot.counts;
}
