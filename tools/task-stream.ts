/**
 * The task stream of a log: each execution as a bar on a lane of its worker, transfers
 * between workers, steals and worker deaths, folded from records in log order (a run's log
 * or the simulator's: both write the same records). What the dashboard draws and
 * `natsched export --format trace` writes.
 *
 * An execution runs from the worker's wtask EXECUTE (a thread took it) to its execute-done
 * or execute-failed input, on the worker's own clock, so a lane is taken and given back in
 * the worker's record order and two bars on one lane never overlap. Lanes are not recorded:
 * each execution takes the lowest lane free when it starts.
 */
import { hashedKeyPrefix, keySplit } from "../machines/graph/keys.js";
import { packLanes } from "./interval-lanes.js";
import type { InputRecord, LogRecord, TransitionRecord } from "../log/types.js";
import type { StreamBar, StreamDeath, StreamSteal, StreamTransfer, StreamWorker, TaskStream, TaskStreamDelta } from "./task-stream-types.js";

export type * from "./task-stream-types.js";
export { decodeTaskStream, encodeTaskStream, type TaskStreamWire } from "./task-stream-wire.js";

interface Execution {
  key: string;
  lane: number;
  start: number;
  /** Released while running: its outcome is discarded unless it is asked for again. */
  cancelled: boolean;
}

interface WorkerState {
  info: StreamWorker;
  /** Per lane, the key running on it (null: free). */
  lanes: (string | null)[];
  open: Map<string, Execution>;
  /** Fetches in flight by key: when the GATHER began. */
  fetching: Map<string, number>;
  /** It fed itself a close since its last start: its stop is a departure, not a death. */
  closing: boolean;
  /** It stopped (or the scheduler lost it) since its last start. */
  gone: boolean;
}

const WORKER_ACTOR = "worker.";

export class TaskStreamBuilder {
  private runStart: number | undefined;
  private last = 0;
  private readonly workers = new Map<string, WorkerState>();
  private readonly byActor = new Map<string, WorkerState>();
  private readonly bars: StreamBar[] = [];
  private readonly transfers: StreamTransfer[] = [];
  private readonly steals: StreamSteal[] = [];
  private readonly deaths: StreamDeath[] = [];
  /** Steals the scheduler asked for and has no answer to yet, by task key. */
  private readonly pendingSteals = new Map<string, StreamSteal>();
  private readonly prefixes = new Map<string, string>();
  private readonly hashedPrefixes = new Map<string, string>();
  /** Records of worker actors seen: none in a scheduler's own log file. */
  private workerRecords = 0;
  /** Executions as the scheduler heard of them, for a log without worker records. */
  private readonly reported: { key: string; worker: string; start: number; end: number; ok: boolean }[] = [];
  private drained = { bars: 0, transfers: 0, steals: 0, deaths: 0 };

  add(record: LogRecord): void {
    if (this.runStart === undefined) this.runStart = record.t;
    const t = record.t - this.runStart;
    if (t > this.last) this.last = t;
    if (record.actor === "scheduler") {
      if (record.kind === "transition") this.schedulerTransition(record, t);
      else if (record.kind === "input") this.schedulerInput(record, t);
      return;
    }
    if (!record.actor.startsWith(WORKER_ACTOR)) return;
    this.workerRecords++;
    switch (record.kind) {
      case "start":
        this.workerStart(record.actor, record.init, t);
        break;
      case "stop":
        this.workerGone(this.actorState(record.actor), t, record.reason, false);
        break;
      case "input":
        this.workerInput(this.actorState(record.actor), record, t);
        break;
      case "transition":
        if (record.machine === "wtask") this.workerTask(this.actorState(record.actor), record, t);
        break;
    }
  }

  /**
   * The stream so far: executions still running end at the last record, steals unanswered
   * are pending. A log with no worker records (a scheduler's own file) has the executions
   * the scheduler was told of: finished ones with the start and stop the worker reported,
   * failures as a mark when the scheduler heard (their reports carry no times).
   */
  snapshot(): TaskStream {
    const bars = this.workerRecords === 0 ? this.reportedBars() : [...this.bars, ...this.running()];
    bars.sort((a, b) => a.start - b.start);
    return {
      runStart: this.runStart ?? 0,
      end: this.last,
      workers: this.workerList(),
      bars,
      transfers: [...this.transfers],
      steals: [...this.steals, ...this.pendingSteals.values()],
      deaths: [...this.deaths],
    };
  }

  /** What completed since the last drain (bars that ended, transfers, steals answered, deaths), and every worker and execution running as it is now. */
  drain(): TaskStreamDelta {
    const delta: TaskStreamDelta = {
      runStart: this.runStart ?? 0,
      end: this.last,
      workers: this.workerList(),
      bars: this.bars.slice(this.drained.bars),
      transfers: this.transfers.slice(this.drained.transfers),
      steals: this.steals.slice(this.drained.steals),
      deaths: this.deaths.slice(this.drained.deaths),
      running: this.running(),
    };
    this.drained = { bars: this.bars.length, transfers: this.transfers.length, steals: this.steals.length, deaths: this.deaths.length };
    return delta;
  }

