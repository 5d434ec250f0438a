/**
 * Checks the invariants of docs/invariants.md on one simulated run, after every step: it
 * follows the run's log as it is written (each worker's data store is rebuilt from what it
 * ran, received and was given), the mail the scheduler sends, and the live cores.
 */
import type { CompiledMachine } from "../machines/compile.js";
import { readSchedulerStart, readWorkerStart } from "../log/start-init.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput } from "../machines/scheduler/inputs.js";
import { SCHEDULER, TASK, WORKER, WORKER_TASK } from "../machines/tables.js";
import type { LogRecord } from "../log/types.js";
import { DEFAULT_LATENCY, type SimObserver, type SimResult, type SimView } from "../sim.js";
import type { DstCase } from "./dst-case.js";
import { expectedEnd, wantedAtEnd } from "./expected-end.js";
import { INVARIANTS, type InvariantId, type Violation } from "./invariants.js";
import { dataValue, referenceValues, taskDeps, taskValue } from "./reference.js";
import { checkSchedulerBookkeeping } from "./scheduler-bookkeeping.js";
import { schedulerFingerprint } from "./scheduler-fingerprint.js";

export const MACHINE_TABLES: Readonly<Record<string, CompiledMachine>> = { task: TASK, wtask: WORKER_TASK, worker: WORKER, scheduler: SCHEDULER };

/** Steps a run may take before it counts as never ending. */
export const DEFAULT_MAX_STEPS = 200_000;

/** Thrown from the observer to stop a run that does not end. */
export class RunawayRun extends Error {
  constructor(readonly steps: number, readonly t: number) {
    super(`the run had not ended after ${steps} steps (virtual time ${t})`);
    this.name = "RunawayRun";
  }
}

/** Messages kept per invariant; the rest are counted. */
const MAX_MESSAGES_PER_INVARIANT = 5;

type Instruction = "compute" | "free" | "steal";

/** One incarnation of a worker, as its log shows it. */
class WorkerTrack {
  alive = true;
  /** Values of what it holds in memory. */
  readonly store = new Map<string, string>();
  /** The value each key had when it last held it (peers read it for transfers). */
  readonly lastValue = new Map<string, string>();
  /** Value computed at the start of each execution, delivered at its end. */
  readonly computing = new Map<string, string>();
  /** Keys executing (EXECUTE seen, execute-done/failed not yet). */
  readonly running = new Set<string>();
  /**
   * Executions started under orders the scheduler no longer gives: before the scheduler lost
   * or let go of this incarnation, or before a clean stop of the scheduler. Not its word now.
   */
  readonly orphaned = new Set<string>();
  /** Values arriving with the input being handled (execution end, transfer, scatter). */
  readonly arriving = new Map<string, string>();
  constructor(
    readonly name: string,
    readonly id: string,
  ) {}
}

export interface CheckStats {
  steps: number;
  transitions: number;
  executions: number;
  reexecutions: number;
  deaths: number;
  envelopes: number;
  lateEnvelopes: number;
  duplicatedEnvelopes: number;
  stealRequests: number;
  stealsConfirmed: number;
  stealsRejected: number;
  /** Instructions workers dropped as superseded (wtask STALE): late or copied compute-tasks, overtaken free-keys. */
  staleDropped: number;
  restartsChecked: number;
  /** Graphs the scheduler took (update-graph), and releases (release-keys, cancel-keys, client-leave) from clients. */
  graphs: number;
  releases: number;
  /** Failures workers dropped when freed (wtask error -FREE-> released). */
  failuresFreed: number;
  /** Tasks the scheduler ran again after a failure (RELEASE with reason retry), and fire-and-forget ops it took. */
  retries: number;
  firedAndForgotten: number;
  /** Workers that closed (retired, or closed when their retirement timed out). */
  workersClosed: number;
  /**
   * Workers the scheduler lost while they lived on (lose-worker, also the one just before a kill
   * that stands for a death told at once), and registrations of them again.
   */
  workersLost: number;
  reregistrations: number;
  /** Scatters of data again by clients (update-data after the start), shared or stored. */
  scatters: number;
  /** Clean scheduler stops (scheduler-close), each followed by a new run. */
  schedulerStops: number;
}

