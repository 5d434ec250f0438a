/**
 * The cluster at the end of a log as the dashboard's summary shows it (the same view as
 * DashFold's, byte for byte: tests/dashboard-open.test.ts), folded for the first pass over a
 * log file (recorded-log.ts) with nothing the summary does not show: one entry per task key,
 * changed in place (DashFold keeps inspect's ClusterFold and its own maps beside it, a new
 * facts object per transition, for the scrubber, stories and the log index's snapshots).
 * The rules are shared where they are more than a field copied: log/cluster-rules.ts (a
 * task's worker, a worker's reason, compute estimates, worker tasks leaving), dash-counts.ts
 * (bytes, tallies, processing counts, progress columns) and cluster-at.ts (the summary).
 * Still mirrored here, in this fold's own shapes: ClusterFold.add's start and stop facts,
 * its register-worker, scheduler-worker (nthreads kept), worker-task and steal-in-flight
 * facts, and the scheduler input it remembers; DashFold.add's outcome and steal victim per
 * key, which transitions count as done, and a key's processing worker before and after.
 */
import { noteEstimate, taskWorker, workerName, workerReason, workerTasksFor } from "../../log/cluster-rules.js";
import type { LogRecord, TransitionRecord } from "../../log/types.js";
import { clusterAt, type Tally } from "./cluster-at.js";
import { countSteal, moveColumn, moveProcessing, noteBytes, progressRowFor, tally, type Column } from "./dash-counts.js";
import type { ClusterAt, ProgressRow } from "./wire-types.js";

/** A task key: the scheduler's facts (state undefined once forgotten, as ClusterFold lets it go), its progress place, how it last ended. */
interface KeyEntry {
  state: string | undefined;
  worker: string | undefined;
  row: ProgressRow;
  column: Column;
  outcome: "memory" | "erred" | undefined;
  /** The victim of the steal in flight. */
  victim: string | undefined;
}

interface WorkerTask {
  state: string;
  duration: number | undefined;
}

interface ActorFacts {
  role: string;
  stopped?: { reason: string | undefined };
  nthreads?: number;
}

interface SchedulerWorker {
  state: string;
  reason?: string;
  nthreads?: number;
}

export class FirstFold {
  private records = 0;
  private lastActor = "";
  private lastSeq = 0;
  private lastT = 0;
  private schedulerState: string | undefined;
  private inputKey: unknown;
  private inputWorker: unknown;
  private readonly actors = new Map<string, ActorFacts>();
  private readonly workers = new Map<string, SchedulerWorker>();
  private readonly keys = new Map<string, KeyEntry>();
  private readonly workerTasks = new Map<string, Map<string, WorkerTask>>();
  private readonly durations = new Map<string, Map<string, number>>();
  private readonly steals = new Map<string, { key: string; victim?: string; thief?: string }>();
  private readonly progressRows = new Map<string, ProgressRow>();
  private readonly tallies = new Map<string, Tally>();
  private readonly nbytes = new Map<string, number>();
  private readonly processing = new Map<string, number>();

  /** Every task key seen, forgotten or not (as DashFold.keys). */
  keyNames(): IterableIterator<string> {
    return this.keys.keys();
  }

  add(record: LogRecord): void {
    this.records++;
    this.lastActor = record.actor;
    this.lastSeq = record.seq;
    this.lastT = record.t;
    switch (record.kind) {
      case "start": {
        const nthreads = record.init.nthreads;
        const facts: ActorFacts = { role: record.role };
        if (typeof nthreads === "number") facts.nthreads = nthreads;
        this.actors.set(record.actor, facts);
        if (record.role === "worker") this.workerTasks.set(record.actor, new Map());
        return;
      }
      case "stop": {
        const facts = this.actors.get(record.actor) ?? { role: "?" };
        facts.stopped = { reason: record.reason };
        this.actors.set(record.actor, facts);
        if (this.workerTasks.has(record.actor)) this.workerTasks.set(record.actor, new Map());
        return;
      }
      case "input":
        this.input(record.actor, record.event);
        return;
      case "transition":
        if (record.machine === "task") this.task(record);
        else if (record.machine === "wtask") this.workerTask(record);
        else if (record.machine === "scheduler") this.schedulerState = record.to;
        else if (record.machine === "worker" && record.actor === "scheduler") this.schedulerWorker(record);
        return;
    }
  }

