/**
 * What a simulation takes and gives back. docs/simulator.md describes the model and
 * docs/scenario.schema.json the scenario format.
 */
import type { Config } from "../machines/config.js";
import type { SchedulerCore } from "../machines/scheduler/core.js";
import type { WorkerCore } from "../machines/worker/core.js";
import type { TaskStateName } from "../machines/tables.js";
import type { LogRecord, LogSink } from "../log/types.js";
import type { NetworkFaultSpec } from "./faults.js";
import type { HostCostSpec } from "./host-costs.js";
import type { MailTap } from "./kernel.js";

export interface SimWorkerSpec {
  name: string;
  /** Default 1. */
  nthreads?: number;
  /** Default "localhost". */
  host?: string;
  resources?: Record<string, number>;
  /** When the scheduler registers it (virtual seconds); default 0. */
  joinAt?: number;
  /**
   * Seconds each message to it waits in its host, on top of the network's latency and
   * hostCosts.workerDelay (a busy or distant worker: its round trip is longer); default 0.
   */
  delay?: number;
  /**
   * false: it measures no round trips, as an in-process worker running its tasks on the
   * scheduler's thread does (what-if gives a recorded one this); adaptive saturation then
   * gives it Dask's count. Default: it measures them, as a worker across a network does.
   */
  roundTrips?: false;
  /**
   * Seconds it holds the report of a short finished task nobody waits on while it has tasks
   * queued, as a worker on NATS does (config reportHold; what-if gives a recorded one its own).
   * Default 0: every report goes at once, as an in-process worker's.
   */
  reportHold?: number;
}

/** Data already on workers at t=0, as if scattered by the client. */
export interface SimDataSpec {
  key: string;
  nbytes: number;
  on: string[];
}

export interface SimTaskSpec {
  key: string;
  deps?: string[];
  /** Actual run time in seconds. The scheduler never sees it: it estimates. */
  duration: number;
  /**
   * Seconds of its first runs, in the order they start (over the whole simulation, whichever
   * worker runs them); later runs take `duration`. What-if gives the runs a recorded log
   * measured, so that a run the recording did not make (a recomputation) takes a typical time.
   */
  runs?: number[];
  /** Actual output size in bytes; default DEFAULT_TASK_NBYTES. */
  nbytes?: number;
  /** User priority: higher runs first. */
  priority?: number;
  workers?: string[];
  hosts?: string[];
  resources?: Record<string, number>;
  allowOtherWorkers?: boolean;
  /**
   * When the scheduler receives the graph; tasks with the same submitAt and client form one
   * graph. Default 0.
   */
  submitAt?: number;
  /** The client that submits it and holds futures for its graph's outputs; default SIM_CLIENT. */
  client?: string;
  /** Make the task fail with this message once its duration has elapsed. */
  error?: string;
  /**
   * With `error`: the task fails on its first `failures` runs that end (over the whole
   * simulation, whichever worker runs them), then succeeds. Default: every run fails.
   */
  failures?: number;
  /** Times the scheduler runs it again when it fails (TaskSpec.retries, Dask's retries). */
  retries?: number;
  /**
   * Whether its client holds a future for it. Default: if no task of its graph depends on it,
   * or a later graph builds on it.
   */
  wanted?: boolean;
}

