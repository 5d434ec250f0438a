/**
 * The cluster as the log shows it at a point, folded from records in log order, without
 * re-running any core (so it also works on a log that does not replay): each actor running
 * or stopped and why, the scheduler's tasks with their worker and function, each worker's
 * tasks, and the steals in flight. What `inspect` and `keys` print, and what the log index
 * snapshots (`data`, `from`), so inspect can start from a snapshot and fold only the rest.
 * In log/ (not tools/) for that: the index builder folds the log.
 */
import type { InputRecord, LogRecord, TransitionRecord } from "./types.js";
import { noteEstimate, taskWorker, workerReason, workerTasksFor } from "./cluster-rules.js";

export interface ActorFacts {
  actor: string;
  role: string;
  /** `t` of its latest start record. */
  started: number;
  /** Its latest stop record, if it came after the latest start. */
  stopped?: { t: number; reason: string | undefined };
  nthreads?: number;
}

/** A worker as the scheduler's worker machine has it. */
export interface SchedulerWorkerFacts {
  name: string;
  state: string;
  t: number;
  /** The reason recorded with its latest transition (worker-lost's "killed", a retirement's, ...). */
  reason?: string;
  nthreads?: number;
}

export interface TaskFacts {
  key: string;
  state: string;
  t: number;
  /** Processing, memory, erred: the worker it runs on, was reported from, or erred on. */
  worker?: string;
  func?: string;
}

export interface WorkerTaskFacts {
  state: string;
  t: number;
  /** The scheduler's estimate of its compute time, from its compute-task. */
  duration?: number;
}

export interface StealFacts {
  key: string;
  victim?: string;
  thief?: string;
  requestId?: string;
  t: number;
}

export class ClusterFold {
  readonly actors = new Map<string, ActorFacts>();
  readonly workers = new Map<string, SchedulerWorkerFacts>();
  readonly tasks = new Map<string, TaskFacts>();
  /** Worker-side tasks by worker actor ("worker.<name>"); emptied when the actor stops. */
  readonly workerTasks = new Map<string, Map<string, WorkerTaskFacts>>();
  readonly steals = new Map<string, StealFacts>();
  /** The scheduler's lifecycle state (its "scheduler" machine), once it has one. */
  schedulerState: string | undefined;
  /** Records folded, and the last one's actor, seq and time. */
  records = 0;
  last: RecordPlace | undefined;
  /**
   * Forgotten tasks let go of (`retire`): counted, no longer in `tasks`. Only the log index
   * retires, at a task's last transition, so its snapshots hold the tasks still in play.
   */
  retiredForgotten = 0;
  private readonly funcs = new Map<string, string>();
  /** The scheduler's estimate of each worker task's compute time, by worker actor then key (no joined keys to hash). */
  private readonly durations = new Map<string, Map<string, number>>();
  /** What task transitions read of the scheduler's latest input: its key and worker. */
  private schedulerInput: { key: unknown; worker: unknown } | undefined;

  add(record: LogRecord): void {
    this.records++;
    this.last = { actor: record.actor, seq: record.seq, t: record.t };
    switch (record.kind) {
      case "start": {
        const nthreads = record.init.nthreads;
        const facts: ActorFacts = { actor: record.actor, role: record.role, started: record.t };
        if (typeof nthreads === "number") facts.nthreads = nthreads;
        this.actors.set(record.actor, facts);
        if (record.role === "worker") this.workerTasks.set(record.actor, new Map());
        break;
      }
      case "stop": {
        const facts = this.actors.get(record.actor) ?? { actor: record.actor, role: "?", started: record.t };
        facts.stopped = { t: record.t, reason: record.reason };
        this.actors.set(record.actor, facts);
        // A stopped worker runs nothing: what its core had in hand went with it.
        if (this.workerTasks.has(record.actor)) this.workerTasks.set(record.actor, new Map());
        break;
      }
      case "input":
        this.input(record);
        break;
      case "transition":
        this.transition(record);
        break;
    }
  }

  private input(record: InputRecord): void {
    const event = record.event;
    if (record.actor === "scheduler") {
      this.schedulerInput = { key: event.key, worker: event.worker };
      if (event.op === "update-graph" && Array.isArray(event.tasks)) {
        for (const spec of event.tasks as { key?: unknown; func?: unknown }[]) {
          if (typeof spec?.key === "string" && typeof spec.func === "string") this.funcs.set(spec.key, spec.func);
        }
      } else if (event.op === "register-worker" && typeof event.name === "string" && typeof event.nthreads === "number") {
        this.workers.set(event.name, { name: event.name, state: this.workers.get(event.name)?.state ?? "starting", t: record.t, nthreads: event.nthreads });
      }
    } else noteEstimate(this.durations, record.actor, event);
  }

  private transition(record: TransitionRecord): void {
    const why = record.why as Record<string, unknown> | undefined;
    if (record.machine === "task") this.task(record, why);
    else if (record.machine === "scheduler") this.schedulerState = record.to;
    else if (record.machine === "wtask") {
      const tasks = workerTasksFor(this.workerTasks, this.durations, record);
      if (tasks === undefined) return;
      const facts: WorkerTaskFacts = { state: record.to, t: record.t };
      const duration = this.durations.get(record.actor)?.get(record.id);
      if (duration !== undefined) facts.duration = duration;
      tasks.set(record.id, facts);
    } else if (record.machine === "worker" && record.actor === "scheduler") {
      const before = this.workers.get(record.id);
      const facts: SchedulerWorkerFacts = { name: record.id, state: record.to, t: record.t };
      if (before?.nthreads !== undefined) facts.nthreads = before.nthreads;
      const reason = workerReason(why, before?.reason, record.to);
      if (reason !== undefined) facts.reason = reason;
      this.workers.set(record.id, facts);
    }
  }

