/**
 * The machines whose transitions the cores report, and the reasons (`why`) each decision
 * records: the types the cores write, the recorder and the log carry, and `story`, what-if
 * and the simulator read back. A reason is one of the kinds below, each with the machine
 * and the events it rides on and the shape of its fields.
 *
 * A log holds whatever was written when it was recorded, so a reader does not trust a why:
 * `readReason` checks it against the shapes and hands back the kind it is, or `unknown`
 * (a log from a newer or older natsched reads, never throws).
 */
import type { SchedulerLifecycleEvent, WorkerLifecycleEvent } from "./definitions/lifecycle.js";
import type { TaskEvent } from "./definitions/task.js";
import type { WorkerTaskEvent } from "./definitions/worker-task.js";
import type { FutureEvent } from "./definitions/future.js";
import { isPlainObject, listOf, matches, number, object, oneOf, optional, text, tuple, flag, type Shape, type ShapeType } from "./shape.js";

/**
 * The machine a transition is of: "task" (the scheduler's task), "wtask" (a worker's task),
 * "worker" (a worker's lifecycle, as the scheduler or the worker itself sees it), "scheduler",
 * "future" (a client's future for a key).
 */
export type MachineName = "task" | "wtask" | "worker" | "scheduler" | "future";

interface MachineEvents {
  task: TaskEvent["type"];
  wtask: WorkerTaskEvent["type"];
  worker: WorkerLifecycleEvent["type"];
  scheduler: SchedulerLifecycleEvent["type"];
  future: FutureEvent["type"];
}

type ReasonSpec = { [M in MachineName]: { readonly machine: M; readonly on: readonly MachineEvents[M][]; readonly shape: Shape } }[MachineName];

/** Seconds to copy a root-ish task's inputs, against the work a copy would let a worker take (placement.ts, inputsKeptLocal). */
const inputsKeptLocal = optional(object({ copy: number, share: number }));
/** Adaptive saturation's slots for the chosen worker and the bound that set them (scheduler/saturation.ts). */
const saturation = optional(object({ slots: number, limit: oneOf("dask", "round-trip", "cap", "memory"), rtt: optional(number), duration: optional(number), nbytes: optional(number), hold: optional(number) }));
/** At most LOGGED_CANDIDATES candidates, best first; `n`: how many there were, when more. */
const byLoad = { candidates: optional(listOf(tuple(text, number))), n: optional(number) };

/** Why a steal was asked for (stealing.ts, moveTaskRequest): logged again with its answer or abort. */
const stealRequest = {
  victim: text,
  thief: text,
  /** Stealable level, 0 to 14; -1 when the task is not stealable (a request made by hand). */
  level: number,
  requestId: text,
  compute: number,
  commVictim: number,
  commThief: number,
  occVictim: number,
  occThief: number,
};
/** The victim's answer, and the state its task was in there. */
const stealAnswer = { ...stealRequest, outcome: oneOf("confirm", "reject"), state: text };
/** A steal request left by anything but its answer (the scheduler core's move): the request's fields join the decision's. */
const stealAborted = { ...stealRequest, steal: oneOf("aborted") };
const STEAL_FIELDS: ReadonlySet<string> = new Set(Object.keys(stealAborted));

/**
 * Every kind of reason. Where two kinds can ride on the same event the more specific comes
 * first: one with a `rule` before one without (`readReason` takes the first that fits, and
 * a fit allows fields the shape does not name).
 */
