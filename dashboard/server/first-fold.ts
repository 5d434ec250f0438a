/**
 * The cluster at the end of a log as the dashboard's summary shows it (the same view as
 * DashFold's, byte for byte: tests/dashboard-open.test.ts), folded for the first pass over a
 * log file (recorded-log.ts) with nothing the summary does not show: one entry per task key,
 * changed in place (DashFold keeps inspect's ClusterFold and its own maps beside it, a new
 * facts object per transition, for the scrubber, stories and the log index's snapshots).
 * The fields and rules are ClusterFold's and DashFold's; a change to either is one here.
 */
import { keySplit } from "../../machines/graph/keys.js";
import type { LogRecord, TransitionRecord } from "../../log/types.js";
import type { ClusterAt, ProgressRow, WorkerRow } from "./wire-types.js";

type Column = "waiting" | "queued" | "processing" | "memory" | "released" | "erred";

/** As DashFold's: worker-task states whose estimate counts as work the worker holds. */
const COMPUTE_STATES = new Set(["waiting", "ready", "executing", "resumed", "cancelled"]);

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

interface Tally {
  done: number;
  stealsIn: number;
  stealsOut: number;
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
    } else if (event.op === "compute-task" && typeof event.key === "string" && typeof event.duration === "number") {
      let own = this.durations.get(actor);
      if (own === undefined) this.durations.set(actor, (own = new Map()));
      own.set(event.key, event.duration);
    }
    // (nbytes first: most inputs have none, and a look-up on events of every shape is not cheap.)
    const nbytes = event.nbytes;
    if (typeof nbytes === "number" && typeof event.key === "string") this.nbytes.set(event.key, nbytes);
    // Scattered data comes as a list of { key, nbytes }.
    const keys = event.keys;
    if (Array.isArray(keys)) for (const k of keys as { key?: unknown; nbytes?: unknown }[]) if (typeof k?.key === "string" && typeof k.nbytes === "number") this.nbytes.set(k.key, k.nbytes);
  }

  private schedulerWorker(record: TransitionRecord): void {
    const why = record.why as Record<string, unknown> | undefined;
    const before = this.workers.get(record.id);
    const facts: SchedulerWorker = { state: record.to };
    if (typeof why?.reason === "string") facts.reason = why.reason;
    else if (before?.reason !== undefined && record.to !== "running") facts.reason = before.reason;
    if (before?.nthreads !== undefined) facts.nthreads = before.nthreads;
    this.workers.set(record.id, facts);
  }

  private workerTask(record: TransitionRecord): void {
    if (record.from === "executing" && record.to === "memory") this.tally(workerName(record.actor)).done++;
    let tasks = this.workerTasks.get(record.actor);
    if (tasks === undefined) this.workerTasks.set(record.actor, (tasks = new Map()));
    if (record.to === "released" || record.to === "forgotten") {
      tasks.delete(record.id);
      this.durations.get(record.actor)?.delete(record.id);
      return;
    }
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
      const prefix = keySplit(key);
      let row = this.progressRows.get(prefix);
      if (row === undefined) this.progressRows.set(prefix, (row = { prefix, total: 0, waiting: 0, queued: 0, processing: 0, memory: 0, released: 0, erred: 0 }));
      row.total++;
      row.waiting++;
      this.keys.set(key, (entry = { state: undefined, worker: undefined, row, column: "waiting", outcome: undefined, victim: undefined }));
    }
    const beforeWorker = entry.state !== undefined && entry.state.startsWith("processing") ? entry.worker : undefined;
    // The scheduler's facts, as ClusterFold.task has them.
    let worker: string | undefined;
    // The event first: most transitions have no use for their `why`.
    if ((record.event === "ASSIGN" || record.event === "STEAL_CONFIRM" || to === "erred") && typeof why?.worker === "string") worker = why.worker;
    else if (this.inputKey === key && typeof this.inputWorker === "string") worker = this.inputWorker;
    else if (entry.state !== undefined) worker = entry.worker;
    if (!(to.startsWith("processing") || to.startsWith("memory") || to.startsWith("erred"))) worker = undefined;
    entry.state = to;
    entry.worker = worker;
    if (to === "processing.stealing") {
      const steal: { key: string; victim?: string; thief?: string } = { key };
      if (typeof why?.victim === "string") steal.victim = why.victim;
      if (typeof why?.thief === "string") steal.thief = why.thief;
      this.steals.set(key, steal);
    } else this.steals.delete(key);
    // DashFold's counts.
    if (to === "memory" || to === "erred") entry.outcome = to;
    if (to === "processing.stealing" && typeof why?.victim === "string") entry.victim = why.victim;
    if (record.event === "STEAL_CONFIRM" && typeof why?.worker === "string") {
      this.tally(why.worker).stealsIn++;
      if (entry.victim !== undefined) this.tally(entry.victim).stealsOut++;
    }
    if (record.from === "processing.stealing") entry.victim = undefined;
    if (to === "forgotten") this.nbytes.delete(key);
    const afterWorker = to.startsWith("processing") ? worker : undefined;
    if (beforeWorker !== afterWorker) {
      if (beforeWorker !== undefined) this.processing.set(beforeWorker, (this.processing.get(beforeWorker) ?? 1) - 1);
      if (afterWorker !== undefined) this.processing.set(afterWorker, (this.processing.get(afterWorker) ?? 0) + 1);
    }
    const column = this.column(entry, to);
    if (column !== entry.column) {
      entry.row[entry.column]--;
      entry.row[column]++;
      entry.column = column;
    }
    if (to === "forgotten") entry.state = undefined;
  }

  private column(entry: KeyEntry, state: string): Column {
    if (state.startsWith("processing")) return "processing";
    if (state === "memory" || state === "erred" || state === "queued") return state;
    if (state === "released" || state === "forgotten") return entry.outcome === "memory" ? "released" : entry.outcome === "erred" ? "erred" : "waiting";
    return "waiting";
  }

  private tally(worker: string): Tally {
    let t = this.tallies.get(worker);
    if (t === undefined) this.tallies.set(worker, (t = { done: 0, stealsIn: 0, stealsOut: 0 }));
    return t;
  }

  /** As DashFold.view(). */
  view(): ClusterAt {
    const names = new Set<string>(this.workers.keys());
    for (const [actor, facts] of this.actors) if (facts.role === "worker") names.add(workerName(actor));
    const workers = [...names].sort().map((name) => this.worker(name));
    const steals = [...this.steals.values()].map(({ key, victim, thief }) => ({ key, ...(victim !== undefined ? { victim } : {}), ...(thief !== undefined ? { thief } : {}) }));
    const progress = [...this.progressRows.values()].map((row) => ({ ...row })).sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0));
    const at: ClusterAt = { records: this.records, workers, progress, steals };
    if (this.records > 0) at.last = { actor: this.lastActor, seq: this.lastSeq, t: this.lastT };
    if (this.schedulerState !== undefined) at.schedulerState = this.schedulerState;
    return at;
  }

  private worker(name: string): WorkerRow {
    const own = this.actors.get(`worker.${name}`);
    const seen = this.workers.get(name);
    const executing: string[] = [];
    let occupancy = 0;
    let inMemory = 0;
    let bytes = 0;
    for (const [key, facts] of this.workerTasks.get(`worker.${name}`) ?? []) {
      if (facts.state === "executing") executing.push(key);
      if (COMPUTE_STATES.has(facts.state)) occupancy += facts.duration ?? 0;
      if (facts.state === "memory") {
        inMemory++;
        bytes += this.nbytes.get(key) ?? 0;
      }
    }
    const status = own !== undefined ? (own.stopped ? "stopped" : "running") : seen === undefined ? "unknown" : seen.state === "closed" ? "stopped" : "running";
    const tally = this.tallies.get(name);
    const row: WorkerRow = {
      name,
      status,
      executing: executing.sort(),
      occupancy,
      processing: this.processing.get(name) ?? 0,
      inMemory,
      bytes,
      done: tally?.done ?? 0,
      stealsIn: tally?.stealsIn ?? 0,
      stealsOut: tally?.stealsOut ?? 0,
    };
    if (seen !== undefined) row.schedulerState = seen.state;
    const reason = own?.stopped?.reason ?? seen?.reason;
    if (reason !== undefined) row.reason = reason;
    const nthreads = own?.nthreads ?? seen?.nthreads;
    if (nthreads !== undefined) row.nthreads = nthreads;
    return row;
  }
}

function workerName(actor: string): string {
  return actor.startsWith("worker.") ? actor.slice("worker.".length) : actor;
}