  private task(record: TransitionRecord, why: Record<string, unknown> | undefined): void {
    const before = this.tasks.get(record.id);
    const facts: TaskFacts = { key: record.id, state: record.to, t: record.t };
    const func = this.funcs.get(record.id);
    if (func !== undefined) facts.func = func;
    const input = this.schedulerInput;
    const worker = taskWorker(record, why, input?.key, input?.worker, before?.worker);
    if (worker !== undefined) facts.worker = worker;
    this.tasks.set(record.id, facts);
    if (record.to === "processing.stealing") {
      const steal: StealFacts = { key: record.id, t: record.t };
      if (typeof why?.victim === "string") steal.victim = why.victim;
      if (typeof why?.thief === "string") steal.thief = why.thief;
      if (typeof why?.requestId === "string") steal.requestId = why.requestId;
      this.steals.set(record.id, steal);
    } else this.steals.delete(record.id);
    if (record.to === "forgotten") this.funcs.delete(record.id);
  }

  /** The scheduler's task `key`, forgotten, makes no more transitions: keep it counted, let it go. */
  retire(key: string): void {
    if (this.tasks.get(key)?.state !== "forgotten") return;
    this.tasks.delete(key);
    this.retiredForgotten++;
  }

  /** The scheduler's tasks by state, the retired ones counted as forgotten. */
  taskStates(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const task of this.tasks.values()) counts[task.state] = (counts[task.state] ?? 0) + 1;
    if (this.retiredForgotten > 0) counts.forgotten = (counts.forgotten ?? 0) + this.retiredForgotten;
    return counts;
  }

  /** Everything the fold holds, as JSON-ready data (`from` restores it). */
  data(): ClusterFoldData {
    return {
      records: this.records,
      last: this.last ?? null,
      retiredForgotten: this.retiredForgotten,
      schedulerState: this.schedulerState ?? null,
      schedulerInput: this.schedulerInput ?? null,
      actors: [...this.actors.values()],
      workers: [...this.workers.values()],
      tasks: [...this.tasks.values()].map((t) => [t.key, t.state, t.t, t.worker ?? null, t.func ?? null]),
      workerTasks: [...this.workerTasks].map(([actor, tasks]) => [actor, [...tasks].map(([key, f]) => [key, f.state, f.t, f.duration ?? null])]),
      steals: [...this.steals.values()],
      funcs: [...this.funcs],
      durations: [...this.durations].flatMap(([actor, own]) => [...own].map(([key, duration]): [string, number] => [`${actor}\u0000${key}`, duration])),
    };
  }

  static from(data: ClusterFoldData): ClusterFold {
    const fold = new ClusterFold();
    fold.records = data.records;
    if (data.last !== null) fold.last = data.last;
    fold.retiredForgotten = data.retiredForgotten;
    if (data.schedulerState !== null) fold.schedulerState = data.schedulerState;
    if (data.schedulerInput !== null) fold.schedulerInput = data.schedulerInput;
    for (const a of data.actors) fold.actors.set(a.actor, a);
    for (const w of data.workers) fold.workers.set(w.name, w);
    for (const [key, state, t, worker, func] of data.tasks) {
      const facts: TaskFacts = { key, state, t };
      if (worker !== null) facts.worker = worker;
      if (func !== null) facts.func = func;
      fold.tasks.set(key, facts);
    }
    for (const [actor, tasks] of data.workerTasks) {
      const map = new Map<string, WorkerTaskFacts>();
      for (const [key, state, t, duration] of tasks) map.set(key, duration === null ? { state, t } : { state, t, duration });
      fold.workerTasks.set(actor, map);
    }
    for (const s of data.steals) fold.steals.set(s.key, s);
    for (const [key, func] of data.funcs) fold.funcs.set(key, func);
    for (const [actorAndKey, duration] of data.durations) {
      const split = actorAndKey.indexOf("\u0000");
      const actor = actorAndKey.slice(0, split);
      let own = fold.durations.get(actor);
      if (own === undefined) fold.durations.set(actor, (own = new Map()));
      own.set(actorAndKey.slice(split + 1), duration);
    }
    return fold;
  }
}

export interface RecordPlace {
  actor: string;
  seq: number;
  t: number;
}

/** A ClusterFold as data: what a log index snapshot holds (compressed JSON). */
export interface ClusterFoldData {
  records: number;
  last: RecordPlace | null;
  retiredForgotten: number;
  schedulerState: string | null;
  schedulerInput: { key: unknown; worker: unknown } | null;
  actors: ActorFacts[];
  workers: SchedulerWorkerFacts[];
  tasks: [key: string, state: string, t: number, worker: string | null, func: string | null][];
  workerTasks: [actor: string, tasks: [key: string, state: string, t: number, duration: number | null][]][];
  steals: StealFacts[];
  funcs: [key: string, func: string][];
  durations: [actorAndKey: string, duration: number][];
}