const REASONS = {
  // The scheduler's placement (placement.ts): the worker chosen, and the rule that chose it.
  objective: {
    machine: "task",
    on: ["ASSIGN"],
    shape: { worker: text, rule: oneOf("objective"), candidates: optional(listOf(tuple(text, number, number, number))), n: optional(number), inputsKeptLocal },
  },
  "only-candidate": { machine: "task", on: ["ASSIGN"], shape: { worker: text, rule: oneOf("only-candidate"), inputsKeptLocal } },
  "least-occupied": { machine: "task", on: ["ASSIGN"], shape: { worker: text, rule: oneOf("least-occupied"), ...byLoad, inputsKeptLocal } },
  /** `saturation`: with adaptive saturation, the winner's slots and what set them (saturation.ts). */
  "rootish-queuing": { machine: "task", on: ["ASSIGN"], shape: { worker: text, rule: oneOf("rootish-queuing"), ...byLoad, saturation } },
  /** `left`: how many more of its group go to the same worker. */
  "co-assign": { machine: "task", on: ["ASSIGN"], shape: { worker: text, rule: oneOf("co-assign"), left: number, ...byLoad } },
  "no-candidate": { machine: "task", on: ["NO_WORKER"], shape: { rule: oneOf("no-candidate"), inputsKeptLocal } },

  // Work stealing (stealing.ts, and the scheduler core's answer to a steal-response).
  "steal-request": { machine: "task", on: ["STEAL"], shape: stealRequest },
  "steal-confirmed": { machine: "task", on: ["STEAL_CONFIRM"], shape: { worker: text, ...stealAnswer } },
  "steal-rejected": { machine: "task", on: ["STEAL_REJECT"], shape: stealAnswer },
  /** The victim no longer had the assignment, or the thief is gone: placed afresh. */
  "steal-reschedule": {
    machine: "task",
    on: ["RELEASE"],
    shape: { ...stealAnswer, steal: oneOf("aborted"), rule: oneOf("steal-reschedule"), cause: oneOf("victim-released", "thief-gone") },
  },

  // The scheduler's other task decisions (core.ts).
  scatter: { machine: "task", on: ["DATA"], shape: { rule: oneOf("scatter") } },
  "scatter-shared": { machine: "task", on: ["DATA"], shape: { rule: oneOf("scatter-shared"), client: text } },
  /** `computing`: the worker that was computing it, told to stop. */
  "held-by-joining-worker": { machine: "task", on: ["DATA"], shape: { rule: oneOf("held-by-joining-worker"), worker: text, computing: optional(text) } },
  /** A client cancelled it (cancel-keys), or a task it cancelled no longer needs it: `client`, who. */
  cancelled: { machine: "task", on: ["RELEASE"], shape: { rule: oneOf("cancelled"), client: text } },
  "worker-retiring": { machine: "task", on: ["RELEASE"], shape: { rule: oneOf("worker-retiring"), worker: text } },
  "worker-left": { machine: "task", on: ["RELEASE"], shape: { rule: oneOf("worker-left"), worker: text } },
  /** The executor thread running it on `worker` died (task-erred with code EXECUTOR_LOST): run again, like a worker death. */
  "executor-lost": { machine: "task", on: ["RELEASE"], shape: { rule: oneOf("executor-lost"), worker: text } },
  /**
   * Its function failed on `worker` and it has retries left (TaskSpec.retries): run again.
   * `try`: which run of it failed (1: the first); `left`: retries left after this one;
   * `message`: the failure's message.
   */
  retry: { machine: "task", on: ["RELEASE"], shape: { rule: oneOf("retry"), worker: text, try: number, left: number, message: text } },
  "missing-data": { machine: "task", on: ["RELEASE"], shape: { rule: oneOf("missing-data"), worker: text } },
  /** `gone`: the worker it erred on left since; else `attempt`, the number its free-keys carried. */
  "free-erred": { machine: "task", on: ["RELEASE"], shape: { rule: oneOf("free-erred"), worker: text, gone: optional(flag), attempt: optional(number) } },
  "killed-worker": { machine: "task", on: ["ERR"], shape: { rule: oneOf("killed-worker"), worker: text, suspicious: number } },
  "data-lost": { machine: "task", on: ["ERR"], shape: { rule: oneOf("data-lost") } },
  /** The worker running it reported it failed. */
  "task-erred": { machine: "task", on: ["ERR"], shape: { worker: text } },
  /** A dependency failed: `blame`, the key whose failure it is. */
  "dependency-erred": { machine: "task", on: ["ERR"], shape: { blame: text } },

  // A worker's lifecycle, as the scheduler sees it.
  retire: { machine: "worker", on: ["CLOSE"], shape: { reason: text, rule: oneOf("retire") } },
  "worker-closed": { machine: "worker", on: ["CLOSED"], shape: { reason: text } },

  // A worker's task (worker/core.ts): instructions it drops (a STALE self-transition) and why it lets a task go.
  "past-run": {
    machine: "wtask",
    on: ["STALE"],
    shape: { rule: oneOf("past-run"), op: oneOf("compute-task", "free-keys", "steal-request", "acquire-replicas"), run: number, attempt: optional(number) },
  },
  "stale-assignment": {
    machine: "wtask",
    on: ["STALE"],
    shape: { rule: oneOf("stale-assignment"), op: oneOf("compute-task"), attempt: number, held: number, voided: number, why: oneOf("duplicate", "voided", "superseded") },
  },
  "stale-free-keys": { machine: "wtask", on: ["STALE"], shape: { rule: oneOf("stale-free-keys"), op: oneOf("free-keys"), attempt: number, held: number } },
  "scatter-refused": { machine: "wtask", on: ["STALE"], shape: { rule: oneOf("scatter-refused"), op: oneOf("put-data"), reason: oneOf("reserved-key", "key-exists") } },
  "scattered-not-a-result": { machine: "wtask", on: ["FREE"], shape: { rule: oneOf("scattered-not-a-result"), op: oneOf("compute-task"), attempt: optional(number) } },
  "scattered-not-counted": {
    machine: "wtask",
    on: ["FREE"],
    shape: { rule: oneOf("scattered-not-counted"), op: oneOf("compute-task", "acquire-replicas"), holders: listOf(text) },
  },
  "scatter-lease-expired": { machine: "wtask", on: ["FREE"], shape: { rule: oneOf("scatter-lease-expired"), op: oneOf("scatter-lease") } },
  "scatter-confirmed": { machine: "wtask", on: ["CONFIRM"], shape: { rule: oneOf("scatter-confirmed"), op: oneOf("compute-task", "acquire-replicas", "scatter-lease") } },
  "input-in-memory-elsewhere": { machine: "wtask", on: ["FREE"], shape: { rule: oneOf("input-in-memory-elsewhere") } },
  "replica-in-memory-elsewhere": { machine: "wtask", on: ["FREE"], shape: { rule: oneOf("replica-in-memory-elsewhere") } },
  "void-assignments": { machine: "wtask", on: ["FREE"], shape: { rule: oneOf("void-assignments"), attempt: number } },
  "new-run": { machine: "wtask", on: ["FREE"], shape: { rule: oneOf("new-run"), run: number } },
  "no-holder-left": { machine: "wtask", on: ["FREE"], shape: { rule: oneOf("no-holder-left") } },
  /** A transfer failed while the scheduler asked for the task to be computed here: computed. */
  "compute-instead": { machine: "wtask", on: ["FETCH_FAILED"], shape: { rule: oneOf("compute-instead"), attempt: optional(number) } },
} as const satisfies Record<string, ReasonSpec>;

