import type { ClientHeartbeatOp, ClientToScheduler, ErrorInfo, SchedulerToClient, TaskSpec, UpdateDataOp } from "../protocol.js";
import type { SchedulerReply } from "../scheduler/inputs.js";

/** What a client core is given once, by its host. Durations are in milliseconds. */
export interface ClientInit {
  /** The client's id (the `client` field of its ops). */
  id: string;
  /** The cluster's name, for messages. */
  cluster: string;
  /** The subject the client's requests go to, for messages. */
  opsSubject: string;
  /** How long a request waits for a scheduler to answer. */
  requestTimeout: number;
  /** How long, from its first try, a request waits for a scheduler that says it is resuming. */
  resumeWait: number;
  /** Between heartbeats; Infinity: none. */
  heartbeatEvery: number;
  /** How often a resuming scheduler says so, until it tells otherwise. */
  resumingEvery: number;
  /** How many of those announcements a client waits past the last one it heard. */
  resumingMissed: number;
}

/**
 * Why a future, a wait, a gather or a call failed: data, so that the core stays free of
 * the host's objects; the host turns each into the typed error the user gets.
 */
export type ClientFailure =
  /** The task failed (key-erred): `failedKey` is the task whose function raised. */
  | { kind: "task-failed"; key: string; failedKey: string; error: ErrorInfo }
  /** The key was cancelled: by the scheduler (key-cancelled), or by this client (cancel). */
  | { kind: "cancelled"; key: string; reason: string }
  /** The future was released while someone waited for it. */
  | { kind: "released"; key: string }
  /** Waited for a key this client holds no future for. */
  | { kind: "no-future"; key: string }
  | { kind: "closed" }
  /** A new run of the scheduler, and this key cannot be computed again: `lostKey` was scattered data. */
  | { kind: "scheduler-restarted"; key: string; cluster: string; lostKey: string }
  | { kind: "timeout"; what: string }
  /** The scheduler refused a request (a reply with ok: false). */
  | { kind: "refused"; error: ErrorInfo & { keys?: string[] } }
  /** An error the host met (the transport, a worker's data server), as the host described it. */
  | { kind: "host"; error: ErrorInfo };

/** A timer the core asked its host for; the host answers with a `timer` stimulus naming it. */
export type ClientTimer =
  | { kind: "heartbeat" }
  /** A request's pause before it is sent again. */
  | { kind: "retry"; request: number }
  /** A host wait's timeout. */
  | { kind: "wait"; wait: number }
  /** A gather's wait for its keys to be done, timed out. */
  | { kind: "gather-wait"; gather: number }
  /** A gather's pause before it asks holders again. */
  | { kind: "gather-backoff"; gather: number };

/** One name per timer, for a host's table of them. */
export function timerName(timer: ClientTimer): string {
  switch (timer.kind) {
    case "heartbeat":
      return "heartbeat";
    case "retry":
      return `retry-${timer.request}`;
    case "wait":
      return `wait-${timer.wait}`;
    default:
      return `${timer.kind}-${timer.gather}`;
  }
}

/**
 * A `client-keys` answer as the host read it (docs/protocol.md): the keys the scheduler
 * knows, those it holds for this client (absent: not an answer to act on), its run, and the
 * reports of the client's keys that are done (each checked by the host).
 */
export interface ClientKeysAnswer {
  known: string[];
  wanted?: string[];
  run?: number;
  reports?: SchedulerToClient[];
}

/**
 * Every stimulus a client core takes. Ids (`call`, `wait`, `gather`, `scatter`) are the
 * host's, each kind counted on its own; `request` and `query` ids are the core's.
 */
