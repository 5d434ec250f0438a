import type { SchedulerToWorker } from "../protocol.js";
import type { TaskRec, WorkerRec } from "./state.js";

/** What retirement needs of the scheduler core. */
export interface RetireHost {
  readonly tasks: ReadonlyMap<string, TaskRec>;
  readonly workers: ReadonlyMap<string, WorkerRec>;
  /** Workers taking work and data, in join order (a retiring worker is not among them). */
  readonly running: readonly WorkerRec[];
  /** Sends free-keys, stamped with the run and the latest assignment number. */
  freeKeys(worker: string, keys: string[]): void;
  /** The scheduler names `ts` to `ws` (here: a copy to take). */
  namedTo(ts: TaskRec, ws: WorkerRec): void;
}

interface Retirement {
  reason: string;
  /** Keys only the retiring worker holds -> the worker asked to copy them. */
  readonly handovers: Map<TaskRec, WorkerRec>;
  /** Keys nobody could take: lost when the worker leaves. */
  unsaved: number;
}

/**
 * Graceful retirement (Dask's `retire_workers`): the data only a retiring worker holds is
 * copied to running workers before the worker is told to close, so its unregister loses
 * nothing. The core takes the worker out of placement and reschedules its tasks; this
 * tracks the handovers: which recipient copies which key, another one if a recipient
 * leaves, a key dropped when it is released meanwhile, and close-worker once none is left.
 */
export class Retirements {
  private readonly pending = new Map<WorkerRec, Retirement>();

  constructor(
    private readonly host: RetireHost,
    private readonly send: (worker: string, op: SchedulerToWorker) => void,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  /** Keys still being copied off `ws` (for queries and tests). */
  handoversOf(ws: WorkerRec): ReadonlyMap<TaskRec, WorkerRec> | undefined {
    return this.pending.get(ws)?.handovers;
  }

  /** Whether `ws` is copying `ts` off a retiring worker (acquire-replicas). */
  isRecipient(ts: TaskRec, ws: WorkerRec): boolean {
    for (const retirement of this.pending.values()) if (retirement.handovers.get(ts) === ws) return true;
    return false;
  }

  /** `ws` was just taken out of placement: hand over what only it holds, or close it at once. */
  begin(ws: WorkerRec, reason: string): void {
    const retirement: Retirement = { reason, handovers: new Map(), unsaved: 0 };
    const booked = new Map<WorkerRec, number>();
    const batches = new Map<WorkerRec, TaskRec[]>();
    for (const ts of ws.hasWhat) {
      if (ts.state !== "memory" || this.heldElsewhere(ts, ws)) continue;
      const recipient = this.pickRecipient(booked, ts);
      if (recipient === null) {
        retirement.unsaved += 1;
        continue;
      }
      retirement.handovers.set(ts, recipient);
      push(batches, recipient, ts);
    }
    this.pending.set(ws, retirement);
    this.sendBatches(batches);
    if (retirement.handovers.size === 0) this.finish(ws, retirement);
  }

  /** `ws` left (unregistered or lost): a retirement of its own ends; nothing is copied off it any more. */
  workerGone(ws: WorkerRec): void {
    const retirement = this.pending.get(ws);
    if (retirement === undefined) return;
    this.pending.delete(ws);
    // The recipients would wait for ever on a holder that is gone.
    const byRecipient = new Map<WorkerRec, TaskRec[]>();
    for (const [ts, recipient] of retirement.handovers) if (this.isLive(recipient)) push(byRecipient, recipient, ts);
    for (const [recipient, tasks] of byRecipient) this.freeOn(recipient, tasks);
  }

  /**
   * After each stimulus: a handover is done once a running worker other than the retiring
   * one holds the key; dropped if the key was released (or its copy on the retiring worker
   * is gone); given to another recipient if its recipient left.
   */
  progress(): void {
    if (this.pending.size === 0) return;
    for (const [ws, retirement] of [...this.pending]) {
      const batches = new Map<WorkerRec, TaskRec[]>();
      const dropped = new Map<WorkerRec, TaskRec[]>();
      let booked: Map<WorkerRec, number> | null = null;
      for (const [ts, recipient] of retirement.handovers) {
        const released = this.host.tasks.get(ts.key) !== ts || ts.state !== "memory" || !ts.whoHas.has(ws);
        if (released) {
          retirement.handovers.delete(ts);
          // Unless it was placed on the recipient since (recomputed): then the key is its own.
          if (this.isLive(recipient) && !ts.whoHas.has(recipient) && ts.processingOn !== recipient) push(dropped, recipient, ts);
          continue;
        }
        if (this.heldElsewhere(ts, ws)) {
          retirement.handovers.delete(ts);
          continue;
        }
        if (this.isLive(recipient)) continue;
        booked ??= new Map();
        const next = this.pickRecipient(booked, ts);
        if (next === null) {
          retirement.handovers.delete(ts);
          retirement.unsaved += 1;
          continue;
        }
        retirement.handovers.set(ts, next);
        push(batches, next, ts);
      }
      for (const [recipient, tasks] of dropped) this.freeOn(recipient, tasks);
      this.sendBatches(batches);
      if (retirement.handovers.size === 0) this.finish(ws, retirement);
    }
  }

  private finish(ws: WorkerRec, retirement: Retirement): void {
    this.pending.delete(ws);
    const lost = retirement.unsaved;
    const reason =
      lost === 0
        ? retirement.reason
        : `${retirement.reason} (no other running worker to take ${lost} key${lost === 1 ? "" : "s"} held only here: lost)`;
    this.send(ws.name, { op: "close-worker", reason });
  }

  /** A running worker other than `ws` holds `ts`. */
  private heldElsewhere(ts: TaskRec, ws: WorkerRec): boolean {
    for (const other of ts.whoHas) if (other !== ws && other.state === "running") return true;
    return false;
  }

  private isLive(ws: WorkerRec): boolean {
    return this.host.workers.get(ws.name) === ws && ws.state === "running";
  }

  /** The running worker holding the fewest bytes (counting what it was just handed), then the earliest to join. */
  private pickRecipient(booked: Map<WorkerRec, number>, ts: TaskRec): WorkerRec | null {
    let best: WorkerRec | null = null;
    let bestBytes = Infinity;
    for (const ws of this.host.running) {
      if (ws.state !== "running") continue;
      const bytes = ws.nbytes + (booked.get(ws) ?? 0);
      if (bytes < bestBytes || (bytes === bestBytes && best !== null && ws.order < best.order)) {
        best = ws;
        bestBytes = bytes;
      }
    }
    if (best !== null) booked.set(best, (booked.get(best) ?? 0) + Math.max(ts.nbytes, 0));
    return best;
  }

  private sendBatches(batches: Map<WorkerRec, TaskRec[]>): void {
    for (const [recipient, tasks] of batches) {
      for (const ts of tasks) this.host.namedTo(ts, recipient);
      this.send(recipient.name, {
        op: "acquire-replicas",
        keys: tasks.map((ts) => ({ key: ts.key, nbytes: ts.nbytes, holders: [...ts.whoHas].map((h) => h.name) })),
      });
    }
  }

  private freeOn(recipient: WorkerRec, tasks: TaskRec[]): void {
    this.host.freeKeys(recipient.name, tasks.map((ts) => ts.key));
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}