export class DstChecker {
  readonly violations: Violation[] = [];
  /** How many violations each invariant had (messages are capped). */
  readonly counts = new Map<InvariantId, number>();
  /** Transitions seen, as "machine: from -EVENT-> to", with how often. */
  readonly coverage = new Map<string, number>();
  readonly stats: CheckStats = {
    steps: 0,
    transitions: 0,
    executions: 0,
    reexecutions: 0,
    deaths: 0,
    envelopes: 0,
    lateEnvelopes: 0,
    duplicatedEnvelopes: 0,
    stealRequests: 0,
    stealsConfirmed: 0,
    stealsRejected: 0,
    staleDropped: 0,
    restartsChecked: 0,
    graphs: 0,
    releases: 0,
    failuresFreed: 0,
    retries: 0,
    firedAndForgotten: 0,
    workersClosed: 0,
    workersLost: 0,
    reregistrations: 0,
    scatters: 0,
    schedulerStops: 0,
  };
  readonly observer: SimObserver;
  private readonly reference: Map<string, string>;
  private readonly deps: Map<string, string[]>;
  private readonly dataKeys: Set<string>;
  private readonly latency: number;
  private cursor = 0;
  private log: readonly LogRecord[] = [];
  private lastView: SimView | null = null;
  /** Current incarnation per worker actor ("worker.<name>"). */
  private readonly tracks = new Map<string, WorkerTrack>();
  private readonly executionStarts = new Map<string, number[]>();
  /** Fresh assignments (ASSIGN) per key: each may run once; a steal moves one, it adds none. */
  private readonly assignments = new Map<string, number>();
  private readonly deaths: number[] = [];
  /** The scheduler's latest word to a worker about a key, as sent. */
  private readonly instructions = new Map<string, Instruction>();
  private restartPending: boolean;

  constructor(
    readonly dstCase: DstCase,
    private readonly maxSteps = DEFAULT_MAX_STEPS,
  ) {
    const { scenario } = dstCase;
    this.reference = referenceValues(scenario);
    this.deps = new Map(scenario.tasks.map((t) => [t.key, taskDeps(t)] as const));
    this.dataKeys = new Set((scenario.data ?? []).map((d) => d.key));
    this.latency = scenario.network?.latency ?? DEFAULT_LATENCY;
    this.restartPending = dstCase.restartAt !== undefined;
    this.observer = {
      turn: (view, log) => this.turn(view, log),
      mail: (from, to, ops, sentAt, arrivals) => this.mail(from, to, ops, sentAt, arrivals),
    };
  }

  get ok(): boolean {
    return this.violations.length === 0;
  }

  violation(invariant: InvariantId, at: number, message: string): void {
    const count = (this.counts.get(invariant) ?? 0) + 1;
    this.counts.set(invariant, count);
    if (count <= MAX_MESSAGES_PER_INVARIANT) this.violations.push({ invariant, at, message });
  }

  // ---- per step ------------------------------------------------------------------------

  turn(view: SimView, log: readonly LogRecord[]): void {
    this.stats.steps += 1;
    if (this.stats.steps > this.maxSteps) throw new RunawayRun(this.maxSteps, view.now);
    this.lastView = view;
    this.log = log;
    this.followLog();
    this.checkScheduler(view);
    this.checkWorkers(view);
    this.checkExclusive(view);
    if (this.restartPending && view.now >= this.dstCase.restartAt!) {
      this.restartPending = false;
      this.checkRestart(view);
    }
  }

