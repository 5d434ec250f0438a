/**
 * The messages actors exchange, and the stimuli their cores take. The same shapes travel
 * on every transport (in-process, NATS, simulated); docs/protocol.md documents them.
 *
 * A wire message is an Envelope: one sender, a batch of ops, in order. Each op a core
 * receives becomes one stimulus, stamped by the host with the time `t` it was seen.
 */
export const PROTOCOL_VERSION = 1;

/**
 * Any op may name the stimulus that made its sender send it: `cause`, the seq of the
 * sender's input record in its log; the sender is the op's (the scheduler for ops to workers
 * and clients, the worker or client an op to the scheduler names). docs/protocol.md, "Causes".
 * Optional (a sender keeping no log, or written in another language, leaves it out); cores
 * ignore it, hosts record it with the input.
 */
export interface Caused {
  cause?: number;
}

export interface Envelope<Op> {
  v: typeof PROTOCOL_VERSION;
  from: string;
  ops: Op[];
}

/** A reference to another task's result inside encoded arguments. */
export interface KeyRef {
  $key: string;
}

export interface Restrictions {
  /** Worker names the task may run on. */
  workers?: string[];
  /** Host names the task may run on. */
  hosts?: string[];
  /** Abstract resources a worker must supply, e.g. { GPU: 1 }. */
  resources?: Record<string, number>;
  /** Restrictions are a preference: run elsewhere if no such worker exists. */
  allowOtherWorkers?: boolean;
}

export interface TaskSpec extends Restrictions {
  key: string;
  /** Name of a function registered on the workers. */
  func: string;
  /** Encoded arguments: JSON values, KeyRef for results of other tasks. */
  args: unknown[];
  /** Keys this task depends on (every KeyRef in args, and any extra ordering dependency). */
  deps: string[];
  /** User priority: higher runs first. */
  priority?: number;
  /**
   * Times the task is run again when its function fails (Dask's `retries`): a whole number,
   * 0 by default. A worker dying under it counts against allowedFailures instead.
   */
  retries?: number;
}

/**
 * The code of a task-erred whose executor thread died under the task (out of memory, exit):
 * the scheduler counts it like a worker death for that task, not as the task's own error
 * (docs/protocol.md, "Lost executor threads"). Only the worker host sets it.
 */
export const EXECUTOR_LOST = "EXECUTOR_LOST";

export interface ErrorInfo {
  name: string;
  message: string;
  code?: string;
  /** Where it was raised: the stack as the worker saw it, bounded (machines/error-stack.ts); absent when unknown. */
  stack?: string;
}

// ---- client -> scheduler -------------------------------------------------------------

export interface UpdateGraphOp {
  op: "update-graph";
  client: string;
  tasks: TaskSpec[];
  /** Keys the client holds futures for. */
  wants: string[];
}

export interface ReleaseKeysOp {
  op: "release-keys";
  client: string;
  keys: string[];
}

/**
 * The client cancels these keys (Dask's Client.cancel without force): the scheduler drops
 * this client's wants of exactly the keys named, as release-keys does, and records each task
 * it releases for it as cancelled. The client names every key it cancels, the futures of its
 * dependents included (the client core finds them in the specs it kept); it has failed those
 * futures itself, so the scheduler sends it nothing. Another client's wants are untouched: a
 * task another client still needs (or a task of another client needs) goes on.
 */
export interface CancelKeysOp {
  op: "cancel-keys";
  client: string;
  keys: string[];
}

/**
 * Data the client placed on workers itself (scatter). Scatter never overwrites: the
 * scheduler creates new keys, lets the client share a key it has in memory on every worker
 * named, and refuses the whole op (KEY_EXISTS) otherwise (docs/protocol.md).
 */
export interface UpdateDataOp {
  op: "update-data";
  client: string;
  data: {
    key: string;
    nbytes: number;
    workers: string[];
    /**
     * The workers named answered put-data with KEY_EXISTS for this key: the client stored
     * nothing and asks to share the key they hold. Never creates a key.
     */
    existing?: boolean;
  }[];
}