type Specs = typeof REASONS;
export type ReasonKind = keyof Specs;
/** The fields of a reason of kind K. */
export type WhyOf<K extends ReasonKind> = K extends ReasonKind ? ShapeType<Specs[K]["shape"]> : never;
type KindsOf<M extends MachineName> = { [K in ReasonKind]: Specs[K]["machine"] extends M ? K : never }[ReasonKind];
type StealKind = "steal-request" | "steal-confirmed" | "steal-rejected" | "steal-reschedule";
/** The scheduler's decisions a steal in flight can be cut short by. */
type AbortingKind = Exclude<KindsOf<"task">, StealKind>;

type PlacementKind = "objective" | "only-candidate" | "least-occupied" | "rootish-queuing" | "co-assign";
export type WithoutWorker<T> = T extends unknown ? Omit<T, "worker"> : never;
/** A placement decision's reasons, before the scheduler adds the worker it assigns to. */
export type PlacementWhy = WithoutWorker<WhyOf<PlacementKind>>;
export type StealRequestWhy = WhyOf<"steal-request">;
/** A steal request's reasons with the victim's answer. */
export type StealAnswerWhy = WhyOf<"steal-rejected">;

/** A steal request cut short: the request's fields, with those of the decision that cut it short, if any. */
export type StealAbortedWhy = ShapeType<typeof stealAborted> & (WhyOf<AbortingKind> | {});

export type TaskWhy = WhyOf<KindsOf<"task">> | StealAbortedWhy;
export type WTaskWhy = WhyOf<KindsOf<"wtask">>;
export type WorkerWhy = WhyOf<KindsOf<"worker">>;
/** Every reason a core writes. */
export type Why = TaskWhy | WTaskWhy | WorkerWhy;
/**
 * A why as a log gives it back: one the cores write, or fields this code does not know.
 * Read it with `readReason`; its fields cannot be read by name.
 */
export type LoggedWhy = Why | { readonly [field: string]: unknown };

