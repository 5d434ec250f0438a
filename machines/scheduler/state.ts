import type { Priority } from "../priority.js";
import type { TaskStateName, WorkerStateName } from "../tables.js";
import type { ErrorInfo, Restrictions } from "../protocol.js";
import { emptySet, withAdded, withDeleted } from "../util/shared-empty.js";
import type { Estimates } from "./estimates.js";

/** Tasks sharing a key prefix ("inc" of "inc-ab12..."): shared duration estimates (estimates.ts). */
export class PrefixRec {
  /** Average of measured durations (0.5/0.5), starting from a configured one; -1: unknown. */
  durationAverage: number;
  /** The longest execution reported still running (worker-metrics); -1: none. */
  maxExecTime = -1;
  /**
   * Measured durations behind durationAverage: 0 while it is unknown, Infinity for a
   * configured duration (trusted as given). Stealing weighs its evidence (stealing.ts).
   */
  samples: number;
  constructor(
    readonly name: string,
    initialAverage: number,
  ) {
    this.durationAverage = initialAverage;
    this.samples = initialAverage >= 0 ? Infinity : 0;
  }
}

/** Tasks sharing a group name: the unit of the root-ish heuristic and co-assignment. */
export class GroupRec {
  /** Tasks of the group not forgotten. */
  size = 0;
  /** Tasks of the group released or waiting: not yet scheduled (Dask's states["released"] + states["waiting"]). */
  pending = 0;
  /** Groups that tasks of this group depend on. */
  readonly dependencies = new Set<GroupRec>();
  /** Co-assignment (queuing off): the worker taking the next root tasks, and how many more. */
  lastWorker: WorkerRec | null = null;
  lastWorkerTasksLeft = 0;
  /** Output bytes of its finished tasks, and how many: their mean bounds adaptive saturation (saturation.ts). */
  outputBytes = 0;
  outputCount = 0;
  constructor(
    readonly name: string,
    /** The prefix of its tasks (a group's keys share their prefix): its duration drives adaptive saturation. */
    readonly prefix: PrefixRec,
  ) {}
}

/** A task's position in the scheduler's heap of queued tasks (see IndexedHeap). */
export const QUEUED_AT = Symbol("position among the queued tasks");

export class TaskRec {
  state: TaskStateName = "released";
  [QUEUED_AT] = -1;
  readonly dependencies: TaskRec[] = [];
  /** Read-only: change it with addDependent/removeDependent (shared and empty until then). */
  dependents: ReadonlySet<TaskRec> = emptySet();
  /** Dependencies not in memory yet (while waiting). */
  waitingOn: Set<TaskRec> | null = null;
  /** Dependents that still need this task's result. */
  waiters: Set<TaskRec> | null = null;
  /** Clients holding a future for it. */
  whoWants: Set<string> | null = null;
  /** Workers holding its result. Read-only: change it with addHolder/removeHolder/clearHolders (shared and empty until then). */
  whoHas: ReadonlySet<WorkerRec> = emptySet();
  processingOn: WorkerRec | null = null;
  /** Output size in bytes, -1 until known. */
  nbytes = -1;
  /** Times a worker died while running it. */
  suspicious = 0;
  /** Times it may still be run again after its function fails (TaskSpec.retries, counted down). */
  retries = 0;
  /** Times its function failed and it was run again. */
  retried = 0;
  exception: ErrorInfo | null = null;
  /** The task whose failure made this one fail. */
  exceptionBlame: TaskRec | null = null;
  /** Function name and encoded arguments; null for data that only arrived by scatter. */
  func: string | null = null;
  args: unknown[] = [];
  priority: Priority = [0, 0, 0];
  restrictions: Restrictions | null = null;
  /** An in-flight steal request's id, while state is processing.stealing. */
  stealRequest: string | null = null;
  /**
   * The number of its latest assignment to a worker (0: never assigned), from the core's
   * run-wide counter: compute-task and steal-request carry it (docs/protocol.md, "Assignment numbers").
   */
  attempt = 0;
  /**
   * The core's assignment counter when this record was made: an assignment number at or below
   * it belongs to an earlier record of the key (released, forgotten, submitted again), whose
   * release freed the key on every worker it was assigned to or held by.
   */
  bornAt = 0;
  /**
   * The worker whose task-erred made it erred (Dask's `erred_on`): that worker keeps the
   * failed task (state `error`) until the scheduler frees it there, which it does when the
   * task leaves `erred` (released or forgotten). Null otherwise (never erred on a worker,
   * failed because of a dependency or KilledWorker, or freed already).
   */
  erredOn: WorkerRec | null = null;
  /**
   * Workers told to free this key (holders when it was released, a copy the scheduler did
   * not count, the key taken back from a worker computing it): an add-keys of the key from
   * one of them, sent before the free-keys reached it or copied by the network, is stale (the
   * worker drops the copy on that free-keys), and so is every later one until the scheduler
   * names the key to it again (an assignment, an input, a copy to take): only that gives the
   * worker a copy the scheduler has not told it to free.
   */
  strayFreedOn: Set<WorkerRec> | null = null;