export type SimAction =
  /**
   * One work-stealing pass now (Dask's `steal.balance()`), on top of the periodic and
   * on-demand passes the simulated scheduler makes; it does nothing with workStealing false.
   */
  | { at: number; do: "balance" }
  /** The worker vanishes without a word; the scheduler is told it is lost at once. */
  | { at: number; do: "kill-worker"; worker: string }
  /** A new worker joins (a killed worker's name may be reused: it is a new incarnation). */
  | { at: number; do: "add-worker"; worker: Omit<SimWorkerSpec, "joinAt"> }
  /**
   * The scheduler process dies and a new one takes over at once, its state rebuilt from
   * the scheduler's log so far (as `natsched scheduler --log jetstream` resumes): every
   * recorded input re-run, every recorded transition checked. Needs the log kept in memory.
   */
  | { at: number; do: "restart-scheduler" }
  /**
   * A client submits these tasks (again, or for the first time as this client): one
   * update-graph with their specs and those of every task they depend on, wanting `keys`.
   * The scheduler takes only the specs it does not know, so a key released and forgotten
   * since is computed again, and a key another client holds is shared.
   */
  | { at: number; do: "submit"; client?: string; keys: string[] }
  /** A client releases its futures for these keys (release-keys). */
  | { at: number; do: "release"; client?: string; keys: string[] }
  /**
   * A client cancels these keys (Client.cancel): its futures of them, and of the tasks of the
   * scenario depending on them that it holds, settle `cancelled`, and one cancel-keys names
   * them all (docs/protocol.md, "Cancel"). Submitted again later, they wait again.
   */
  | { at: number; do: "cancel"; client?: string; keys: string[] }
  /**
   * A client fires and forgets these keys (Client.fireAndForget, the fire-and-forget op): the
   * scheduler runs them to completion even after every client let go of them.
   */
  | { at: number; do: "fire-and-forget"; client?: string; keys: string[] }
  /** A client leaves (client-leave): everything only it wanted is released. */
  | { at: number; do: "client-leave"; client?: string }
  /**
   * The worker leaves gracefully, as LocalCluster.removeWorker and a worker process on SIGTERM
   * do: it asks the scheduler to retire it (retire-worker), which places its tasks elsewhere,
   * copies what only it holds to other workers and then says close-worker; the worker then
   * closes (unregister-worker). After `timeout` seconds without close-worker it closes anyway
   * (default: it waits as long as it takes). Its name is not used again in the scenario.
   */
  | { at: number; do: "retire-worker"; worker: string; timeout?: number }
  /**
   * The scheduler loses a worker that is still alive (it heard no heartbeat within workerTtl:
   * a stalled process, a connection down): it removes it (worker-lost) as it would a dead one,
   * and refuses what the worker sends meanwhile; the worker carries on, and `back` seconds
   * later it registers again with what it holds (as it does when the scheduler answers its
   * heartbeat with worker-missing, or its reconnect with known: false).
   */
  | { at: number; do: "lose-worker"; worker: string; back: number }
  /**
   * A client scatters data of the scenario (`data` keys: the same values again), as
   * Client.scatter does by content: a key the scheduler holds in memory is shared where it is,
   * the others are put on the first worker of `on` that is alive (and has no copy), then
   * registered with update-data. A refused scatter (the key exists in another state) leaves
   * the client without futures for it.
   */
  | { at: number; do: "scatter"; client?: string; keys: string[]; on: string[] }
  /**
   * The scheduler stops cleanly (a scheduler process on SIGTERM: SchedulerActor.close): it
   * records its close and its stop, and what is sent to it until it starts again is lost.
   * Nothing else may happen until start-scheduler.
   */
  | { at: number; do: "stop-scheduler" }
  /**
   * A scheduler starts after a clean stop: a new run, which knows nothing (a log that ends
   * with a stop is not resumed). It announces itself: each live worker registers again with
   * what it holds, and each client reconciles (Client.reconcile): it resubmits the keys it
   * holds futures for, and what they need, except those that need scattered data, which fail
   * (SchedulerRestartedError); erred and cancelled futures keep their outcome.
   */
  | { at: number; do: "start-scheduler" };

export interface NetworkSpec {
  /** Bytes per second between workers; default config.bandwidth. */
  bandwidth?: number;
  /** Seconds a message takes between any two actors; default DEFAULT_LATENCY. */
  latency?: number;
}

export interface Scenario {
  /** PRNG seed for every choice the host makes (worker incarnation ids); default 0. */
  seed?: number;
  config?: Partial<Config>;
  network?: NetworkSpec;
  /** Host costs besides the network (sim/host-costs.ts); none by default. */
  hostCosts?: HostCostSpec;
  workers: SimWorkerSpec[];
  data?: SimDataSpec[];
  tasks: SimTaskSpec[];
  actions?: SimAction[];
  /** Network faults on the mail between actors (sim/faults.ts); none by default. */
  faults?: NetworkFaultSpec;
}

export interface SimTaskResult {
  /** Worker of the last execution that ran to completion; "" if none did. */
  worker: string;
  /** Start and end of that execution; -1 if none ran to completion. */
  start: number;
  end: number;
  /** The scheduler's final state for the key ("forgotten" once released and dropped). */
  state: TaskStateName;
  /** Executions started, including those cut short by a worker's death. */
  executions: number;
}

