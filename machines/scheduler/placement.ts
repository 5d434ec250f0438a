import type { Config } from "../config.js";
import type { TaskRec, WorkerRec } from "./state.js";

/**
 * Worker selection, after Dask's `decide_worker*` and `worker_objective`. Pure functions
 * over the scheduler's state; each returns the reasons of its choice for the event log.
 */
export interface PlacementContext {
  readonly config: Config;
  /** Running workers in join order. */
  readonly running: readonly WorkerRec[];
  readonly idle: ReadonlySet<WorkerRec>;
  /** Running workers with a free queuing slot. */
  readonly idleTaskCount: ReadonlySet<WorkerRec>;
  readonly totalNthreads: number;
  /** Tasks assigned so far: drives the round-robin among equally idle workers. */
  readonly nAssigned: number;
  taskDuration(ts: TaskRec): number;
  dataSize(ts: TaskRec): number;
}

export type Why = Record<string, unknown>;

export interface Decision {
  worker: WorkerRec | null;
  why: Why;
}

const LEAST_OCCUPIED: Why = Object.freeze({ rule: "least-occupied" });
const ONLY_CANDIDATE: Why = Object.freeze({ rule: "only-candidate" });
const NO_CANDIDATE: Why = Object.freeze({ rule: "no-candidate" });

export function hasRestrictions(ts: TaskRec): boolean {
  const r = ts.restrictions;
  return r !== null && (r.workers !== undefined || r.hosts !== undefined || r.resources !== undefined);
}

/** Workers allowed by the task's hard restrictions; null when it has none. */
export function validWorkers(ctx: PlacementContext, ts: TaskRec): Set<WorkerRec> | null {
  const r = ts.restrictions;
  if (r === null || !hasRestrictions(ts)) return null;
  const out = new Set<WorkerRec>();
  for (const ws of ctx.running) {
    if (r.workers !== undefined && !r.workers.includes(ws.name)) continue;
    if (r.hosts !== undefined && !r.hosts.includes(ws.host)) continue;
    if (r.resources !== undefined && !suppliesResources(ws, r.resources)) continue;
    out.add(ws);
  }
  return out;
}

function suppliesResources(ws: WorkerRec, required: Record<string, number>): boolean {
  for (const [name, amount] of Object.entries(required)) {
    if ((ws.resources[name] ?? 0) < amount) return false;
  }
  return true;
}

/**
 * Dask's `is_rootish`: a large task group (more than twice the cluster's threads) with few
 * and small dependency groups, and no restrictions.
 */
export function isRootish(ctx: PlacementContext, ts: TaskRec): boolean {
  if (hasRestrictions(ts)) return false;
  const tg = ts.group;
  if (tg.size <= ctx.totalNthreads * 2) return false;
  if (tg.dependencies.size >= 5) return false;
  let across = 0;
  for (const dg of tg.dependencies) across += dg.size;
  return across < 5;
}

/** Estimated seconds to move the dependencies `ws` lacks. */
export function commCost(ctx: PlacementContext, ts: TaskRec, ws: WorkerRec): number {
  let bytes = 0;
  for (const dts of ts.dependencies) {
    if (!dts.whoHas.has(ws)) bytes += ctx.dataSize(dts);
  }
  return bytes / ctx.config.bandwidth;
}

/** (estimated start time, bytes stored): smaller is better, compared in that order. */
export function workerObjective(ctx: PlacementContext, ts: TaskRec, ws: WorkerRec): [number, number] {
  const stackTime = ws.occupancy / ws.nthreads;
  return [stackTime + commCost(ctx, ts, ws), ws.nbytes];
}

function objectiveLess(a: [number, number], b: [number, number]): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

function byObjective(ctx: PlacementContext, ts: TaskRec, candidates: Iterable<WorkerRec>): Decision {
  let best: WorkerRec | null = null;
  let bestScore: [number, number] = [Infinity, Infinity];
  const scored: [string, number, number][] = [];
  for (const ws of candidates) {
    const score = workerObjective(ctx, ts, ws);
    scored.push([ws.name, score[0], score[1]]);
    if (best === null || objectiveLess(score, bestScore) || (!objectiveLess(bestScore, score) && ws.order < best.order)) {
      best = ws;
      bestScore = score;
    }
  }
  return { worker: best, why: { rule: "objective", candidates: scored } };
}