  mail(from: string, to: string, ops: readonly unknown[], sentAt: number, arrivals: readonly number[]): void {
    this.stats.envelopes += 1;
    if (arrivals.length > 1) this.stats.duplicatedEnvelopes += 1;
    if (arrivals.some((a) => a > sentAt + this.latency + 1e-12)) this.stats.lateEnvelopes += 1;
    if (from !== "scheduler" || !to.startsWith("worker.")) return;
    const worker = to.slice("worker.".length);
    for (const raw of ops) {
      const op = raw as { op: string; key?: string; keys?: string[] };
      if (op.op === "compute-task") this.instructions.set(`${worker}\u0000${op.key}`, "compute");
      else if (op.op === "steal-request") this.instructions.set(`${worker}\u0000${op.key}`, "steal");
      else if (op.op === "free-keys") for (const key of op.keys ?? []) this.instructions.set(`${worker}\u0000${key}`, "free");
    }
  }

  private followLog(): void {
    const log = this.log;
    for (; this.cursor < log.length; this.cursor++) this.record(log[this.cursor]!);
  }

  private record(r: LogRecord): void {
    switch (r.kind) {
      case "start":
        if (r.role === "worker") {
          const { name, id } = readWorkerStart(r.init);
          this.tracks.set(r.actor, new WorkerTrack(name, id));
        }
        return;
      case "stop": {
        const track = this.tracks.get(r.actor);
        if (track === undefined) return;
        track.alive = false;
        // A worker that closed (retired) ran nothing the scheduler did not place afresh.
        if (r.reason !== "killed") {
          this.stats.workersClosed += 1;
          return;
        }
        this.deaths.push(r.t);
        this.stats.deaths += 1;
        return;
      }
      case "input": {
        const track = this.tracks.get(r.actor);
        if (track !== undefined) this.workerInput(track, r.event, r.t);
        else if (r.actor === "scheduler") this.schedulerInput(r.event);
        return;
      }
      case "transition": {
        this.stats.transitions += 1;
        const edge = `${r.machine}: ${r.from} -${r.event}-> ${r.to}`;
        this.coverage.set(edge, (this.coverage.get(edge) ?? 0) + 1);
        const table = MACHINE_TABLES[r.machine];
        if (table === undefined || table.next(r.from, r.event) !== r.to) {
          this.violation("legal-transition", r.t, `${r.actor}: ${r.id}: ${edge} is not an edge of the ${r.machine} machine`);
        }
        const track = this.tracks.get(r.actor);
        if (track !== undefined && r.machine === "wtask") this.workerTransition(track, r.id, r.event, r.from, r.to, r.t);
        if (r.machine === "wtask" && r.event === "STALE") this.stats.staleDropped += 1;
        if (r.machine === "wtask" && r.event === "FREE" && r.from === "error") this.stats.failuresFreed += 1;
        if (r.actor === "scheduler" && r.machine === "task") {
          if (r.event === "ASSIGN") this.assignments.set(r.id, (this.assignments.get(r.id) ?? 0) + 1);
          if (r.event === "STEAL") this.stats.stealRequests += 1;
          else if (r.event === "STEAL_CONFIRM") this.stats.stealsConfirmed += 1;
          else if (r.event === "STEAL_REJECT") this.stats.stealsRejected += 1;
          else if (r.event === "RELEASE" && (r.why as { rule?: unknown } | undefined)?.rule === "retry") this.stats.retries += 1;
        }
        return;
      }
    }
  }

