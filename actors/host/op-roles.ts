/**
 * Who may send the scheduler what: the scheduler host's check of every op it takes from a
 * sender, after the op's shape (validate-ops.ts) and before the core sees it. Shared by every
 * host of the scheduler core (SchedulerActor on the in-process bus and on NATS, SimScheduler),
 * so the same op is refused everywhere. docs/nats.md, "Roles and permissions".
 *
 * - Role: client ops come on the bare `natsched.<c>.scheduler` or on
 *   `natsched.<c>.scheduler.client.<id>` (then each op's `client` must be `<id>`); worker ops
 *   only on `natsched.<c>.scheduler.worker.<name>`, each naming worker `<name>`. A NATS server
 *   can then pin a worker's user to its own subject, so no other user can report as it.
 * - Incarnation: a worker op other than `register-worker` and `heartbeat` (which is answered
 *   "worker-missing" instead) must come from the incarnation (name, id) the scheduler has.
 *   The core ignores most of these anyway (its `liveWorker` check; a `missing-data` it took
 *   from any reporter, a late `steal-response` it counted stale); refusing them here says so
 *   to the sender and the operator, and keeps them out of the log. A refused op is never fed, so it is
 *   no input of the run, and replay stays exact.
 */
import type { SchedulerCore } from "../../machines/scheduler/core.js";
import type { SchedulerSender } from "../../transport/subjects.js";

const CLIENT_OPS: ReadonlySet<string> = new Set(["update-graph", "release-keys", "cancel-keys", "fire-and-forget", "update-data", "client-join", "client-leave", "heartbeat-client"]);

/** A shape-checked op to the scheduler: the fields the checks read. */
interface RoleFields {
  op: string;
  client?: string;
  /** The worker a lifecycle op (register, unregister, retire, heartbeat) names. */
  name?: string;
  /** The worker a report (task-finished, add-keys, ...) comes from. */
  worker?: string;
  id?: string;
}

export function isClientOp(op: string): boolean {
  return CLIENT_OPS.has(op);
}

/**
 * Why `op`, shape-checked, may not reach the core from `sender` (the role its subject stands
 * for; undefined: a subject below the scheduler's that is none of its own); undefined if it may.
 */
export function refusal(core: SchedulerCore, sender: SchedulerSender | undefined, op: RoleFields, subject: string): string | undefined {
  return roleProblem(sender, op, subject) ?? incarnationProblem(core, op);
}

/** Why `op` does not fit the role of the subject it came on; undefined if it does. */
export function roleProblem(sender: SchedulerSender | undefined, op: RoleFields, subject: string): string | undefined {
  if (sender === undefined) return `${subject} is not a subject the scheduler takes ops on (natsched.<cluster>.scheduler, .scheduler.client.<id>, .scheduler.worker.<name>)`;
  if (CLIENT_OPS.has(op.op)) {
    if (sender.role === "worker") return `${op.op} is a client op, refused on worker ${sender.name}'s subject ${subject}`;
    if (sender.id !== null && op.client !== sender.id) return `${op.op} names client ${JSON.stringify(op.client)}, refused on client ${sender.id}'s subject ${subject}`;
    return undefined;
  }
  if (sender.role === "client") return `${op.op} is a worker op: a worker sends it on natsched.<cluster>.scheduler.worker.<its name>, not on ${subject}`;
  const named = workerNamed(op);
  if (named !== sender.name) return `${op.op} names worker ${JSON.stringify(named)}, refused on worker ${sender.name}'s subject ${subject}`;
  return undefined;
}

/** Why a worker op comes from an incarnation the scheduler does not have; undefined if it does not. */
export function incarnationProblem(core: SchedulerCore, op: RoleFields): string | undefined {
  if (CLIENT_OPS.has(op.op) || op.op === "register-worker" || op.op === "heartbeat") return undefined;
  const name = workerNamed(op)!;
  const ws = core.workers.get(name);
  // retire-worker may leave out its id: it names the current incarnation, if there is one.
  if (ws !== undefined && (op.id === undefined || ws.id === op.id)) return undefined;
  if (ws === undefined) return `${op.op}: worker ${name}${op.id === undefined ? "" : ` (incarnation ${op.id})`} is not a worker of this scheduler (removed, or never registered): register first`;
  return `${op.op}: worker ${name} is incarnation ${ws.id} here, not ${op.id}: an earlier incarnation's ops are refused`;
}

function workerNamed(op: RoleFields): string | undefined {
  return op.op === "register-worker" || op.op === "unregister-worker" || op.op === "retire-worker" || op.op === "heartbeat" ? op.name : op.worker;
}

/** Refusals of one message, summed up for one report: `task-finished x3: <why>; ...`. */
export class RefusalSummary {
  private readonly reasons = new Map<string, number>();
  count = 0;

  add(why: string): void {
    this.count++;
    this.reasons.set(why, (this.reasons.get(why) ?? 0) + 1);
  }

  toString(): string {
    return [...this.reasons].map(([why, n]) => (n > 1 ? `${why} (x${n})` : why)).join("; ");
  }
}
