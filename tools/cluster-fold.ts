/**
 * The cluster as the log shows it at a point, folded from records in log order, without
 * re-running any core (so it also works on a log that does not replay): each actor running
 * or stopped and why, the scheduler's tasks with their worker and function, each worker's
 * tasks, and the steals in flight. What `inspect` and `keys` print.
 */
import type { InputRecord, LogRecord, TransitionRecord } from "../log/types.js";

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

/** Task states in which a task has a worker: running on one, held by one, or erred on one. */
const HAS_WORKER = /^(processing|memory|erred)/;

export class ClusterFold {
  readonly actors = new Map<string, ActorFacts>();
  readonly workers = new Map<string, SchedulerWorkerFacts>();
  readonly tasks = new Map<string, TaskFacts>();
  /** Worker-side tasks by worker actor ("worker.<name>"); emptied when the actor stops. */
  readonly workerTasks = new Map<string, Map<string, WorkerTaskFacts>>();
  readonly steals = new Map<string, StealFacts>();
  /** The scheduler's lifecycle state (its "scheduler" machine), once it has one. */
  schedulerState: string | undefined;
  /** Records folded, and the last one. */
  records = 0;
  last: LogRecord | undefined;
  private readonly funcs = new Map<string, string>();
  /** The scheduler's estimate of each worker task's compute time, by worker actor then key (no joined keys to hash). */
  private readonly durations = new Map<string, Map<string, number>>();
  private lastSchedulerInput: InputRecord | undefined;

  add(record: LogRecord): void {
    this.records++;
    this.last = record;
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
      this.lastSchedulerInput = record;
      if (event.op === "update-graph" && Array.isArray(event.tasks)) {
        for (const spec of event.tasks as { key?: unknown; func?: unknown }[]) {
          if (typeof spec?.key === "string" && typeof spec.func === "string") this.funcs.set(spec.key, spec.func);
        }
      } else if (event.op === "register-worker" && typeof event.name === "string" && typeof event.nthreads === "number") {
        this.workers.set(event.name, { name: event.name, state: this.workers.get(event.name)?.state ?? "starting", t: record.t, nthreads: event.nthreads });
      }
    } else if (event.op === "compute-task" && typeof event.key === "string" && typeof event.duration === "number") {
      let own = this.durations.get(record.actor);
      if (own === undefined) this.durations.set(record.actor, (own = new Map()));
      own.set(event.key, event.duration);
    }
  }

  private transition(record: TransitionRecord): void {
    const why = record.why as Record<string, unknown> | undefined;
    if (record.machine === "task") this.task(record, why);
    else if (record.machine === "scheduler") this.schedulerState = record.to;
    else if (record.machine === "wtask") {
      let tasks = this.workerTasks.get(record.actor);
      if (tasks === undefined) this.workerTasks.set(record.actor, (tasks = new Map()));
      if (record.to === "released" || record.to === "forgotten") {
        tasks.delete(record.id);
        this.durations.get(record.actor)?.delete(record.id);
        return;
      }
      const facts: WorkerTaskFacts = { state: record.to, t: record.t };
      const duration = this.durations.get(record.actor)?.get(record.id);
      if (duration !== undefined) facts.duration = duration;
      tasks.set(record.id, facts);
    } else if (record.machine === "worker" && record.actor === "scheduler") {
      const before = this.workers.get(record.id);
      const facts: SchedulerWorkerFacts = { name: record.id, state: record.to, t: record.t };
      if (before?.nthreads !== undefined) facts.nthreads = before.nthreads;
      if (typeof why?.reason === "string") facts.reason = why.reason;
      else if (before?.reason !== undefined && record.to !== "running") facts.reason = before.reason;
      this.workers.set(record.id, facts);
    }
  }

  private task(record: TransitionRecord, why: Record<string, unknown> | undefined): void {
    const before = this.tasks.get(record.id);
    const facts: TaskFacts = { key: record.id, state: record.to, t: record.t };
    const func = this.funcs.get(record.id);
    if (func !== undefined) facts.func = func;
    const input = this.lastSchedulerInput?.event;
    if (typeof why?.worker === "string" && (record.event === "ASSIGN" || record.event === "STEAL_CONFIRM" || record.to === "erred")) facts.worker = why.worker;
    else if (input !== undefined && input.key === record.id && typeof input.worker === "string") facts.worker = input.worker;
    else if (before?.worker !== undefined) facts.worker = before.worker;
    if (!HAS_WORKER.test(record.to)) delete facts.worker;
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
}