  constructor(
    readonly key: string,
    readonly prefix: PrefixRec,
    readonly group: GroupRec,
  ) {}

  addDependent(ts: TaskRec): void {
    this.dependents = withAdded(this.dependents, ts);
  }

  removeDependent(ts: TaskRec): void {
    this.dependents = withDeleted(this.dependents, ts);
  }

  addHolder(ws: WorkerRec): void {
    this.whoHas = withAdded(this.whoHas, ws);
  }

  removeHolder(ws: WorkerRec): void {
    this.whoHas = withDeleted(this.whoHas, ws);
  }

  clearHolders(): void {
    this.whoHas = emptySet();
  }
}

export class WorkerRec {
  state: WorkerStateName = "starting";
  /** When this incarnation started, as it said (register-worker's `started`), if it did. */
  started: number | null = null;
  /** Tasks processing here. */
  readonly processing = new Set<TaskRec>();
  /** How many of them per prefix (Dask's `task_prefix_count`). */
  readonly prefixCount = new Map<PrefixRec, number>();
  /**
   * Dependencies of its processing tasks that it does not hold (Dask's `needs_what`):
   * how many of those tasks need each, and the bytes booked for moving it. A dependency
   * needed by several tasks is moved, and booked, once.
   */
  readonly needsWhat = new Map<TaskRec, { count: number; bytes: number }>();
  /** The bytes of needsWhat, summed (Dask's `_network_occ`). */
  networkBytes = 0;
  readonly hasWhat = new Set<TaskRec>();
  /** Bytes of task results stored here. */
  nbytes = 0;
  readonly functions: Set<string>;
  /** Join order, for deterministic tie-breaking. */
  readonly order: number;
  /**
   * Seconds from its task-finished leaving it to the compute-task that answered it arriving,
   * smoothed (saturation.ts); -1 until it reports one. Only adaptive saturation measures it.
   */
  roundTrip = -1;
  /** It measures no round trips (register-worker's roundTrips: false): adaptive saturation gives it Dask's count. */
  noRoundTrips = false;
  /** Seconds it may hold a report to send with later ones (register-worker's reportHold); 0: it holds none. */
  reportHold = 0;

  constructor(
    readonly name: string,
    readonly id: string,
    readonly nthreads: number,
    readonly host: string,
    readonly resources: Record<string, number>,
    functions: string[],
    order: number,
    private readonly estimates: Estimates,
  ) {
    this.functions = new Set(functions);
    this.order = order;
  }

  /** Estimated seconds of work: what it processes at the current estimates, plus moving what it must fetch. */
  get occupancy(): number {
    return this.estimates.occupancy(this.prefixCount, this.networkBytes);
  }
}