  private schedulerInput(event: { op: string; [k: string]: unknown }): void {
    switch (event.op) {
      case "update-graph":
        this.stats.graphs += 1;
        return;
      case "release-keys":
      case "cancel-keys":
      case "client-leave":
        this.stats.releases += 1;
        return;
      case "fire-and-forget":
        this.stats.firedAndForgotten += 1;
        return;
      case "update-data":
        if (event.t !== 0) this.stats.scatters += 1;
        return;
      case "register-worker":
        if (event.holding !== undefined) this.stats.reregistrations += 1;
        return;
      case "scheduler-close":
        // The stopped scheduler's word is void: a new run knows nothing of it, nor of what the
        // workers are still running for it.
        this.instructions.clear();
        for (const track of this.tracks.values()) for (const key of track.running) track.orphaned.add(key);
        this.stats.schedulerStops += 1;
        return;
      case "worker-lost":
      case "unregister-worker": {
        // The scheduler is done with that incarnation: what it told it is no longer its word
        // (a worker it lost while alive may go on running what it had).
        const prefix = `${String(event.name)}\u0000`;
        for (const key of this.instructions.keys()) if (key.startsWith(prefix)) this.instructions.delete(key);
        const track = this.tracks.get(`worker.${String(event.name)}`);
        if (track !== undefined) for (const key of track.running) track.orphaned.add(key);
        if (event.op === "worker-lost" && this.tracks.get(`worker.${String(event.name)}`)?.alive === true) this.stats.workersLost += 1;
        return;
      }
    }
  }

  private workerInput(track: WorkerTrack, event: { op: string; [k: string]: unknown }, t: number): void {
    track.arriving.clear();
    switch (event.op) {
      case "execute-done":
      case "execute-failed": {
        const key = String(event.key);
        if (!track.running.delete(key)) this.violation("inputs-present", t, `${track.name}: ${event.op} for ${key}, which it was not executing`);
        track.orphaned.delete(key);
        const value = track.computing.get(key);
        track.computing.delete(key);
        if (event.op === "execute-done" && value !== undefined) track.arriving.set(key, value);
        return;
      }
      case "gather-done": {
        const from = String(event.from);
        const peer = this.tracks.get(`worker.${from}`);
        for (const { key } of event.received as { key: string }[]) {
          const value = peer?.lastValue.get(key);
          if (value === undefined) this.violation("inputs-present", t, `${track.name} received ${key} from ${from}, which never held it`);
          else track.arriving.set(key, value);
        }
        return;
      }
      case "put-data":
        for (const { key } of event.keys as { key: string }[]) {
          if (this.dataKeys.has(key)) track.arriving.set(key, dataValue(key));
          else this.violation("inputs-present", t, `${track.name} was given ${key}, which is not scattered data`);
        }
        return;
    }
  }

  private workerTransition(track: WorkerTrack, key: string, event: string, from: string, to: string, t: number): void {
    if (event === "EXECUTE") this.executionStarted(track, key, t);
    if (from === "memory" && to !== "memory") track.store.delete(key);
    if (to !== "memory" || from === "memory") return;
    const value = track.arriving.get(key);
    if (value === undefined) {
      this.violation("inputs-present", t, `${track.name}: ${key} went to memory (${event} from ${from}) with no result, transfer or scatter delivering it`);
      return;
    }
    track.store.set(key, value);
    track.lastValue.set(key, value);
    const expected = this.reference.get(key);
    if (expected === undefined) this.violation("reference-result", t, `${track.name} holds a value for ${key}, which must fail`);
    else if (value !== expected) this.violation("reference-result", t, `${track.name} holds ${key} = ${value}, the reference is ${expected}`);
  }

  private executionStarted(track: WorkerTrack, key: string, t: number): void {
    this.stats.executions += 1;
    const inputs: string[] = [];
    for (const dep of this.deps.get(key) ?? []) {
      const value = track.store.get(dep);
      if (value === undefined) this.violation("inputs-present", t, `${track.name} started ${key} without its input ${dep} in memory`);
      else if (value !== this.reference.get(dep)) this.violation("reference-result", t, `${track.name} started ${key} with a wrong ${dep}`);
      inputs.push(value ?? "missing");
    }
    track.computing.set(key, taskValue(key, inputs));
    track.running.add(key);
    let starts = this.executionStarts.get(key);
    if (starts === undefined) this.executionStarts.set(key, (starts = []));
    starts.push(t);
    if (starts.length > 1) this.stats.reexecutions += 1;
    // A client may release a key and ask for it again: the scheduler then assigns it afresh,
    // and it runs again. A run beyond the fresh assignments needs a worker's death.
    const assigned = this.assignments.get(key) ?? 0;
    if (starts.length > Math.max(assigned, 1) && !this.deaths.some((d) => d <= t)) {
      this.violation(
        "at-most-once",
        t,
        `${key} started a ${ordinal(starts.length)} time (on ${track.name}, earlier at ${starts.slice(0, -1).join(", ")}), assigned ${assigned} time${assigned === 1 ? "" : "s"}, and no worker has died`,
      );
    }
  }