/** What a transition's why says, by kind. */
export type Reason =
  | { [K in ReasonKind]: { readonly kind: K; readonly why: WhyOf<K> } }[ReasonKind]
  | { readonly kind: "steal-aborted"; readonly why: StealAbortedWhy; readonly by: AbortedBy }
  | NoReason
  | UnknownReason;
/** A transition without a why. */
export type NoReason = { readonly kind: "none" };
/** A why of no kind known here, or on a transition it does not belong to (or not an object at all, which no log reader gives). */
export type UnknownReason = { readonly kind: "unknown"; readonly why: { readonly [field: string]: unknown } };
export type PlacementReason = Extract<Reason, { kind: PlacementKind }>;
const PLACEMENT_KINDS: ReadonlySet<string> = new Set<PlacementKind>(["objective", "only-candidate", "least-occupied", "rootish-queuing", "co-assign"]);
/** A placement: the worker chosen for a task (ASSIGN), and by which rule. */
export function isPlacement(reason: Reason): reason is PlacementReason {
  return PLACEMENT_KINDS.has(reason.kind);
}
/** The decision that cut a steal short: none (a result came, or the task was released), or one of the scheduler's. */
export type AbortedBy = Extract<Reason, { kind: AbortingKind }> | NoReason | UnknownReason;

/**
 * The kinds a transition of `machine` by `event` may carry, in the order REASONS gives them:
 * the steal kinds, then (where a steal in flight can be cut short) "steal-aborted", then the rest.
 */
const BY_EDGE = new Map<string, (ReasonKind | "steal-aborted")[]>();
/** The events that take a task out of processing.stealing other than the victim's answers. */
const ABORTING_EVENTS: readonly TaskEvent["type"][] = ["RELEASE", "ERR", "DATA", "FINISH"];
const STEAL_KINDS: ReadonlySet<ReasonKind> = new Set<StealKind>(["steal-request", "steal-confirmed", "steal-rejected", "steal-reschedule"]);
for (const kind of Object.keys(REASONS) as ReasonKind[]) {
  const spec: ReasonSpec = REASONS[kind];
  for (const event of spec.on) edgeKinds(`${spec.machine} ${event}`).push(kind);
}
for (const event of ABORTING_EVENTS) {
  const kinds = edgeKinds(`task ${event}`);
  const firstOther = kinds.findIndex((kind) => kind === "steal-aborted" || !STEAL_KINDS.has(kind));
  kinds.splice(firstOther < 0 ? kinds.length : firstOther, 0, "steal-aborted");
}

function edgeKinds(edge: string): (ReasonKind | "steal-aborted")[] {
  let kinds = BY_EDGE.get(edge);
  if (kinds === undefined) BY_EDGE.set(edge, (kinds = []));
  return kinds;
}

/**
 * The reason a transition records. `exact`: a why with a field its kind does not name is
 * `unknown` (the check that the cores write nothing the kinds leave out); by default such
 * fields are allowed, as a newer log may add some.
 */
export function readReason(transition: { readonly machine: string; readonly event: string; readonly why?: LoggedWhy | undefined }, exact = false): Reason {
  const why = transition.why;
  if (why === undefined) return NONE;
  const unknown: UnknownReason = { kind: "unknown", why };
  if (!isPlainObject(why)) return unknown;
  const kinds = BY_EDGE.get(`${transition.machine} ${transition.event}`);
  if (kinds === undefined) return unknown;
  for (const kind of kinds) {
    if (kind !== "steal-aborted") {
      if (matches(REASONS[kind].shape, why, exact)) return { kind, why } as Reason;
    } else if (matches(stealAborted, why)) {
      const by = abortedBy(kinds, why, exact);
      return exact && by.kind === "unknown" ? unknown : { kind, why: why as StealAbortedWhy, by };
    }
  }
  return unknown;
}

const NONE: NoReason = { kind: "none" };

function abortedBy(kinds: readonly (ReasonKind | "steal-aborted")[], why: Record<string, unknown>, exact: boolean): AbortedBy {
  const rest = Object.keys(why).filter((name) => !STEAL_FIELDS.has(name));
  if (rest.length === 0) return NONE;
  for (const kind of kinds) {
    if (kind !== "steal-aborted" && !STEAL_KINDS.has(kind) && matches(REASONS[kind].shape, why, exact, STEAL_FIELDS)) return { kind, why } as AbortedBy;
  }
  return { kind: "unknown", why: Object.fromEntries(rest.map((name) => [name, why[name]])) };
}