/**
 * Run these keys to completion even when no client wants them (Dask's fire_and_forget): the
 * scheduler wants each key that is not done yet on behalf of nobody (FIRE_AND_FORGET), and
 * drops that want once the key is in memory or erred, so a done key is forgotten like any
 * other unwanted key. Keys it does not have, or has done already, are left alone: the client
 * sends this before any release of the keys it names.
 */
export interface FireAndForgetOp {
  op: "fire-and-forget";
  client: string;
  keys: string[];
}

/** The name under which the scheduler wants fire-and-forget keys (Dask's pseudo-client "fire-and-forget"). */
export const FIRE_AND_FORGET = "fire-and-forget";

export interface ClientJoinOp {
  op: "client-join";
  client: string;
}

export interface ClientLeaveOp {
  op: "client-leave";
  client: string;
  /** Why, when the scheduler's host released a client it stopped hearing from. */
  reason?: string;
}

/**
 * "Still here", sent by a client every heartbeatInterval. The scheduler's host uses it to
 * decide when a silent client is released (clientReleaseGrace); the core never sees it.
 */
export interface ClientHeartbeatOp {
  op: "heartbeat-client";
  client: string;
}

export type ClientToScheduler = UpdateGraphOp | ReleaseKeysOp | CancelKeysOp | FireAndForgetOp | UpdateDataOp | ClientJoinOp | ClientLeaveOp;

// ---- worker -> scheduler -------------------------------------------------------------

export interface WorkerInfo {
  name: string;
  /** This incarnation of the worker: a worker restarted under the same name gets a new id. */
  id: string;
  nthreads: number;
  host: string;
  resources: Record<string, number>;
  functions: string[];
  /**
   * When this incarnation started, on its host's clock (seconds). Of two incarnations of one
   * name the scheduler keeps the one started later: a registration of an earlier one
   * (delivered late, or from a process that should have stopped) is refused.
   */
  started?: number;
}

export interface RegisterWorkerOp extends WorkerInfo {
  op: "register-worker";
  /** Keys the worker already holds (a scheduler restart re-learns them). */
  holding?: { key: string; nbytes: number }[];
  /**
   * false: the worker measures no round trips (an in-process worker running its tasks on the
   * scheduler's thread, WorkerInit.roundTrips): the scheduler does not ask it to (no
   * compute-task `answers`), and adaptive saturation gives it Dask's count.
   */
  roundTrips?: false;
  /**
   * Seconds this worker may hold a report to send it with later ones (config reportHold, on a
   * wire): adaptive saturation gives it the tasks its threads run during the hold.
   */
  reportHold?: number;
}

export interface UnregisterWorkerOp {
  op: "unregister-worker";
  name: string;
  id: string;
  reason: string;
}

export interface TaskFinishedOp {
  op: "task-finished";
  worker: string;
  id: string;
  key: string;
  nbytes: number;
  /** When the function started and stopped, on the worker's clock (seconds). */
  start: number;
  stop: number;
  /** The assignment this result answers (the compute-task's number); absent if it had none. */
  attempt?: number;
  /** The scheduler run `attempt` belongs to; a report of another run is stale. */
  run?: number;
  /**
   * Seconds from one of this worker's earlier task-finished leaving it to the compute-task
   * that answered it (`answers`) arriving, on the worker's clock: the latest such round trip
   * not reported yet. Adaptive saturation keeps a smoothed one per worker.
   */
  roundTrip?: number;
  /**
   * Seconds the worker held this report after the task stopped, to send it with others
   * (config reportHold); the scheduler's `answers` counts from when it left (stop + held), so
   * the round trip the worker measures is the wire's and the scheduler's, not the hold.
   */
  held?: number;
}

export interface TaskErredOp {
  op: "task-erred";
  worker: string;
  id: string;
  key: string;
  error: ErrorInfo;
  /** The assignment this failure answers (the compute-task's number); absent if it had none. */
  attempt?: number;
  /** The scheduler run `attempt` belongs to; a report of another run is stale. */
  run?: number;
}

export interface StealResponseOp {
  op: "steal-response";
  worker: string;
  id: string;
  key: string;
  requestId: string;
  outcome: "confirm" | "reject";
  /** The worker-side state that decided it. */
  state: string;
}

