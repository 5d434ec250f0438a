/**
 * A scheduler core and worker cores wired by hand, for work-stealing races that need a
 * precise interleaving: every message waits in a queue until the test delivers it, and a
 * task runs until the test finishes it. Transfers complete when delivered. No actors, no clock.
 */
import { resolveConfig, type Config } from "../machines/config.js";
import type { SchedulerToWorker, TaskSpec, WorkerToScheduler } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput } from "../machines/scheduler/inputs.js";
import type { TaskRec, WorkerRec } from "../machines/scheduler/state.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInput } from "../machines/worker/inputs.js";
import type { MachineName, Why } from "../machines/reasons.js";
import { exactReason } from "./exact-reason.js";

type Op<T> = T extends unknown ? Omit<T, "t"> : never;
export type SchedulerOp = Op<SchedulerInput>;
type WorkerOp = Op<WorkerInput>;

export interface Transition {
  actor: string;
  machine: MachineName;
  id: string;
  event: string;
  from: string;
  to: string;
  why?: Why;
}

export class MiniCluster {
  readonly scheduler: SchedulerCore;
  readonly workers = new Map<string, WorkerCore>();
  readonly ids = new Map<string, string>();
  /** Every task-machine transition, scheduler's and workers', in order. */
  readonly transitions: Transition[] = [];
  /** Executions started, as "worker:key". */
  readonly executions: string[] = [];
  /** Executions started and not finished yet, by worker. */
  private readonly running = new Map<string, Set<string>>();
  private readonly toWorkers = new Map<string, SchedulerToWorker[]>();
  private readonly toScheduler: { worker: string; op: WorkerToScheduler }[] = [];
  private readonly gathers: { worker: string; from: string; keys: string[] }[] = [];
  private t = 0;
  private incarnation = 0;

  constructor(config: Partial<Config> = {}) {
    this.scheduler = new SchedulerCore(resolveConfig({ workStealing: true, workerSaturation: 1.1, ...config }), {
      toWorker: (worker, op) => this.mailbox(worker).push(structuredClone(op)),
      toClient: () => {},
      transition: (machine, id, event, from, to, why) => {
        exactReason(machine, event, why);
        if (machine === "task") this.transitions.push({ actor: "scheduler", machine, id, event, from, to, ...(why ? { why: structuredClone(why) } : {}) });
      },
    });
    this.feed({ op: "scheduler-start" });
    this.feed({ op: "client-join", client: "c" });
  }

  private mailbox(worker: string): SchedulerToWorker[] {
    let ops = this.toWorkers.get(worker);
    if (ops === undefined) this.toWorkers.set(worker, (ops = []));
    return ops;
  }

  feed(op: SchedulerOp): void {
    const reply = this.scheduler.handle({ ...op, t: ++this.t } as SchedulerInput);
    if (!reply.ok) throw new Error(`scheduler refused ${op.op}: ${reply.error.message}`);
  }

  addWorker(name: string, nthreads = 1): void {
    const id = `${name}#${++this.incarnation}`;
    this.ids.set(name, id);
    this.toWorkers.set(name, []);
    const core = new WorkerCore(
      { name, id, nthreads, transferIncomingCountLimit: 50 },
      {
        toScheduler: (op) => this.toScheduler.push({ worker: name, op: structuredClone(op) }),
        execute: (key) => {
          this.executions.push(`${name}:${key}`);
          this.running.get(name)!.add(key);
        },
        gather: (from, keys) => this.gathers.push({ worker: name, from, keys: [...keys] }),
        freeData: () => {},
        transition: (machine, key, event, from, to, why) => {
          exactReason(machine, event, why);
          if (machine === "wtask") this.transitions.push({ actor: name, machine, id: key, event, from, to, ...(why ? { why: structuredClone(why) } : {}) });
        },
      },
    );
    this.workers.set(name, core);
    this.running.set(name, new Set());
    this.feed({ op: "register-worker", name, id, nthreads, host: "localhost", resources: {}, functions: ["f"] });
    core.handle({ op: "registered", t: ++this.t });
  }

  /** The worker vanishes; the scheduler is told at once. Its queued mail is lost. */
  killWorker(name: string): void {
    const id = this.ids.get(name)!;
    this.workers.delete(name);
    this.toWorkers.delete(name);
    this.running.delete(name);
    this.feed({ op: "worker-lost", name, id, reason: "killed" });
  }

  submit(tasks: (Partial<TaskSpec> & { key: string })[], wants = tasks.map((t) => t.key)): void {
    this.feed({ op: "update-graph", client: "c", tasks: tasks.map((t) => ({ func: "f", args: [], deps: [], ...t })), wants });
  }

  /** Deliver what the scheduler sent to `worker` so far (or to every worker). */
  deliverToWorkers(only?: string): void {
    for (const [name, ops] of [...this.toWorkers]) {
      if (only !== undefined && name !== only) continue;
      const core = this.workers.get(name);
      const batch = ops.splice(0);
      if (core === undefined) continue;
      for (const op of batch) core.handle({ ...op, t: ++this.t } as WorkerInput);
    }
  }