  /** A worker runs a task on the scheduler's standing orders only while the scheduler has it processing there. */
  private checkExclusive(view: SimView): void {
    const tasks = view.scheduler.tasks;
    for (const [name, core] of view.workers) {
      const track = this.tracks.get(`worker.${name}`);
      if (track === undefined) continue;
      for (const key of track.running) {
        if (track.orphaned.has(key)) continue;
        const state = core.tasks.get(key)?.state;
        if (state !== "executing" && state !== "resumed") continue;
        const order = this.instructions.get(`${name}\u0000${key}`);
        if (order !== "compute" && order !== "steal") continue;
        const on = tasks.get(key)?.processingOn;
        if (on !== undefined && on !== null && on.name === name && on.id === core.init.id) continue;
        const where = on === undefined || on === null ? `is ${tasks.get(key)?.state ?? "forgotten"} on the scheduler` : `is processing on ${on.name}`;
        this.violation("exclusive-execution", view.now, `${name} runs ${key} on the scheduler's last word (${order}), but ${key} ${where}`);
      }
    }
  }

  private checkScheduler(view: SimView): void {
    checkSchedulerBookkeeping(view.scheduler, (invariant, message) => this.violation(invariant, view.now, message));
  }

  private checkWorkers(view: SimView): void {
    for (const [name, core] of view.workers) {
      const track = this.tracks.get(`worker.${name}`);
      if (core.executing > core.init.nthreads) this.violation("worker-bookkeeping", view.now, `${name} executes ${core.executing} tasks on ${core.init.nthreads} threads`);
      if (track !== undefined && track.running.size !== core.executing) {
        this.violation("worker-bookkeeping", view.now, `${name} counts ${core.executing} executions, its log shows ${track.running.size}`);
      }
    }
  }

  /** A scheduler rebuilt from the log's scheduler inputs so far must equal the live one. */
  private checkRestart(view: SimView): void {
    this.stats.restartsChecked += 1;
    let rebuilt: SchedulerCore | null = null;
    for (const r of this.log) {
      if (r.actor !== "scheduler") continue;
      if (r.kind === "start") {
        rebuilt = new SchedulerCore(readSchedulerStart(r.init).config, {
          toWorker: () => undefined,
          toClient: () => undefined,
          transition: () => undefined,
        });
      } else if (r.kind === "input" && rebuilt !== null) {
        rebuilt.handle(r.event as unknown as SchedulerInput);
      }
    }
    if (rebuilt === null) {
      this.violation("restart", view.now, "no scheduler start record to rebuild from");
      return;
    }
    const difference = firstDifference(schedulerFingerprint(view.scheduler), schedulerFingerprint(rebuilt), "scheduler");
    if (difference !== null) this.violation("restart", view.now, `the scheduler rebuilt from its inputs differs from the live one at ${difference}`);
  }

  // ---- after the run -------------------------------------------------------------------

  finish(result: SimResult): void {
    const view = this.lastView;
    if (view === null) {
      this.violation("crash", -1, "the run made no step");
      return;
    }
    this.followLog();
    this.checkQuiescence(view);
    this.checkEnd(view, result);
    this.checkFutures(view, result);
    this.checkHoldings(view);
    this.checkLeaks(view);
  }

