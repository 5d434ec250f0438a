import type { ClusterFold } from "../log/cluster-fold.js";
import type { TimeBase } from "../log/time-base.js";
import type { LogRecord } from "../log/types.js";

/** What `inspect` prints from, read whole or through the log's index: the fold at the cut, the log's record count, its time base, a key's records up to the cut. */
export interface InspectSource {
  fold: ClusterFold;
  total: number;
  time: TimeBase;
  keyRecords(key: string): Promise<LogRecord[]>;
}