export type ClientStimulus =
  // ---- the user, through the Client's methods
  /** The client starts listening and joins (attach). */
  | { op: "attach" }
  /** A client-join the caller waits for (connect). */
  | { op: "join"; call: number }
  /** A future for each of `keys` is made (a key twice: two futures). */
  | { op: "retain"; keys: readonly string[] }
  /** A future for each of `keys` is released (or collected). */
  | { op: "release"; keys: readonly string[] }
  /**
   * Cancel `keys` (client.cancel, future.cancel): their futures fail now, and so do those of
   * tasks depending on them; `call`: the cancel-keys the caller waits for.
   */
  | { op: "cancel"; call: number; keys: readonly string[] }
  /**
   * Run `keys` to completion whoever holds them (client.fireAndForget); `call`: the
   * fire-and-forget op the caller waits for.
   */
  | { op: "fire-and-forget"; call: number; keys: readonly string[] }
  /** Tasks submitted (submit, map, persist, compute): `wants` are the keys of new futures. */
  | { op: "submit"; tasks: TaskSpec[]; wants: string[] }
  /** A scatter of `keys` begins: they are on their way to the scheduler until `scatter-end`. */
  | { op: "scatter-start"; scatter: number; keys: readonly string[] }
  /** A scatter registers data it stored on workers. */
  | { op: "update-data"; call: number; data: UpdateDataOp["data"] }
  | { op: "scatter-end"; scatter: number }
  /** Wait until `keys` are done (`timeout` ms at most), without fetching their data. */
  | { op: "wait"; wait: number; keys: readonly string[]; timeout?: number }
  /** Wait until `keys` are done and fetch their data from their holders. */
  | { op: "gather"; gather: number; keys: readonly string[]; timeout?: number }
  /** The client closes; `call`: the client-leave to send (none when the transport is closed). */
  | { op: "close"; call?: number }
  // ---- the host
  /** The moment the host set for sending what is queued (after a schedule-flush). */
  | { op: "flush" }
  | { op: "timer"; timer: ClientTimer }
  /** The transport is closed for good. */
  | { op: "transport-closed" }
  /** A heartbeat could not be published. */
  | { op: "heartbeat-failed" }
  /** The connection came back after it was lost. */
  | { op: "reconnected" }
  // ---- the scheduler
  /**
   * A request's answer: one reply per op. `attempt`: the try it answers, as the `request`
   * instruction gave it (absent in logs written before clients sent a request again while a
   * try was out: the latest).
   */
  | { op: "answered"; request: number; replies: readonly SchedulerReply[]; attempt?: number }
  /** A request got no answer; `noResponders`: nobody received it (safe to send again); `attempt` as in `answered`. */
  | { op: "request-failed"; request: number; noResponders: boolean; failure: ClientFailure; attempt?: number }
  /** A client-keys answer (null: not an object). */
  | { op: "client-keys"; query: number; answer: ClientKeysAnswer | null }
  | { op: "who-has"; query: number; whoHas: Record<string, string[]> }
  | { op: "query-failed"; query: number }
  /** Reports on the client's subject, each checked by the host. */
  | { op: "reports"; ops: readonly SchedulerToClient[] }
  /** A scheduler announced a new run (`run`: its number, when the announcement names it). */
  | { op: "scheduler-started"; run?: number }
  /** A scheduler said it is resuming from its log; `every`: how often it says so. */
  | { op: "scheduler-resuming"; every?: number }
  | { op: "scheduler-resumed" }
  // ---- the workers' data servers
  /** A holder sent what it had of `keys`; `missing` it did not have. */
  | { op: "fetched"; gather: number; holder: string; keys: readonly string[]; missing: readonly string[] }
  /** A holder did not answer, or refused (`refused`: why; asking it again would get the same). */
  | { op: "fetch-failed"; gather: number; holder: string; keys: readonly string[]; refused?: ClientFailure };

/** A stimulus stamped with the time (ms) the host saw it. */
export type ClientInput = ClientStimulus & { t: number };

export type ClientQuery = { op: "client-keys"; client: string; keys: string[] } | { op: "who-has"; keys: string[] };

/** What a client core asks its host to do. */
export type ClientInstruction =
  /** Feed a `flush` soon (the host's next moment: a microtask), so that ops queued meanwhile go in one envelope. */
  | { do: "schedule-flush" }
  /** Send these ops to the scheduler in one envelope, as a request; answer with `answered` or `request-failed`, naming the `attempt`. */
  | { do: "request"; request: number; ops: readonly ClientToScheduler[]; timeout: number; attempt: number }
  /** Publish these ops to the scheduler (no answer). */
  | { do: "publish"; ops: readonly ClientHeartbeatOp[] }
  /** Ask the scheduler's query subject; answer with `client-keys`, `who-has` or `query-failed`. */
  | { do: "query"; query: number; body: ClientQuery }
  /** Fetch `keys` from `holder`'s data server, keep what it sends, answer with `fetched` or `fetch-failed`. */
  | { do: "fetch"; gather: number; holder: string; keys: string[] }
  /** Feed `timer` after `ms` (and every `ms` if `repeat`), unless cleared. */
  | { do: "set-timer"; timer: ClientTimer; ms: number; repeat?: true }
  | { do: "clear-timer"; timer: ClientTimer }
  | { do: "answer-call"; call: number; reply: SchedulerReply }
  | { do: "fail-call"; call: number; failure: ClientFailure }
  | { do: "resolve-wait"; wait: number }
  | { do: "reject-wait"; wait: number; failure: ClientFailure }
  /** The gather is done: its result is what the host kept from the fetches. */
  | { do: "resolve-gather"; gather: number }
  | { do: "reject-gather"; gather: number; failure: ClientFailure };