  private checkQuiescence(view: SimView): void {
    const core = view.scheduler;
    const bad = (message: string): void => this.violation("quiescence", -1, message);
    for (const ts of core.tasks.values()) {
      const on = ts.processingOn;
      if (on === null) continue;
      const wc = view.workers.get(on.name);
      const record = wc === undefined || wc.init.id !== on.id ? "is gone" : `holds it ${wc.tasks.get(ts.key)?.state ?? "not at all"}`;
      bad(`${ts.key} is still ${ts.state} on ${on.name}, which ${record}: a slot held by a task that will never report`);
    }
    if (core.stealing !== null && core.stealing.inFlight.size > 0) bad(`${core.stealing.inFlight.size} steal requests still in flight`);
    if (core.stealing !== null && core.stealing.inFlightOccupancy.size > 0) this.violation("occupancy", -1, "in-flight steal occupancy left over");
    for (const ws of core.running) {
      if (ws.occupancy !== 0 || ws.needsWhat.size > 0) this.violation("occupancy", -1, `${ws.name} ends with occupancy ${ws.occupancy} and ${ws.needsWhat.size} transfers booked`);
    }
    if (core.totalOccupancy !== 0) this.violation("occupancy", -1, `total occupancy ends at ${core.totalOccupancy}`);
    for (const [name, wc] of view.workers) {
      if (wc.executing !== 0) bad(`${name} still counts ${wc.executing} executions`);
      for (const ts of wc.tasks.values()) {
        if (!QUIET_WORKER_STATES.has(ts.state)) bad(`${name} still has ${ts.key} ${ts.state}`);
      }
    }
  }

  /** What workers hold is what the scheduler thinks they hold, and equals the reference. */
  private checkHoldings(view: SimView): void {
    const core = view.scheduler;
    for (const [name, wc] of view.workers) {
      for (const ts of wc.tasks.values()) {
        if (ts.state !== "memory") continue;
        const sts = core.tasks.get(ts.key);
        if (sts === undefined || ![...sts.whoHas].some((ws) => ws.name === name && ws.id === wc.init.id)) {
          this.violation("quiescence", -1, `${name} holds ${ts.key}, which the scheduler does not know it holds (${sts?.state ?? "forgotten"})`);
        }
      }
    }
    for (const ts of core.tasks.values()) {
      for (const ws of ts.whoHas) {
        const wc = view.workers.get(ws.name);
        if (wc === undefined || wc.init.id !== ws.id || wc.tasks.get(ts.key)?.state !== "memory") {
          this.violation("quiescence", -1, `the scheduler thinks ${ws.name} holds ${ts.key}, which it does not`);
          continue;
        }
        const value = this.tracks.get(`worker.${ws.name}`)?.store.get(ts.key);
        if (value !== this.reference.get(ts.key)) this.violation("reference-result", -1, `${ts.key} on ${ws.name} ends as ${value ?? "nothing"}, the reference is ${this.reference.get(ts.key)}`);
      }
    }
  }

  /** Every future a client still holds was settled, as the key's fate says (a key that can never finish excepted). */
  private checkFutures(view: SimView, result: SimResult): void {
    const expected = expectedEnd(this.dstCase.scenario);
    if (expected === null) return;
    const wanted = wantedAtEnd(this.dstCase.scenario);
    for (const [client, futures] of Object.entries(result.futures)) {
      for (const [key, future] of Object.entries(futures)) {
        const allowed = expected.get(key);
        if (allowed === undefined) continue;
        // Cancelled by its client, which has not asked for it again since.
        if (future.state === "cancelled" && wanted.get(key)?.has(client) !== true) continue;
        const mustFail = !allowed.has("memory");
        const wait = `wanted at ${future.wantedAt}`;
        if (future.state === "pending") {
          this.violation("futures", -1, `${client}'s future for ${key} (${wait}) never settled: the scheduler has it ${view.scheduler.taskState(key) ?? "forgotten"}`);
        } else if (future.state !== (mustFail ? "erred" : "memory") && future.error !== "KilledWorker") {
          this.violation("futures", -1, `${client}'s future for ${key} (${wait}) settled ${future.state}${future.error ? ` (${future.error})` : ""}; expected ${mustFail ? "erred" : "memory"}`);
        }
      }
    }
    // And the other way round: every key a client still wants has its future.
    for (const [key, clients] of wanted) {
      for (const client of clients) {
        if (result.futures[client]?.[key] === undefined) this.violation("futures", -1, `${client} wants ${key} at the end, but holds no future for it`);
      }
    }
  }

