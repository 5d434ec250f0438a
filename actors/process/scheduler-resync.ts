/**
 * A scheduler rebuilt from its log catching up with the cluster (the workers' side is
 * worker-resync.ts). The rebuilt state is exactly what the log holds, and with output commit
 * (actors/process/jetstream-gate.ts) nobody heard anything from the old process that the log does
 * not explain. What the log may lack is what the old process received last, and what was
 * said while no scheduler listened. So, once the new one serves:
 *
 * - every client is told again the outcome of each key it wants that is done (the old
 *   process may have stored the outcome but died before its report went out);
 * - every worker of the rebuilt state is asked what it holds and runs. Its reports of
 *   results and failures are fed to the core as the inputs they would have been (the core
 *   ignores what it already knows, and a result it holds as the core has it is not fed at
 *   all); replicas it holds come in as add-keys, results it no longer has as missing-data
 *   (only those the scheduler counted when it asked: one reported meanwhile is newer than
 *   the answer). A task still processing there that the worker neither has
 *   nor works on gets its compute-task again (it was stored but never sent), a steal in
 *   flight its steal-request (the answer may have been lost);
 * - a worker that does not answer within workerTtl is lost, as a silent worker would be.
 *
 * The inputs are recorded like any other, so the log of a restarted scheduler replays as
 * one run.
 */
import { ProtocolError } from "../../machines/errors.js";
import { PROTOCOL_VERSION, type Envelope, type SchedulerToClient, type SchedulerToWorker } from "../../machines/protocol.js";
import type { SchedulerInput } from "../../machines/scheduler/inputs.js";
import type { TaskRec, WorkerRec } from "../../machines/scheduler/state.js";
import { doneReport } from "../../machines/scheduler/core.js";
import { subjects } from "../../transport/subjects.js";
import type { Subscription, Transport } from "../../transport/types.js";
import type { Clock } from "../host/clock.js";
import type { SchedulerActor } from "../scheduler-actor.js";
import { schedulerOpProblem } from "../validate-ops.js";
import { resyncSubject, type ResyncAnswer, type WorkerBackAnswer, type WorkerBackOp } from "./worker-resync.js";

export interface ResyncOptions {
  cluster: string;
  /** The scheduler's transport (gated: what it sends waits for the log). */
  transport: Transport;
  actor: SchedulerActor;
  clock: Clock;
  /** Seconds a worker has to answer before it is lost. */
  workerTtl: number;
  /** Milliseconds between two requests to a worker that did not answer. Default 500. */
  retryMs?: number;
  /** Stop early (the scheduler is closing). */
  stopped?: () => boolean;
  /** Told of a worker's answer that is malformed (it is skipped). */
  onError?: (error: unknown) => void;
}

export interface ResyncReport {
  /** Key outcomes reported to clients again. */
  reported: number;
  /** Workers that answered, and those lost for not answering. */
  answered: string[];
  lost: string[];
  /** Reports of results and failures the workers re-sent. */
  reports: number;
  /** compute-task and steal-request sent again. */
  computeAgain: number;
  stealAgain: number;
}

/**
 * Resyncs a worker whose connection came back (it says so on `natsched.<cluster>.announce.worker`):
 * what the scheduler sent it while it was away was lost, as a restarted scheduler's messages
 * may be, and the same questions and answers settle it: compute-tasks it never got are sent
 * again, results it reported meanwhile come in (the core ignores what it has already taken).
 */
export function serveWorkerReturns(opts: ResyncOptions): Subscription {
  const resyncing = new Set<string>();
  return opts.transport.subscribe(subjects(opts.cluster).workerBack, (msg) => {
    const op = msg.data as Partial<WorkerBackOp> | null;
    if (typeof op !== "object" || op === null || op.op !== "worker-back" || typeof op.name !== "string" || typeof op.id !== "string") {
      const why = msg.problem ?? `expected {"v": 1, "op": "worker-back", "name": …, "id": …}`;
      if (msg.problem === undefined) opts.onError?.(new ProtocolError(`scheduler: dropped a malformed message on ${msg.subject}: ${why}`));
      if (msg.reply !== undefined) opts.transport.publish(msg.reply, { error: `malformed worker-back: ${why}` });
      return;
    }
    const { name, id } = op;
    if (opts.stopped?.()) return;
    // Removed meanwhile (silent for too long): it registers again on this answer.
    const known = opts.actor.core.workers.get(name)?.id === id;
    if (msg.reply !== undefined) opts.transport.publish(msg.reply, { known } satisfies WorkerBackAnswer);
    if (!known || resyncing.has(name)) return;
    resyncing.add(name);
    const report: ResyncReport = { reported: 0, answered: [], lost: [], reports: 0, computeAgain: 0, stealAgain: 0 };
    resyncWorker(opts, name, id, report)
      .catch((error: unknown) => opts.onError?.(error))
      .finally(() => resyncing.delete(name));
  });
}

