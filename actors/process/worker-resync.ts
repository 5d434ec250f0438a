/**
 * A worker's side of a scheduler restart (the scheduler's side is scheduler-resync.ts).
 *
 * While the scheduler process is down, what a worker reports (task-finished, task-erred)
 * goes to a subject nobody listens on and is lost: core NATS keeps nothing, and the
 * transport's re-send only covers the worker's own connection dropping. So the worker keeps
 * its latest report of each task it holds (ReportJournal, a Transport wrapper that notes the
 * reports going to the scheduler), and when the restarted scheduler asks on
 * `natsched.<cluster>.resync.<worker>`, it answers with its incarnation id, those reports,
 * the other keys it holds and the keys it is still working on.
 *
 * A scheduler that starts a new run instead (the last one stopped cleanly, or kept no log in
 * JetStream) knows no worker: it announces itself on `natsched.<cluster>.announce.scheduler`,
 * and each worker registers with it again, with what it holds (followNewRuns).
 *
 * The same resync serves a worker whose own connection dropped and came back: what the
 * scheduler sent it meanwhile (a compute-task, free-keys) was lost, so it says it is back on
 * `natsched.<cluster>.announce.worker` (announceReturns) and the scheduler resyncs it.
 */
import { ProtocolError } from "../../machines/errors.js";
import { PROTOCOL_VERSION, type Envelope, type RegisterWorkerOp, type TaskErredOp, type TaskFinishedOp, type WorkerInfo, type WorkerMissingOp } from "../../machines/protocol.js";
import { subjects } from "../../transport/subjects.js";
import type { MsgHandler, Payload, RequestOptions, SubscribeOptions, Subscription, Transport, WireInfo } from "../../transport/types.js";
import { isAnnouncement, refuseRequest } from "../publish-only.js";
import type { WorkerActor } from "../worker-actor.js";

export type TaskReport = TaskFinishedOp | TaskErredOp;

/** The answer to a resync request. */
export interface ResyncAnswer {
  /** The worker's incarnation: a worker restarted under the same name has another id. */
  id: string;
  /** The latest report of each task it computed and still holds (in memory, or erred). */
  reports: TaskReport[];
  /** Other results it holds (replicas fetched from peers, scattered data the scheduler confirmed). */
  holding: { key: string; nbytes: number }[];
  /**
   * Scattered data not confirmed yet (WTask.scattered): kept by a scheduler that counts it
   * there, never added as a replica on the worker's word (anyone can put data on a worker).
   */
  scattered?: { key: string; nbytes: number }[];
  /** Tasks it is still waiting on, running or fetching: their outcome is yet to be reported. */
  active: string[];
}

export function resyncSubject(cluster: string, worker: string): string {
  return `natsched.${cluster}.resync.${worker}`;
}

const ACTIVE = new Set(["waiting", "ready", "executing", "fetch", "flight", "resumed"]);

/** Passes everything to `inner`, noting each task-finished and task-erred sent to the scheduler. */
export class ReportJournal implements Transport {
  private readonly reports = new Map<string, TaskReport>();
  private actor: WorkerActor | null = null;

  constructor(
    private readonly inner: Transport,
    private readonly schedulerSubject: string,
  ) {}

  get closed(): boolean {
    return this.inner.closed;
  }

  get wire(): WireInfo | undefined {
    return this.inner.wire;
  }

  publish(subject: string, data: Payload, reply?: string): void {
    if (subject === this.schedulerSubject) this.note(data);
    this.inner.publish(subject, data, reply);
  }

  subscribe(subject: string, handler: MsgHandler, opts?: SubscribeOptions): Subscription {
    return this.inner.subscribe(subject, handler, opts);
  }

  request(subject: string, data: Payload, opts?: RequestOptions): Promise<Payload> {
    return this.inner.request(subject, data, opts);
  }