  private input(actor: string, event: Record<string, unknown>): void {
    if (actor === "scheduler") {
      this.inputKey = event.key;
      this.inputWorker = event.worker;
      if (event.op === "register-worker" && typeof event.name === "string" && typeof event.nthreads === "number") {
        this.workers.set(event.name, { state: this.workers.get(event.name)?.state ?? "starting", nthreads: event.nthreads });
      }
    } else noteEstimate(this.durations, actor, event);
    noteBytes(this.nbytes, event);
  }

  private schedulerWorker(record: TransitionRecord): void {
    const why = record.why as Record<string, unknown> | undefined;
    const before = this.workers.get(record.id);
    const facts: SchedulerWorker = { state: record.to };
    const reason = workerReason(why, before?.reason, record.to);
    if (reason !== undefined) facts.reason = reason;
    if (before?.nthreads !== undefined) facts.nthreads = before.nthreads;
    this.workers.set(record.id, facts);
  }

  private workerTask(record: TransitionRecord): void {
    if (record.from === "executing" && record.to === "memory") tally(this.tallies, workerName(record.actor)).done++;
    const tasks = workerTasksFor(this.workerTasks, this.durations, record);
    if (tasks === undefined) return;
    const duration = this.durations.get(record.actor)?.get(record.id);
    const facts = tasks.get(record.id);
    if (facts === undefined) tasks.set(record.id, { state: record.to, duration });
    else {
      facts.state = record.to;
      facts.duration = duration;
    }
  }

  private task(record: TransitionRecord): void {
    const key = record.id;
    const to = record.to;
    const why = record.why as Record<string, unknown> | undefined;
    let entry = this.keys.get(key);
    if (entry === undefined) {
      const row = progressRowFor(this.progressRows, key);
      this.keys.set(key, (entry = { state: undefined, worker: undefined, row, column: "waiting", outcome: undefined, victim: undefined }));
    }
    const before = entry.state;
    const beforeWorker = before !== undefined && before.startsWith("processing") ? entry.worker : undefined;
    // The scheduler's facts, as ClusterFold.task has them.
    const worker = taskWorker(record, why, this.inputKey, this.inputWorker, entry.state !== undefined ? entry.worker : undefined);
    entry.state = to;
    entry.worker = worker;
    if (to === "processing.stealing") {
      const steal: { key: string; victim?: string; thief?: string } = { key };
      if (typeof why?.victim === "string") steal.victim = why.victim;
      if (typeof why?.thief === "string") steal.thief = why.thief;
      this.steals.set(key, steal);
    } else if (before === "processing.stealing") this.steals.delete(key); // (only then is it there: a delete per transition was a tenth of this)
    // DashFold's counts.
    if (to === "memory" || to === "erred") entry.outcome = to;
    if (to === "processing.stealing" && typeof why?.victim === "string") entry.victim = why.victim;
    if (record.event === "STEAL_CONFIRM" && typeof why?.worker === "string") countSteal(this.tallies, why.worker, entry.victim);
    if (record.from === "processing.stealing") entry.victim = undefined;
    if (to === "forgotten") this.nbytes.delete(key);
    moveProcessing(this.processing, beforeWorker, to.startsWith("processing") ? worker : undefined);
    moveColumn(entry, to, entry.outcome);
    if (to === "forgotten") entry.state = undefined;
  }

  /** As DashFold.view(). */
  view(): ClusterAt {
    const last = this.records > 0 ? { actor: this.lastActor, seq: this.lastSeq, t: this.lastT } : undefined;
    const { schedulerState, actors, workers, workerTasks, steals, progressRows, tallies, nbytes, processing } = this;
    return clusterAt({ records: this.records, last, schedulerState, actors, workers, workerTasks, steals, progressRows, tallies, nbytes, processing });
  }
}