  /**
   * Deliver to `worker` only the ops `pick` selects, in their order, leaving the rest queued:
   * a transport that lets later messages overtake earlier ones. `copy` delivers them and
   * leaves them queued too (a transport that delivers twice).
   */
  deliverWhere(worker: string, pick: (op: SchedulerToWorker) => boolean, copy = false): SchedulerToWorker[] {
    const ops = this.mailbox(worker);
    const chosen = ops.filter(pick);
    if (!copy) for (const op of chosen) ops.splice(ops.indexOf(op), 1);
    const core = this.workers.get(worker);
    if (core !== undefined) for (const op of chosen) core.handle({ ...structuredClone(op), t: ++this.t } as WorkerInput);
    return chosen;
  }

  /** What the scheduler sent `worker` and was not delivered yet. */
  queuedFor(worker: string): readonly SchedulerToWorker[] {
    return this.mailbox(worker);
  }

  /** Worker messages waiting for the scheduler, optionally only those `pick` selects (the rest keep their order). */
  pending(pick: (m: { worker: string; op: WorkerToScheduler }) => boolean = () => true): { worker: string; op: WorkerToScheduler }[] {
    return this.toScheduler.filter(pick);
  }

  deliverToScheduler(pick: (m: { worker: string; op: WorkerToScheduler }) => boolean = () => true): void {
    const chosen = this.toScheduler.filter(pick);
    for (const m of chosen) this.toScheduler.splice(this.toScheduler.indexOf(m), 1);
    for (const { op } of chosen) this.feed(op as SchedulerOp);
  }

  /** Complete every requested transfer from what the peer holds now. */
  deliverGathers(): void {
    for (const { worker, from, keys } of this.gathers.splice(0)) {
      const core = this.workers.get(worker);
      if (core === undefined) continue;
      const peer = this.workers.get(from);
      if (peer === undefined) {
        core.handle({ op: "gather-failed", from, keys, reason: `no worker ${from}`, t: ++this.t } as WorkerInput);
        continue;
      }
      const received = keys.filter((k) => peer.tasks.get(k)?.state === "memory").map((key) => ({ key, nbytes: peer.tasks.get(key)!.nbytes }));
      const missing = keys.filter((k) => !received.some((r) => r.key === k));
      core.handle({ op: "gather-done", from, received, missing, t: ++this.t } as WorkerInput);
    }
  }

  /** Deliver messages and transfers until none is left (tasks keep running until finished). */
  settle(): void {
    for (let round = 0; round < 1000; round++) {
      if (this.toScheduler.length === 0 && this.gathers.length === 0 && [...this.toWorkers.values()].every((q) => q.length === 0)) return;
      this.deliverToWorkers();
      this.deliverGathers();
      this.deliverToScheduler();
    }
    throw new Error("mini cluster: messages kept flowing for 1000 rounds");
  }

  /** The worker finishes `key` (it must be running there). */
  finish(worker: string, key: string, nbytes = 8): void {
    if (!this.running.get(worker)?.delete(key)) throw new Error(`${key} is not running on ${worker}`);
    this.workers.get(worker)!.handle({ op: "execute-done", key, nbytes, start: 0, stop: 1, t: ++this.t } as WorkerInput);
  }

  /** Keys whose execution started on `worker` and has not finished. */
  runningOn(worker: string): string[] {
    return [...(this.running.get(worker) ?? [])];
  }

  task(key: string): TaskRec {
    const ts = this.scheduler.tasks.get(key);
    if (ts === undefined) throw new Error(`no task ${key}`);
    return ts;
  }

  worker(name: string): WorkerRec {
    return this.scheduler.workers.get(name)!;
  }

  /** Dask's `steal.move_task_request(ts, victim, thief)`. */
  moveTaskRequest(key: string, victim: string, thief: string): string | null {
    return this.scheduler.stealing!.moveTaskRequest(this.task(key), this.worker(victim), this.worker(thief));
  }

  /** Finish whatever is executing, settle, and repeat until nothing runs. */
  runToCompletion(): void {
    for (let round = 0; round < 10_000; round++) {
      this.settle();
      const running = [...this.workers.keys()].flatMap((w) => this.runningOn(w).map((k) => [w, k] as const));
      if (running.length === 0) return;
      for (const [w, k] of running) this.finish(w, k);
    }
    throw new Error("mini cluster: tasks kept running");
  }

  /** Scheduler transitions of `key`, as "EVENT from->to". */
  story(key: string): string[] {
    return this.transitions.filter((r) => r.actor === "scheduler" && r.id === key).map((r) => `${r.event} ${r.from}->${r.to}`);
  }
}

/** No in-flight correction is left over. */
export function correctionsAreZero(cluster: MiniCluster): boolean {
  const { occupancy, tasks } = cluster.scheduler.stealing!.inFlightCorrections();
  return [...occupancy.values()].every((v) => v === 0) && [...tasks.values()].every((v) => v === 0);
}