export interface SimTransfer {
  key: string;
  from: string;
  to: string;
  nbytes: number;
  start: number;
  end: number;
}

/** How a steal request ended. */
export type SimStealOutcome =
  /** The victim had not started the task: it moved to the thief. */
  | "confirmed"
  /** The victim was running it or done: it stayed. */
  | "rejected"
  /**
   * The task left `processing.stealing` another way: it finished, erred or was released
   * (its worker left, it was no longer needed), or the victim no longer knew it or the
   * thief was gone by the confirm (rescheduled afresh). `abortedBy` names the event.
   */
  | "aborted"
  /** No answer by the end of the run (only when messages can be lost). */
  | "in-flight";

/** One steal request, from the scheduler's transitions. */
export interface SimSteal {
  key: string;
  victim: string;
  thief: string;
  /** The stealable level the task was taken from (0: no dependencies). */
  level: number;
  requestId: string;
  /** When the scheduler sent the request, and when it decided the outcome (-1: never). */
  requested: number;
  decided: number;
  outcome: SimStealOutcome;
  /** For an aborted request: the task machine event that took it out of processing.stealing. */
  abortedBy?: string;
}

/** A future a client holds at the end of the run: what the scheduler told the client of its key. */
export interface SimFuture {
  /** `pending`: the client never heard that the key is in memory or erred. */
  state: "pending" | "memory" | "erred" | "cancelled";
  /** When the client last asked for the key (submitted it while not holding it). */
  wantedAt: number;
  /** When the report that settled it arrived; -1 while pending. */
  settledAt: number;
  /** For `erred`: the error's name (e.g. SimulatedError, KilledWorker). */
  error?: string;
}

export interface SimResult {
  /** End of the last execution that ran to completion (0 if none did). */
  makespan: number;
  tasks: Record<string, SimTaskResult>;
  /** Per client, the futures it still holds at the end, by key (released ones are gone). */
  futures: Record<string, Record<string, SimFuture>>;
  transfers: SimTransfer[];
  /** Every steal request, in the order the scheduler made them. */
  steals: SimSteal[];
  /**
   * Ops the scheduler's host refused (actors/host/op-roles.ts): here, the late reports of a killed,
   * closed or lost worker's incarnation, which the core never sees (a real host answers them
   * FORBIDDEN).
   */
  refused: number;
  /** The event log, as the runtime writes it, on the virtual clock. */
  log: LogRecord[];
}

/** What a probe sees: the live cores, to read (changing them would void the run). */
export interface SimView {
  readonly now: number;
  readonly scheduler: SchedulerCore;
  /** Live workers' cores, by name. */
  readonly workers: ReadonlyMap<string, WorkerCore>;
  /** The keys each live worker's data store holds (freed when its core frees them), by name. */
  readonly stores: ReadonlyMap<string, ReadonlySet<string>>;
}

/** Options that are code, not scenario data. */
export interface SimOptions {
  /**
   * Callbacks run at virtual times, after the scenario's own events at that time: for
   * tests and what-if tools that need to look at the scheduler's state mid-run.
   */
  probes?: { at: number; probe: (view: SimView) => void }[];
  /** Verification hooks (verify/): see every step and every envelope of the run. */
  observer?: SimObserver;
  /**
   * Where the run's records go. By default they are kept in memory and returned as
   * `result.log`; a LogSink (a FileLogSink streams them to a replayable file) or `false`
   * (not kept at all) leaves `result.log` empty, for runs too large to hold their log in
   * memory (a million tasks make 14 million records).
   */
  log?: LogSink | false;
}

export interface SimObserver {
  /** After every event of the run, with the log written so far (read-only, like the view). */
  turn?(view: SimView, log: readonly LogRecord[]): void;
  /** Every envelope sent between actors, with when each copy will arrive. */
  mail?: MailTap;
}

/** Output size of a task that does not give one. */
export const DEFAULT_TASK_NBYTES = 1024;
/** One-way message latency when the scenario does not give one (seconds). */
export const DEFAULT_LATENCY = 0.001;
/** The client scattered data comes from, and graphs whose tasks name no other. */
export const SIM_CLIENT = "sim-client";
/** The function name simulated tasks carry (the simulator does not run functions). */
export const SIM_FUNCTION = "simulated";