/**
 * Dask's `decide_worker`: the pool is the workers holding a dependency (within the valid
 * workers, if restricted), else the valid workers, else (loose restrictions) anyone; the
 * winner is the worker where the task would start soonest.
 */
export function decideWorker(ctx: PlacementContext, ts: TaskRec, valid: Set<WorkerRec> | null): Decision {
  const candidates = new Set<WorkerRec>();
  for (const dts of ts.dependencies) {
    for (const ws of dts.whoHas) if (ws.state === "running") candidates.add(ws);
  }
  if (valid === null) {
    if (candidates.size === 0) for (const ws of ctx.running) candidates.add(ws);
  } else {
    for (const ws of candidates) if (!valid.has(ws)) candidates.delete(ws);
    if (candidates.size === 0) {
      for (const ws of valid) candidates.add(ws);
      if (candidates.size === 0) {
        if (ts.restrictions?.allowOtherWorkers) return decideWorker(ctx, ts, null);
        return { worker: null, why: NO_CANDIDATE };
      }
    }
  }
  if (candidates.size === 0) return { worker: null, why: NO_CANDIDATE };
  if (candidates.size === 1) return { worker: candidates.values().next().value!, why: ONLY_CANDIDATE };
  return byObjective(ctx, ts, candidates);
}

/** Dask's `decide_worker_non_rootish`. */
export function decideNonRootish(ctx: PlacementContext, ts: TaskRec): Decision {
  const valid = validWorkers(ctx, ts);
  if (ts.dependencies.length > 0 || valid !== null) return decideWorker(ctx, ts, valid);
  if (ctx.running.length === 0) return { worker: null, why: NO_CANDIDATE };
  // No dependencies, no restrictions: the least occupied worker, round-robin among idle ones.
  const pool = ctx.idle.size > 0 ? [...ctx.idle].sort((a, b) => a.order - b.order) : ctx.running;
  let ws = pool[0]!;
  for (const w of pool) if (w.occupancy < ws.occupancy) ws = w;
  if (ws.occupancy === 0) {
    const start = ctx.nAssigned % pool.length;
    for (let i = 0; i < pool.length; i++) {
      const candidate = pool[(i + start) % pool.length]!;
      if (candidate.occupancy === 0) {
        ws = candidate;
        break;
      }
    }
  }
  return { worker: ws, why: LEAST_OCCUPIED };
}

/** Queue slots a worker has: max(ceil(saturation * nthreads), 1) minus what it processes. */
export function taskSlotsAvailable(ws: WorkerRec, saturation: number): number {
  return Math.max(Math.ceil(saturation * ws.nthreads), 1) - ws.processing.size;
}

/** Dask's `decide_worker_rootish_queuing_enabled`: a worker with a free slot, or none (queue it). */
export function decideRootishQueuing(ctx: PlacementContext): Decision {
  let best: WorkerRec | null = null;
  let bestLoad = Infinity;
  for (const ws of ctx.idleTaskCount) {
    const load = ws.processing.size / ws.nthreads;
    if (load < bestLoad || (load === bestLoad && best !== null && ws.order < best.order)) {
      best = ws;
      bestLoad = load;
    }
  }
  return { worker: best, why: best === null ? NO_CANDIDATE : LEAST_OCCUPIED };
}

/**
 * Dask's `decide_worker_rootish_queuing_disabled` (co-assignment): consecutive root tasks in
 * priority order go to the same worker, a share of the group proportional to its threads,
 * then the next least busy worker takes over.
 */
export function decideRootishCoassign(ctx: PlacementContext, ts: TaskRec): Decision {
  const tg = ts.group;
  const last = tg.lastWorker;
  let ws: WorkerRec;
  if (last !== null && tg.lastWorkerTasksLeft > 0 && last.state === "running") {
    ws = last;
  } else {
    const pool = ctx.idle.size > 0 ? [...ctx.idle] : [...ctx.running];
    if (pool.length === 0) return { worker: null, why: NO_CANDIDATE };
    ws = pool[0]!;
    for (const w of pool) {
      const a = w.occupancy / w.nthreads;
      const b = ws.occupancy / ws.nthreads;
      if (a < b || (a === b && w.order < ws.order)) ws = w;
    }
    tg.lastWorkerTasksLeft = Math.floor((tg.size / ctx.totalNthreads) * ws.nthreads);
  }
  tg.lastWorker = ws;
  tg.lastWorkerTasksLeft -= 1;
  return { worker: ws, why: { rule: "co-assign", left: tg.lastWorkerTasksLeft } };
}
