/**
 * The task stream: what ran where and when, folded from a log (tools/task-stream.ts) and
 * drawn by the dashboard (dashboard/page/task-stream-view.ts). No imports, so the page's
 * bundle takes these types and the wire codec without the log reader.
 *
 * Every time is in seconds from the run's start (log/time-base.ts); `runStart` is that
 * start on the records' own clock (epoch seconds, or the simulator's virtual clock).
 */

/**
 * ok: the function returned; erred: it threw; cancelled: released while running (its outcome
 * was discarded); lost: its worker stopped or was lost before it ended; running: it had not
 * ended when the log ends.
 */
export type BarOutcome = "ok" | "erred" | "cancelled" | "lost" | "running";
/** confirmed: the victim gave it up; rejected: the victim was running it; aborted: the task finished, erred or was released first. */
export type StealOutcome = "confirmed" | "rejected" | "aborted" | "pending";

export interface StreamWorker {
  name: string;
  /** Executor threads (its latest start's nthreads). */
  threads: number;
  /** Lanes its bars use: `threads`, or more if more executions overlapped than it has threads. */
  lanes: number;
  /** Its first start. */
  joined: number;
  /** Its last departure, when it did not start again after it. */
  left?: number;
  /** Why it left (the stop's or the scheduler's reason). */
  why?: string;
  /** It left without closing: killed, crashed or lost by the scheduler. */
  died?: boolean;
}

/** One execution of a task on a worker thread: from the thread taking it to its outcome. */
export interface StreamBar {
  key: string;
  prefix: string;
  worker: string;
  /** 0..lanes-1 of its worker: the lowest lane free when it started. */
  lane: number;
  start: number;
  end: number;
  outcome: BarOutcome;
}

/** A dependency fetched by `to` from `from`. `bytes` absent: the fetch failed or the peer had lost it. */
export interface StreamTransfer {
  key: string;
  from: string;
  to: string;
  start: number;
  end: number;
  bytes?: number;
}

export interface StreamSteal {
  key: string;
  victim: string;
  thief: string;
  /** When the scheduler asked the victim. */
  t: number;
  /** When the outcome came (absent while pending). */
  end?: number;
  outcome: StealOutcome;
}

/** A worker that died (killed, crashed, lost): marked on its lanes. */
export interface StreamDeath {
  worker: string;
  t: number;
  why?: string;
}

export interface TaskStream {
  /** The run's start on the records' clock (the log's first record's `t`). */
  runStart: number;
  /** The last record's time. */
  end: number;
  workers: StreamWorker[];
  bars: StreamBar[];
  transfers: StreamTransfer[];
  steals: StreamSteal[];
  deaths: StreamDeath[];
}

/**
 * What a live builder completed since its last drain (tools/task-stream.ts,
 * TaskStreamBuilder), with every worker as it is now (a handful: sent whole).
 */
export interface TaskStreamDelta extends TaskStream {
  /** The executions running now (outcome "running", ending at `end`): each delta's replace the last's. */
  running?: StreamBar[];
}