  private reportedBars(): StreamBar[] {
    const bars: StreamBar[] = [];
    const byWorker = new Map<string, typeof this.reported>();
    for (const run of this.reported) {
      const list = byWorker.get(run.worker);
      if (list === undefined) byWorker.set(run.worker, [run]);
      else list.push(run);
    }
    for (const [name, runs] of byWorker) {
      const state = this.worker(name);
      const lanes = packLanes(runs);
      runs.forEach((run, i) => {
        bars.push({ key: run.key, prefix: this.prefix(run.key), worker: name, lane: lanes[i]!, start: run.start, end: run.end, outcome: run.ok ? "ok" : "erred" });
        if (lanes[i]! >= state.info.lanes) state.info.lanes = lanes[i]! + 1;
      });
    }
    return bars;
  }

  /** The executions open now, as bars up to the last record. */
  private running(): StreamBar[] {
    const bars: StreamBar[] = [];
    for (const state of this.workers.values()) {
      for (const run of state.open.values()) bars.push(this.bar(state, run, this.last, "running"));
    }
    return bars;
  }

  private workerList(): StreamWorker[] {
    return [...this.workers.values()].map((state) => ({ ...state.info }));
  }

  /** The state of the worker whose actor is `actor` ("worker.<name>"). */
  private actorState(actor: string): WorkerState {
    let state = this.byActor.get(actor);
    if (state === undefined) this.byActor.set(actor, (state = this.worker(actor.slice(WORKER_ACTOR.length))));
    return state;
  }

  private worker(name: string): WorkerState {
    let state = this.workers.get(name);
    if (state === undefined) {
      // A slice can begin after the worker's start: it then shows one lane until it needs more.
      state = { info: { name, threads: 1, lanes: 1, joined: this.last }, lanes: [null], open: new Map(), fetching: new Map(), closing: false, gone: false };
      this.workers.set(name, state);
    }
    return state;
  }

  private workerStart(actor: string, init: Record<string, unknown>, t: number): void {
    const name = typeof init.name === "string" ? init.name : actor.slice(WORKER_ACTOR.length);
    const fresh = !this.workers.has(name);
    const state = this.worker(name);
    this.byActor.set(actor, state);
    // A start with executions open: the incarnation before ended without a stop record.
    this.loseOpen(state, t);
    const threads = typeof init.nthreads === "number" && init.nthreads > 0 ? init.nthreads : 1;
    state.info.threads = threads;
    if (fresh) {
      state.info.joined = t;
      state.lanes = [];
      state.info.lanes = 0;
    }
    while (state.lanes.length < threads) state.lanes.push(null);
    state.info.lanes = Math.max(state.info.lanes, threads);
    delete state.info.left;
    delete state.info.why;
    delete state.info.died;
    state.closing = false;
    state.gone = false;
  }

  private workerGone(state: WorkerState, t: number, why: string | undefined, lost: boolean): void {
    if (state.gone) {
      if (state.info.why === undefined && why !== undefined) state.info.why = why;
      return;
    }
    state.gone = true;
    this.loseOpen(state, t);
    state.fetching.clear();
    state.info.left = t;
    if (why !== undefined) state.info.why = why;
    const died = lost || !state.closing || why === "killed";
    if (died) {
      state.info.died = true;
      const death: StreamDeath = { worker: state.info.name, t };
      if (why !== undefined) death.why = why;
      this.deaths.push(death);
    }
  }

  private loseOpen(state: WorkerState, t: number): void {
    for (const run of state.open.values()) this.bars.push(this.bar(state, run, t, "lost"));
    state.open.clear();
    state.lanes.fill(null);
  }

  private workerInput(state: WorkerState, record: InputRecord, t: number): void {
    const e = record.event;
    switch (e.op) {
      case "close":
        state.closing = true;
        break;
      case "execute-done":
      case "execute-failed": {
        const key = String(e.key);
        const run = state.open.get(key);
        if (run === undefined) return;
        state.open.delete(key);
        state.lanes[run.lane] = null;
        this.bars.push(this.bar(state, run, t, run.cancelled ? "cancelled" : e.op === "execute-done" ? "ok" : "erred"));
        break;
      }
      case "gather-done": {
        const from = String(e.from);
        for (const item of (Array.isArray(e.received) ? e.received : []) as { key?: unknown; nbytes?: unknown }[]) {
          this.transfer(state, String(item.key), from, t, Math.max(Number(item.nbytes) || 0, 0));
        }
        for (const key of (Array.isArray(e.missing) ? e.missing : []) as unknown[]) this.transfer(state, String(key), from, t, undefined);
        break;
      }
      case "gather-failed":
        for (const key of (Array.isArray(e.keys) ? e.keys : []) as unknown[]) this.transfer(state, String(key), String(e.from), t, undefined);
        break;
    }
  }

