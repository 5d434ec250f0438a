import type { Priority } from "../priority.js";
import type { TaskStateName, WorkerStateName } from "../tables.js";
import type { ErrorInfo, Restrictions } from "../protocol.js";

/** Tasks sharing a key prefix ("inc" of "inc-ab12..."): shared duration estimates. */
export class PrefixRec {
  /** Exponentially weighted average of measured durations; -1 until one is measured. */
  durationAverage = -1;
  /** Tasks of this prefix processing with a guessed duration, re-costed once one is measured. */
  readonly unknownDurations = new Set<TaskRec>();
  constructor(readonly name: string) {}
}

/** Tasks sharing a group name: the unit of the root-ish heuristic and co-assignment. */
export class GroupRec {
  /** Tasks of the group not forgotten. */
  size = 0;
  /** Groups that tasks of this group depend on. */
  readonly dependencies = new Set<GroupRec>();
  /** Co-assignment (queuing off): the worker taking the next root tasks, and how many more. */
  lastWorker: WorkerRec | null = null;
  lastWorkerTasksLeft = 0;
  constructor(readonly name: string) {}
}

/** A task's position in the scheduler's heap of queued tasks (see IndexedHeap). */
export const QUEUED_AT = Symbol("position among the queued tasks");

export class TaskRec {
  state: TaskStateName = "released";
  [QUEUED_AT] = -1;
  readonly dependencies: TaskRec[] = [];
  readonly dependents = new Set<TaskRec>();
  /** Dependencies not in memory yet (while waiting). */
  waitingOn: Set<TaskRec> | null = null;
  /** Dependents that still need this task's result. */
  waiters: Set<TaskRec> | null = null;
  /** Clients holding a future for it. */
  whoWants: Set<string> | null = null;
  readonly whoHas = new Set<WorkerRec>();
  processingOn: WorkerRec | null = null;
  /** Estimated duration booked on processingOn, to undo exactly (transfers are booked per worker). */
  bookedCost = 0;
  /** Output size in bytes, -1 until known. */
  nbytes = -1;
  /** Times a worker died while running it. */
  suspicious = 0;
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

  constructor(
    readonly key: string,
    readonly prefix: PrefixRec,
    readonly group: GroupRec,
  ) {}
}

export class WorkerRec {
  state: WorkerStateName = "starting";
  /** Tasks processing here with the cost booked for each. */
  readonly processing = new Set<TaskRec>();
  /** Estimated seconds of work: durations of what it processes plus moving what it must fetch. */
  occupancy = 0;
  /**
   * Dependencies of its processing tasks that it does not hold (Dask's `needs_what`):
   * how many of those tasks need each, and the bytes booked for moving it. A dependency
   * needed by several tasks is moved, and booked, once.
   */
  readonly needsWhat = new Map<TaskRec, { count: number; bytes: number }>();
  readonly hasWhat = new Set<TaskRec>();
  /** Bytes of task results stored here. */
  nbytes = 0;
  readonly functions: Set<string>;
  /** Join order, for deterministic tie-breaking. */
  readonly order: number;

  constructor(
    readonly name: string,
    readonly id: string,
    readonly nthreads: number,
    readonly host: string,
    readonly resources: Record<string, number>,
    functions: string[],
    order: number,
  ) {
    this.functions = new Set(functions);
    this.order = order;
  }
}
