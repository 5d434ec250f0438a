/**
 * The dashboard server's JSON answers, shared with the page (dashboard/page/api.ts): types
 * only, importing nothing, so the browser build can take them.
 */

export interface WorkerRow {
  name: string;
  /** running | stopped | unknown, with the scheduler's state of it and the reason when it stopped. */
  status: string;
  schedulerState?: string;
  reason?: string;
  nthreads?: number;
  executing: string[];
  /** Estimated seconds of compute it holds (the scheduler's estimates of its tasks not yet done). */
  occupancy: number;
  processing: number;
  /** Keys in memory on it, and their bytes as reported. */
  inMemory: number;
  bytes: number;
  done: number;
  stealsIn: number;
  stealsOut: number;
}

/** Dask's progress columns for one prefix; `released`: computed, then let go; `erred` keeps a failure let go. */
export interface ProgressRow {
  prefix: string;
  total: number;
  waiting: number;
  queued: number;
  processing: number;
  memory: number;
  released: number;
  erred: number;
}

export interface ClusterAt {
  /** Records folded, and the last one's actor, seq and `t`. */
  records: number;
  last?: { actor: string; seq: number; t: number };
  schedulerState?: string;
  workers: WorkerRow[];
  progress: ProgressRow[];
  steals: { key: string; victim?: string; thief?: string }[];
}

export interface SourceInfo {
  /** "log" (a recorded log file or JetStream log), "embedded" (a LocalCluster in this process), "nats" (a live cluster on NATS). */
  kind: "log" | "embedded" | "nats";
  /** The log file, JetStream location or cluster name shown in the header. */
  location: string;
  cluster?: string;
  live: boolean;
}

export interface Summary {
  source: SourceInfo;
  start: number;
  startIso?: string;
  /** Seconds from the start to the last record. */
  end: number;
  records: number;
  now: ClusterAt;
  /**
   * Set while a recorded log is still read in the background: records read so far, of how
   * many (when known), and whether /api/stream already has the whole log's task stream
   * (from the dashboard's cache: `records`, `end` and `now` are then the whole log's too).
   */
  loading?: { read: number; of?: number; streamReady: boolean };
}

/** The cluster at a cut, with where the cut fell: `index` records of the log in log order, the last at `t` (from the start). */
export interface AtAnswer extends ClusterAt {
  cut: string;
  index: number;
  t: number;
}
