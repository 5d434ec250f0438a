import type { ErrorInfo, SchedulerToWorker, WorkerToScheduler } from "../protocol.js";
import type { MachineName, Why } from "../reasons.js";

export interface WorkerInit {
  name: string;
  /** This incarnation's id (a restarted worker gets a new one). */
  id: string;
  nthreads: number;
  transferIncomingCountLimit: number;
  /** Bandwidth (bytes/s) assumed before a transfer is measured; default 100e6 (config.bandwidth). */
  bandwidth?: number;
  /** Tombstones kept (MAX_TOMBSTONES when absent); for tests of the bound. */
  maxTombstones?: number;
  /**
   * The tasks to fetch are queued per holder (Dask's data_needed), and a gather takes its
   * holder's first tasks in priority order. Every worker started now sets it; absent in logs
   * written before it, whose workers kept one queue by priority (a different gather order
   * among equal priorities), and replay rebuilds them so.
   */
  fetchByHolder?: boolean;
  /**
   * false: the worker does not measure its round trips (compute-task `answers`), so the
   * scheduler's adaptive saturation gives it Dask's count. Set by an in-process worker whose
   * tasks run on the thread its scheduler runs on: there the round trip is that thread's
   * own work, which holding more tasks cannot overlap. Absent: measured (and in older logs).
   */
  roundTrips?: false;
}

/** Stimuli from the worker's own host: lifecycle, finished transfers and executions. */
export type WorkerLocalOp =
  /** The scheduler answered the registration; `run`: the scheduler run it registered with. */
  | { op: "registered"; run?: number }
  /**
   * A scheduler announced a new run (`run`: its scheduler-start time), with which the worker
   * registers again: the run before is left, and its late instructions are void.
   */
  | { op: "new-run"; run: number }
  /**
   * The host registers this worker again (with a scheduler that removed it, or a new run),
   * with `holding()` as it is now: those keys are claimed until the scheduler's
   * void-assignments answers the registration.
   */
  | { op: "register-again" }
  | { op: "close" }
  /** Data handed to this worker directly (scatter); the host stores it only if WorkerCore.putDataRefusal allows. */
  | { op: "put-data"; keys: { key: string; nbytes: number }[] }
  /**
   * The scatter lease: scattered data still unconfirmed after `scatterLease`, checked with the
   * scheduler's who-has: `held`, keys it lists this worker for; `unclaimed`, keys it does not.
   */
  | { op: "scatter-lease"; held: string[]; unclaimed: string[] }
  | { op: "gather-done"; from: string; received: { key: string; nbytes: number }[]; missing: string[] }
  | { op: "gather-failed"; from: string; keys: string[]; reason: string }
  | { op: "execute-done"; key: string; nbytes: number; start: number; stop: number }
  | { op: "execute-failed"; key: string; error: ErrorInfo; start: number; stop: number };

export type WorkerInput = (SchedulerToWorker | WorkerLocalOp) & { t: number };

/** What the worker core asks its host to do. */
export interface WorkerEffects {
  toScheduler(op: WorkerToScheduler): void;
  /** Run a registered function; answer with execute-done or execute-failed. */
  execute(key: string, func: string, args: unknown[]): void;
  /** Fetch keys from a peer; answer with gather-done or gather-failed. */
  gather(from: string, keys: string[]): void;
  /** Drop a result from the data store. */
  freeData(key: string): void;
  /** A machine's transition, with the decision's reasons (machines/reasons.ts): the host logs it. */
  transition(machine: MachineName, id: string, event: string, from: string, to: string, why?: Why): void;
}