/** The worker now holds replicas it fetched from peers. */
export interface AddKeysOp {
  op: "add-keys";
  worker: string;
  id: string;
  keys: { key: string; nbytes: number }[];
}

/** A peer did not have data the scheduler said it had. */
export interface MissingDataOp {
  op: "missing-data";
  worker: string;
  id: string;
  key: string;
  holder: string;
}

/**
 * Retire a worker gracefully (Dask's retire_workers): it takes no new work, what it
 * processes is placed elsewhere, keys only it holds are copied to other workers, then the
 * scheduler tells it to close (close-worker). Sent by a worker about itself (SIGTERM), or
 * fed by a host; without `id` it names the current incarnation.
 */
export interface RetireWorkerOp {
  op: "retire-worker";
  name: string;
  id?: string;
  reason?: string;
}

/**
 * What a worker measures for the scheduler's estimates, sent with its heartbeat while it
 * has something to report (Dask's heartbeat_worker metrics): how long each task it is
 * executing has run so far, and its transfer bandwidth estimate. A core input: the
 * scheduler's duration and bandwidth estimates follow from these, so they are logged.
 */
export interface WorkerMetricsOp {
  op: "worker-metrics";
  worker: string;
  id: string;
  /** [key, seconds it has been executing], for each task executing now. */
  executing: [string, number][];
  /** Bytes per second: the worker's running estimate from the transfers it received (Dask: over 1 MB each, 0.95/0.05 average). */
  bandwidth: number;
}

/** A worker's "still here", every heartbeatInterval; like heartbeat-client, for the host only. */
export interface WorkerHeartbeatOp {
  op: "heartbeat";
  name: string;
  id: string;
  /** The worker process's own measures (absent from workers before them): the scheduler's host logs some (HostMetricsOp). */
  host?: HostMetrics;
}

/** A worker process's memory and event-loop delay, as its host measures them for a heartbeat. */
export interface HostMetrics {
  /** Resident set size, bytes. */
  rss: number;
  /** V8 heap in use, bytes. */
  heapUsed: number;
  /** The event loop's delay since the previous heartbeat, milliseconds: 99th percentile and maximum. */
  loopP99: number;
  loopMax: number;
}

/** Ops the scheduler's host consumes itself to track who is alive; never core inputs. */
export type LivenessOp = ClientHeartbeatOp | WorkerHeartbeatOp;

/**
 * The scheduler's host to a worker whose heartbeat it heard but which it does not have (on
 * `natsched.<cluster>.announce.missing.<name>`, not an envelope): register again. Dask's
 * heartbeat_worker answers {"status": "missing"} the same way.
 */
export interface WorkerMissingOp {
  v: number;
  op: "worker-missing";
  name: string;
  id: string;
}

export type WorkerToScheduler =
  | RegisterWorkerOp
  | UnregisterWorkerOp
  | TaskFinishedOp
  | TaskErredOp
  | StealResponseOp
  | AddKeysOp
  | MissingDataOp
  | RetireWorkerOp
  | WorkerMetricsOp;

// ---- scheduler -> worker -------------------------------------------------------------

export interface DepInfo {
  key: string;
  nbytes: number;
  /** Workers holding it. */
  holders: string[];
}

/**
 * Assignment numbers (docs/protocol.md, "Assignment numbers"). The scheduler numbers every
 * assignment of a task to a worker (ASSIGN, or a confirmed steal) from one counter per
 * scheduler run, so a newer instruction about a key always carries a larger number than an
 * older one. `run` names the scheduler run the numbers belong to (the time of the
 * scheduler-start input that started its core): a worker compares numbers of one run only.
 * Workers use them to drop instructions a transport delivered late or twice.
 *
 * Both are optional on the wire (protocol version 1 only gains optional fields): natsched's
 * scheduler core always sends them; an op without them is handled as before they existed
 * (taken as it comes, never dropped as stale).
 */
export interface Stamp {
  /** The scheduler run the number belongs to. */
  run?: number;
  /**
   * compute-task: the number of this assignment (a re-send with refreshed holders keeps it).
   * steal-request: the assignment the request targets.
   * free-keys: the scheduler's latest number when it sent it: every assignment of these keys
   * to this worker numbered up to it is void.
   */
  attempt?: number;
}