export async function resyncAfterRestart(opts: ResyncOptions): Promise<ResyncReport> {
  const report: ResyncReport = { reported: await reportToClients(opts), answered: [], lost: [], reports: 0, computeAgain: 0, stealAgain: 0 };
  const workers = [...opts.actor.core.workers.values()].map((ws) => ({ name: ws.name, id: ws.id }));
  await Promise.all(workers.map((w) => resyncWorker(opts, w.name, w.id, report)));
  return report;
}

/** Reports per message when telling clients again: the scheduler answers requests between two. */
const REPORTS_PER_MESSAGE = 5000;

async function reportToClients({ actor, transport, cluster, stopped }: ResyncOptions): Promise<number> {
  const s = subjects(cluster);
  let reported = 0;
  for (const [client, tasks] of [...actor.core.clients]) {
    const ops: SchedulerToClient[] = [];
    for (const ts of tasks) {
      const report = doneReport(ts);
      if (report !== null) ops.push(report);
    }
    for (let i = 0; i < ops.length; i += REPORTS_PER_MESSAGE) {
      // A client holding 100,000 results gets them in pieces, with requests answered in between.
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      if (stopped?.()) return reported;
      send(transport, s.client(client), ops.slice(i, i + REPORTS_PER_MESSAGE));
      reported += Math.min(REPORTS_PER_MESSAGE, ops.length - i);
    }
  }
  return reported;
}