  flush(): Promise<void> {
    return this.inner.flush();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** The worker whose reports these are (the actor is built on this transport, so it comes second). */
  attach(actor: WorkerActor): void {
    this.actor = actor;
  }

  /** What `actor` would answer to a resync request now; reports of tasks it no longer holds are forgotten. */
  answer(actor: WorkerActor): ResyncAnswer {
    const reports: TaskReport[] = [];
    const holding: { key: string; nbytes: number }[] = [];
    const scattered: { key: string; nbytes: number }[] = [];
    const active: string[] = [];
    for (const ts of actor.core.tasks.values()) {
      const report = this.reports.get(ts.key);
      if (ts.state === "memory") {
        if (ts.scattered) scattered.push({ key: ts.key, nbytes: ts.nbytes });
        else if (report?.op === "task-finished") reports.push(report);
        else holding.push({ key: ts.key, nbytes: ts.nbytes });
      } else if (ts.state === "error") {
        if (report?.op === "task-erred") reports.push(report);
      } else if (ACTIVE.has(ts.state)) {
        active.push(ts.key);
      }
    }
    this.prune(actor);
    return { id: actor.id, reports, holding, active, ...(scattered.length > 0 ? { scattered } : {}) };
  }

  private note(data: Payload): void {
    const envelope = data as Envelope<{ op: string; key?: string }>;
    if (typeof envelope !== "object" || envelope === null || envelope.v !== PROTOCOL_VERSION || !Array.isArray(envelope.ops)) return;
    for (const op of envelope.ops) {
      if ((op.op === "task-finished" || op.op === "task-erred") && typeof op.key === "string") this.reports.set(op.key, op as TaskReport);
    }
    // Reports of tasks the worker has since dropped are not worth keeping.
    if (this.actor !== null && this.reports.size > 2 * this.actor.core.tasks.size + 1024) this.prune(this.actor);
  }

  private prune(actor: WorkerActor): void {
    for (const key of this.reports.keys()) {
      const state = actor.core.tasks.get(key)?.state;
      if (state !== "memory" && state !== "error") this.reports.delete(key);
    }
  }
}

/** Answers the restarted scheduler's resync requests for `actor`. */
export function serveResync(transport: Transport, cluster: string, actor: WorkerActor, journal: ReportJournal): Subscription {
  return transport.subscribe(resyncSubject(cluster, actor.name), (msg) => {
    if (msg.reply === undefined) return;
    transport.publish(msg.reply, msg.problem !== undefined ? { error: `malformed resync request: ${msg.problem}` } : journal.answer(actor));
  });
}

export function announceSubject(cluster: string): string {
  return subjects(cluster).announce;
}

/** What a worker whose connection came back publishes on `subjects(cluster).workerBack`. */
export interface WorkerBackOp {
  v: number;
  op: "worker-back";
  name: string;
  id: string;
}

/** The scheduler's answer to worker-back: whether it still has this worker (this name and incarnation). */
export interface WorkerBackAnswer {
  known: boolean;
}

/**
 * Asks on `natsched.<cluster>.announce.worker` each time the worker's connection comes back:
 * a scheduler that still has it resyncs it; one that removed it meanwhile (its connection
 * was down longer than the scheduler waits for a silent worker) answers `known: false`, and
 * the worker registers again with what it holds, as with a new run (Dask's worker re-registers
 * when its heartbeat is answered "missing"). Unsubscribe stops it.
 */
export function announceReturns(rejoin: Rejoin): Subscription {
  const { transport, cluster, actor, onError } = rejoin;
  const subject = subjects(cluster).workerBack;
  const stop =
    transport.onReconnect?.(() => {
      if (transport.closed) return;
      const op: WorkerBackOp = { v: PROTOCOL_VERSION, op: "worker-back", name: actor.name, id: actor.id };
      transport
        .request(subject, op, { timeout: 10_000 })
        .then((answer) => {
          if ((answer as Partial<WorkerBackAnswer> | null)?.known === false) registerAgain(rejoin);
        })
        .catch(onError);
    }) ?? (() => undefined);
  return { subject, unsubscribe: stop };
}

/**
 * Registers again when the scheduler says, on `natsched.<cluster>.announce.missing.<name>`,
 * that it heard this worker's heartbeat but does not have it: it removed the worker while the
 * worker was still connected (its process or event loop stalled past workerTtl), so no
 * reconnect told the worker. Unsubscribe stops it.
 */
export function answerMissing(rejoin: Rejoin): Subscription {
  const { transport, cluster, actor } = rejoin;
  return transport.subscribe(subjects(cluster).workerMissing(actor.name), (msg) => {
    if (refuseRequest(transport, msg, "the scheduler's worker-missing notices")) return;
    if (!isAnnouncement(msg.data, "worker-missing", ["name", "id"])) {
      rejoin.onError(new ProtocolError(`worker ${actor.name}: dropped a message on ${msg.subject} that is not a worker-missing notice: ${msg.problem ?? JSON.stringify(msg.data)?.slice(0, 80)}`));
      return;
    }
    const op = msg.data as WorkerMissingOp;
    if (op.id !== actor.id || transport.closed) return;
    // A worker closing or retiring (its unregister may cross a last heartbeat) stays gone.
    if (actor.core.state !== "running") return;
    registerAgain(rejoin);
  });
}

/** A new run is announced now and again after these delays (ms), for workers whose connection was down. */
const ANNOUNCE_AGAIN_MS = [1000, 4000];

/**
 * The scheduler's side: say a new run started (no worker is registered with it yet), and
 * which (`run`, the scheduler core's run: its assignment numbers belong to it). Returns a stop.
 */
export function announceNewRun(transport: Transport, cluster: string, onError?: (error: unknown) => void, run?: number): () => void {
  const announce = () => {
    try {
      if (!transport.closed) transport.publish(announceSubject(cluster), { v: PROTOCOL_VERSION, op: "scheduler-started", ...(run !== undefined ? { run } : {}) });
    } catch (error) {
      onError?.(error);
    }
  };
  announce();
  const timers = ANNOUNCE_AGAIN_MS.map((ms) => setTimeout(announce, ms));
  for (const timer of timers) timer.unref();
  return () => timers.forEach((timer) => clearTimeout(timer));
}

/**
 * The worker's side: register `actor` again with each scheduler that announces a new run,
 * with the keys it holds. A scheduler that knows the worker already (same name and
 * incarnation) just says ok, so a repeated announcement does no harm. The worker enters the
 * announced run first (WorkerCore new-run): what the run before still sends it (a message
 * delayed past the restart) is void, and the keys it registers are not freed behind the new
 * run's back.
 */
export function followNewRuns(rejoin: Rejoin): Subscription {
  return rejoin.transport.subscribe(announceSubject(rejoin.cluster), (msg) => {
    if (refuseRequest(rejoin.transport, msg, "announcements of a scheduler's new run")) return;
    if (!isAnnouncement(msg.data, "scheduler-started")) {
      rejoin.onError(new ProtocolError(`worker ${rejoin.actor.name}: dropped a message on ${msg.subject} that is not a scheduler-started announcement: ${msg.problem ?? JSON.stringify(msg.data)?.slice(0, 80)}`));
      return;
    }
    if (rejoin.transport.closed) return;
    const run = (msg.data as { run?: unknown }).run;
    if (typeof run === "number" && Number.isFinite(run)) rejoin.actor.enterRun(run);
    registerAgain(rejoin);
  });
}

/** What a worker needs to register with the scheduler again (a new run, or after it was removed). */
export interface Rejoin {
  transport: Transport;
  cluster: string;
  actor: WorkerActor;
  info: Omit<WorkerInfo, "name" | "id">;
  onRegistered: () => void;
  onError: (error: unknown) => void;
}

/** Workers registering again right now (one registration at a time per worker). */
const registering = new WeakSet<WorkerActor>();

/** Registers `actor` with the scheduler again, with the keys it holds. */
function registerAgain({ transport, cluster, actor, info, onRegistered, onError }: Rejoin): void {
  if (registering.has(actor)) return;
  registering.add(actor);
  const op: RegisterWorkerOp = { op: "register-worker", name: actor.name, id: actor.id, ...info, holding: actor.holdingToRegisterAgain(), started: actor.started, ...actor.registrationFlags() };
  const envelope: Envelope<RegisterWorkerOp> = { v: PROTOCOL_VERSION, from: `worker.${actor.name}`, ops: [op] };
  transport
    .request(subjects(cluster).workerOps(actor.name), envelope, { timeout: 10_000 })
    .then((data) => {
      const answer = (data as { replies?: { ok: boolean; error?: { message?: string } }[] }).replies?.[0];
      if (!answer?.ok) throw new ProtocolError(`worker ${actor.name}: registration with the scheduler refused: ${answer?.error?.message ?? "no answer"}`);
      onRegistered();
    })
    .catch(onError)
    .finally(() => registering.delete(actor));
}