export interface ComputeTaskOp extends Stamp {
  op: "compute-task";
  key: string;
  func: string;
  args: unknown[];
  deps: DepInfo[];
  priority: readonly [number, number, number];
  /** The scheduler's duration estimate (seconds). */
  duration: number;
  /**
   * Adaptive saturation: the `stop` of this worker's task-finished whose handling sent this
   * task (the worker's own clock), so the worker measures the round trip (task-finished roundTrip).
   */
  answers?: number;
  /**
   * Another task waits on this one's result (it has dependents): the worker reports it the
   * moment it finishes, never holding the report to send with others (config reportHold).
   */
  prompt?: true;
}

export interface FreeKeysOp extends Stamp {
  op: "free-keys";
  keys: string[];
}

export interface StealRequestOp extends Stamp {
  op: "steal-request";
  key: string;
  requestId: string;
}

/** Copy these keys from their holders (a retiring worker's data), then report them with add-keys. */
export interface AcquireReplicasOp {
  op: "acquire-replicas";
  keys: DepInfo[];
  /** The scheduler run that asks: a worker drops one of a run it has left (delivered late). */
  run?: number;
}

/** Retirement is over (its data handed over, or nothing could be): unregister and leave. */
export interface CloseWorkerOp {
  op: "close-worker";
  reason: string;
}

/**
 * The first word to a worker the scheduler registers afresh: an incarnation it does not have
 * (a new one, or one it removed while it was alive and that registered again, or a worker of
 * an earlier run): every assignment numbered up to `attempt` in run `run` was given before,
 * never to this registration, and is void. The worker drops what it computes, fetches or keeps
 * as a failure for them (work under way is cancelled, its outcome discarded) and any later
 * copy of such an assignment; its data in memory stays, and it tells the scheduler what it
 * holds again (add-keys), which counts each key or frees it. Later assignments carry larger
 * numbers, so a copy of this op that arrives late or twice voids none of them.
 */
export interface VoidAssignmentsOp {
  op: "void-assignments";
  run: number;
  attempt: number;
}

export type SchedulerToWorker = ComputeTaskOp | FreeKeysOp | StealRequestOp | AcquireReplicasOp | CloseWorkerOp | VoidAssignmentsOp;

// ---- scheduler -> client -------------------------------------------------------------

export interface KeyInMemoryOp {
  op: "key-in-memory";
  key: string;
  nbytes: number;
  workers: string[];
}

export interface KeyErredOp {
  op: "key-erred";
  key: string;
  /** The task whose function failed (this key, or one of its dependencies). */
  failedKey: string;
  error: ErrorInfo;
}

export interface KeyCancelledOp {
  op: "key-cancelled";
  key: string;
  reason: string;
}

export type SchedulerToClient = KeyInMemoryOp | KeyErredOp | KeyCancelledOp;

// ---- worker <-> worker (data plane, request/reply) ----------------------------------

export interface GetDataRequest {
  op: "get-data";
  keys: string[];
  /** Requesting worker or client, for the log. */
  who: string;
  /**
   * The reply's shape: "object" (the default: GetDataReply, keyed by key) or "list"
   * (GetDataListReply, by position in `keys`, cheaper to build and read for many keys).
   */
  layout?: GetDataLayout;
}

export type GetDataLayout = "object" | "list";

export interface GetDataReply {
  /** Key -> value for the keys this worker holds. */
  data: Record<string, unknown>;
  nbytes: Record<string, number>;
  /** Requested keys it does not hold. */
  missing: string[];
}

/** get-data's answer with layout "list": entry i is about the request's keys[i]. */
export interface GetDataListReply {
  /** The value of keys[i]; null where the worker does not hold it. */
  values: unknown[];
  /** Bytes of keys[i]'s value; -1 where the worker does not hold it. */
  nbytes: number[];
  /** Requested keys it does not hold (those with nbytes -1). */
  missing: string[];
}

export interface PutDataRequest {
  op: "put-data";
  data: Record<string, unknown>;
  who: string;
}