async function resyncWorker(opts: ResyncOptions, name: string, id: string, report: ResyncReport): Promise<void> {
  const deadline = opts.clock.now() + opts.workerTtl;
  const retryMs = opts.retryMs ?? 500;
  for (;;) {
    if (opts.stopped?.()) return;
    const ws = opts.actor.core.workers.get(name);
    if (ws?.id !== id) return; // it left, or registered anew, meanwhile
    // What the scheduler counts on the worker as it asks: the answer can only say what the
    // worker lacks of these. A result that comes in while the question is out (the worker
    // finished it after answering) is newer than the answer.
    const counted = new Set(ws.hasWhat);
    try {
      const answer = await opts.transport.request(resyncSubject(opts.cluster, name), { op: "resync", id }, { timeout: Math.max(retryMs, 1000) });
      if (opts.stopped?.()) return;
      const problem = answerProblem(answer);
      if (problem === undefined) apply(opts, name, id, answer as ResyncAnswer, counted, report);
      else opts.onError?.(new ProtocolError(`scheduler: dropped the resync answer of worker ${name}: ${problem}`));
      report.answered.push(name);
      return;
    } catch {
      // Not (yet) answering: no responders, or a timeout.
    }
    if (opts.clock.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
  if (opts.stopped?.() || opts.actor.core.workers.get(name)?.id !== id) return;
  feed(opts, { op: "worker-lost", name, id, reason: `did not answer the restarted scheduler within workerTtl (${opts.workerTtl}s)` });
  report.lost.push(name);
}

/** A worker's answer, applied; `counted`: the tasks the scheduler counted on it when it asked. */
function apply(opts: ResyncOptions, name: string, id: string, answer: ResyncAnswer, counted: ReadonlySet<TaskRec>, report: ResyncReport): void {
  const core = opts.actor.core;
  const ws = core.workers.get(name);
  if (ws === undefined || ws.id !== id) return;
  if (answer.id !== id) {
    // A new incarnation under the same name: the one the log knows is gone (the new one registers itself).
    feed(opts, { op: "worker-lost", name, id, reason: `restarted as ${answer.id} while the scheduler was down` });
    return;
  }
  const wasProcessing = [...ws.processing];
  const held = new Set<string>();
  for (const op of answer.reports) {
    const problem = schedulerOpProblem(op);
    if (problem !== undefined || op.worker !== name || op.id !== id) {
      opts.onError?.(new ProtocolError(`scheduler: dropped a report in the resync answer of worker ${name}: ${problem ?? "it names another worker"}`));
      continue;
    }
    report.reports++;
    if (op.op === "task-finished") {
      held.add(op.key);
      // The core has that result already, on that worker: the input would change nothing, and
      // a restart after a large run would log one per result held (100,000 after W1).
      if (restates(core, ws, op)) continue;
    }
    feed(opts, op);
  }
  if (answer.holding.length > 0) {
    for (const { key } of answer.holding) held.add(key);
    feed(opts, { op: "add-keys", worker: name, id, keys: answer.holding });
  }
  // Unconfirmed scattered data: still held where the log counts it, never added on the worker's word.
  for (const { key } of answer.scattered ?? []) {
    const ts = core.tasks.get(key);
    if (ts !== undefined && ws.hasWhat.has(ts)) held.add(key);
  }
  for (const ts of [...ws.hasWhat]) {
    if (!held.has(ts.key) && counted.has(ts)) feed(opts, { op: "missing-data", worker: name, id, key: ts.key, holder: name });
  }
  const active = new Set(answer.active);
  const s = subjects(opts.cluster);
  const again: SchedulerToWorker[] = [];
  for (const ts of wasProcessing) {
    if (ts.processingOn !== ws) continue; // settled by what the worker just reported
    if (ts.state === "processing.stealing" && ts.stealRequest !== null) {
      again.push(opts.actor.core.stealRequestOp(ts, ts.stealRequest));
      report.stealAgain++;
    } else if (!active.has(ts.key)) {
      // As the core sent it when it assigned the task: with its assignment number, so the worker's guards apply.
      again.push(opts.actor.core.computeTaskOp(ts, opts.actor.core.taskDuration(ts)));
      report.computeAgain++;
    }
  }
  if (again.length > 0) send(opts.transport, s.worker(name), again);
}

/** Whether a worker's task-finished says what the core knows: the key in memory, held there, of that size, of that assignment. */
function restates(core: SchedulerActor["core"], ws: WorkerRec, op: { key: string; nbytes: number; attempt?: number | undefined }): boolean {
  const ts = core.tasks.get(op.key);
  return ts !== undefined && ts.state === "memory" && ts.whoHas.has(ws) && ts.nbytes === op.nbytes && (op.attempt === undefined || op.attempt === ts.attempt);
}

/** A scheduler input before it is stamped with its time. */
type Unstamped = SchedulerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

function feed(opts: ResyncOptions, op: Unstamped): void {
  try {
    opts.actor.feed({ ...op, t: opts.clock.now() } as SchedulerInput);
  } catch (error) {
    opts.onError?.(error);
  }
}

function answerProblem(value: unknown): string | undefined {
  const a = value as Partial<ResyncAnswer> | null;
  if (typeof a !== "object" || a === null || typeof a.id !== "string") return "not an answer with an id";
  if (!Array.isArray(a.reports) || !Array.isArray(a.active) || !Array.isArray(a.holding)) return "reports, holding and active must be arrays";
  if (!a.active.every((k) => typeof k === "string")) return "active must list keys";
  if (!a.holding.every((h) => typeof h === "object" && h !== null && typeof h.key === "string" && typeof h.nbytes === "number")) return "holding must list { key, nbytes }";
  if (a.scattered !== undefined && !(Array.isArray(a.scattered) && a.scattered.every((h) => typeof h === "object" && h !== null && typeof h.key === "string"))) return "scattered must list { key, nbytes }";
  return undefined;
}

function send(transport: Transport, subject: string, ops: (SchedulerToWorker | SchedulerToClient)[]): void {
  const envelope: Envelope<SchedulerToWorker | SchedulerToClient> = { v: PROTOCOL_VERSION, from: "scheduler", ops };
  transport.publish(subject, envelope);
}
