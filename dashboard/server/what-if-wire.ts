/**
 * What `POST /api/what-if` takes and answers. Types only, so the page imports them as they are.
 */
import type { TaskStreamWire } from "../../tools/task-stream-wire.js";

/**
 * The settings to change, as `natsched what-if` takes them: `set` config settings (values
 * as JSON, or strings read like NATSCHED_SCHEDULER__* values: "inf", "100ms", "1GB"),
 * `host` host costs in seconds (schedulerDelay, workerDelay, taskStart, schedulerOp,
 * graphIntake, warmUp), and `threads`: every worker's executor threads.
 */
export interface WhatIfRequest {
  set?: Record<string, unknown>;
  host?: Record<string, number>;
  threads?: number;
}

export interface WhatIfRun {
  /** Seconds from the first graph to the end of the last completed execution. */
  makespan: number;
  stream: TaskStreamWire;
}

export interface WhatIfAnswer {
  /** The config settings changed, resolved (Infinity as "Infinity"). */
  changes: Record<string, unknown>;
  threads?: number;
  hostCosts?: Record<string, number>;
  /**
   * Seconds from the recorded run's start to its first graph: both makespans are measured
   * from there, and the simulated stream is placed there, so the two share one time axis.
   */
  origin: number;
  recorded: WhatIfRun;
  simulated: WhatIfRun & { unfinished: number };
  /** The workload simulated with nothing changed: how close the simulator comes to the recording. */
  asRecorded: { makespan: number };
  /** simulated.makespan / recorded.makespan (NaN, as "NaN", without a recorded makespan). */
  ratio: number;
  /** Approximations the log needed, in words. */
  notes: string[];
}