  private transfer(state: WorkerState, key: string, from: string, t: number, bytes: number | undefined): void {
    const start = state.fetching.get(key);
    state.fetching.delete(key);
    const transfer: StreamTransfer = { key, from, to: state.info.name, start: start ?? t, end: t };
    if (bytes !== undefined) transfer.bytes = bytes;
    this.transfers.push(transfer);
  }

  private workerTask(state: WorkerState, record: TransitionRecord, t: number): void {
    switch (record.event) {
      case "EXECUTE": {
        let lane = state.lanes.indexOf(null);
        if (lane < 0) lane = state.lanes.push(null) - 1;
        state.lanes[lane] = record.id;
        if (state.lanes.length > state.info.lanes) state.info.lanes = state.lanes.length;
        state.open.set(record.id, { key: record.id, lane, start: t, cancelled: false });
        break;
      }
      case "FREE":
        if (record.from === "executing" || record.from === "resumed") {
          const run = state.open.get(record.id);
          if (run !== undefined) run.cancelled = true;
        }
        break;
      case "COMPUTE_AGAIN": {
        const run = state.open.get(record.id);
        if (run !== undefined) run.cancelled = false;
        break;
      }
      case "GATHER":
        state.fetching.set(record.id, t);
        break;
    }
  }

  private schedulerTransition(record: TransitionRecord, t: number): void {
    if (record.machine !== "task") return;
    const why = (record.why ?? {}) as Record<string, unknown>;
    if (record.event === "STEAL") {
      this.pendingSteals.set(record.id, { key: record.id, victim: String(why.victim ?? "?"), thief: String(why.thief ?? "?"), t, outcome: "pending" });
      return;
    }
    if (record.from !== "processing.stealing") return;
    const steal = this.pendingSteals.get(record.id);
    if (steal === undefined) return;
    this.pendingSteals.delete(record.id);
    steal.end = t;
    steal.outcome = record.event === "STEAL_CONFIRM" ? "confirmed" : record.event === "STEAL_REJECT" ? "rejected" : "aborted";
    this.steals.push(steal);
  }

  private schedulerInput(record: InputRecord, t: number): void {
    const e = record.event;
    switch (e.op) {
      case "worker-lost":
      case "unregister-worker": {
        const state = typeof e.name === "string" ? this.workers.get(e.name) : undefined;
        const why = typeof e.reason === "string" ? e.reason : e.op === "worker-lost" ? "lost" : undefined;
        if (state === undefined) break;
        if (e.op === "unregister-worker") state.closing = true;
        this.workerGone(state, t, why, e.op === "worker-lost");
        break;
      }
      case "register-worker":
        // What a scheduler's own log knows of its workers; a worker's start record says the same or more.
        if (this.workerRecords === 0 && typeof e.name === "string") this.workerStart(`${WORKER_ACTOR}${e.name}`, { name: e.name, nthreads: e.nthreads }, t);
        break;
      case "task-finished":
      case "task-erred":
        if (this.workerRecords > 0 || typeof e.key !== "string" || typeof e.worker !== "string") break;
        if (e.op === "task-finished") this.reported.push({ key: e.key, worker: e.worker, start: Number(e.start) - this.runStart!, end: Number(e.stop) - this.runStart!, ok: true });
        else this.reported.push({ key: e.key, worker: e.worker, start: t, end: t, ok: false });
        break;
    }
  }

  private bar(state: WorkerState, run: Execution, end: number, outcome: StreamBar["outcome"]): StreamBar {
    return { key: run.key, prefix: this.prefix(run.key), worker: state.info.name, lane: run.lane, start: run.start, end, outcome };
  }

  private prefix(key: string): string {
    // The commonest key (name-<hash>) is split faster than it is looked up among a long run's keys.
    const hashed = hashedKeyPrefix(key);
    if (hashed !== undefined) {
      // One string per prefix, not one per bar.
      let same = this.hashedPrefixes.get(hashed);
      if (same === undefined) {
        if (this.hashedPrefixes.size > 10_000) this.hashedPrefixes.clear();
        this.hashedPrefixes.set(hashed, (same = hashed));
      }
      return same;
    }
    let prefix = this.prefixes.get(key);
    if (prefix === undefined) {
      prefix = keySplit(key);
      // Keys recur (recomputations, steals), but a long run's table must not grow without end.
      if (this.prefixes.size > 200_000) this.prefixes.clear();
      this.prefixes.set(key, prefix);
    }
    return prefix;
  }
}

/** The whole task stream of `records` (in log order). */
export function taskStreamOf(records: Iterable<LogRecord>): TaskStream {
  const builder = new TaskStreamBuilder();
  for (const record of records) builder.add(record);
  return builder.snapshot();
}