  /**
   * Once the cluster is idle, everything held is held for a key someone wants: the
   * scheduler keeps a task only for a client or for a task that depends on it (and its data
   * only for a client or a task still to run); a worker keeps a failure only while the
   * scheduler has the key erred there (it frees it when it releases the key), a released
   * record only for a task of its own that depends on it, and a stored result only for a
   * key its core holds in memory (checkHoldings: a replica the scheduler knows).
   */
  private checkLeaks(view: SimView): void {
    const core = view.scheduler;
    const leak = (message: string): void => this.violation("no-leak", -1, message);
    for (const ts of core.tasks.values()) {
      const wanted = ts.whoWants !== null && ts.whoWants.size > 0;
      if (!wanted && ts.dependents.size === 0) {
        leak(`the scheduler still holds ${ts.key} (${ts.state}), which no client wants and no task depends on`);
      } else if ((ts.state === "memory" || STILL_TO_RUN.has(ts.state)) && !wanted && ![...(ts.waiters ?? [])].some((w) => STILL_TO_RUN.has(w.state))) {
        leak(`the scheduler keeps ${ts.key} ${ts.state}, which no client wants and no task still to run needs`);
      }
    }
    for (const [name, wc] of view.workers) {
      for (const ts of wc.tasks.values()) {
        if (ts.state === "error") {
          const sts = core.tasks.get(ts.key);
          const on = sts?.erredOn;
          if (sts?.state !== "erred" || on === null || on === undefined || on.name !== name || on.id !== wc.init.id) {
            leak(`${name} keeps the failure of ${ts.key}, which the scheduler will never free (${sts?.state ?? "forgotten"} there${on ? `, erred on ${on.name}` : ""})`);
          }
        } else if (ts.state === "released" && ts.dependents.size === 0) {
          leak(`${name} keeps a record of ${ts.key} (released) that no task there depends on`);
        }
      }
      for (const key of view.stores.get(name) ?? []) {
        const state = wc.tasks.get(key)?.state;
        if (state !== "memory") leak(`${name}'s data store still holds ${key}, which its core ${state === undefined ? "no longer knows" : `has ${state}`}`);
      }
    }
  }

  private checkEnd(view: SimView, result: SimResult): void {
    const expected = expectedEnd(this.dstCase.scenario);
    if (expected === null) return;
    for (const [key, allowed] of expected) {
      const state = result.tasks[key]?.state ?? "forgotten";
      if (allowed.has(state)) continue;
      if (state === "erred" && killedWorkerBlame(view, key)) continue;
      this.violation("liveness", -1, `${key} ends ${state}; expected ${[...allowed].join(" or ")}`);
    }
  }
}

const QUIET_WORKER_STATES = new Set(["memory", "released", "error"]);
/** Scheduler states of a task that is still to run (to be placed, or placed). */
const STILL_TO_RUN = new Set<string>(["waiting", "queued", "no-worker", "processing.assigned", "processing.stealing"]);

function killedWorkerBlame(view: SimView, key: string): boolean {
  const ts = view.scheduler.tasks.get(key);
  return (ts?.exceptionBlame ?? ts)?.exception?.name === "KilledWorker";
}

function ordinal(n: number): string {
  return n === 2 ? "second" : n === 3 ? "third" : `${n}th`;
}

/** The first path where two JSON-like values differ, or null. */
export function firstDifference(a: unknown, b: unknown, path: string): string | null {
  if (Object.is(a, b)) return null;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    return `${path} (${JSON.stringify(a)} vs ${JSON.stringify(b)})`;
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
    if (d !== null) return d;
  }
  return null;
}
