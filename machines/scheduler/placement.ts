import type { Config } from "../config.js";
import type { PlacementWhy, WhyOf, WithoutWorker } from "../reasons.js";
import { adaptiveSlotCount, adaptiveSlots, fixedSlots } from "./saturation.js";
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
  /** Transfer bandwidth estimate, bytes/s (config.bandwidth until workers measure it). */
  readonly bandwidth: number;
  /** Tasks assigned so far: drives the round-robin among equally idle workers. */
  readonly nAssigned: number;
  taskDuration(ts: TaskRec): number;
  dataSize(ts: TaskRec): number;
}

/** A worker and the reasons it was chosen (machines/reasons.ts), or none and why. */
export type Decision = { worker: WorkerRec; why: PlacementWhy } | { worker: null; why: WhyOf<"no-candidate"> };

/** What decideNonRootish decides by: no root-ish rule. */
export type NonRootishDecision = { worker: WorkerRec; why: WithoutWorker<WhyOf<"objective" | "only-candidate" | "least-occupied">> } | { worker: null; why: WhyOf<"no-candidate"> };

const ONLY_CANDIDATE: WithoutWorker<WhyOf<"only-candidate">> = Object.freeze({ rule: "only-candidate" });
const NO_CANDIDATE: WhyOf<"no-candidate"> = Object.freeze({ rule: "no-candidate" });

/**
 * The reasons keep at most this many candidates, best first (the winner is the first);
 * `n` gives the number of candidates when there were more. Seconds are rounded to the
 * microsecond to keep log lines short.
 */
export const LOGGED_CANDIDATES = 5;

const micro = (seconds: number): number => Math.round(seconds * 1e6) / 1e6;

/** Insert `entry` into `top` (sorted best first, at most LOGGED_CANDIDATES long). */
function keepBest<T>(top: T[], entry: T, better: (a: T, b: T) => boolean): void {
  let i = top.length;
  while (i > 0 && better(entry, top[i - 1]!)) i--;
  if (i >= LOGGED_CANDIDATES) return;
  top.splice(i, 0, entry);
  if (top.length > LOGGED_CANDIDATES) top.pop();
}

/** The reasons of a choice among several candidates (a single candidate needs no list, unless `always`). */
function withCandidates<R extends string, C, E extends object = {}>(
  rule: R,
  candidates: C[],
  n: number,
  extra?: E,
  always = false,
): { rule: R } & E & { candidates?: C[]; n?: number } {
  if (n <= 1 && !always) return (extra === undefined ? { rule } : { rule, ...extra }) as { rule: R } & E;
  const why: { rule: R } & E & { candidates: C[]; n?: number } = { rule, ...(extra as E), candidates };
  if (n > candidates.length) why.n = n;
  return why;
}

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
  return isRootishGroup(ctx, ts) && inputsKeptLocal(ctx, ts) === null;
}

/** Dask's heuristic alone, without natsched's guard on large inputs. */
export function isRootishGroup(ctx: PlacementContext, ts: TaskRec): boolean {
  if (hasRestrictions(ts)) return false;
  const tg = ts.group;
  if (tg.size <= ctx.totalNthreads * 2) return false;
  if (tg.dependencies.size >= 5) return false;
  let across = 0;
  for (const dg of tg.dependencies) across += dg.size;
  return across < 5;
}

/** Why a root-ish group's task stays with its inputs: seconds to copy them, against the work a copy would let a worker take. */
export interface InputsKeptLocal {
  copy: number;
  share: number;
}

/**
 * natsched's guard on `is_rootish` (config `rootishInputLocality`; Dask has none). Spreading
 * a root-ish group over the cluster copies the task's inputs to every worker that runs one.
 * The task stays with its inputs (placed as a non-root-ish task, where they are) when a copy
 * would take longer than the work it lets a worker take: the group's tasks per thread times
 * the prefix's duration; while that duration is a pure guess (nothing of the prefix measured
 * nor seen running), longer than the guessed duration of one task, so that no data moves on
 * a guess (the same rule as stealing's). Dask copies a 200 MB input to every worker for
 * tasks of 1 ms (the bad-steal benchmark, W4); small inputs (the usual root-ish case) never
 * trip the guard. Null: spread as Dask does.
 */
export function inputsKeptLocal(ctx: PlacementContext, ts: TaskRec): InputsKeptLocal | null {
  if (ts.dependencies.length === 0 || !ctx.config.rootishInputLocality) return null;
  let bytes = 0;
  for (const dts of ts.dependencies) {
    if (dts.whoHas.size < ctx.running.length) bytes += ctx.dataSize(dts); // on every worker already: nothing to copy
  }
  const copy = bytes / ctx.bandwidth;
  const prefix = ts.prefix;
  const duration = ctx.taskDuration(ts);
  const guess = prefix.durationAverage < 0 && prefix.maxExecTime <= 0;
  const share = guess ? duration : (ts.group.size / Math.max(ctx.totalNthreads, 1)) * duration;
  return copy > share ? { copy: micro(copy), share: micro(share) } : null;
}

/** A non-root-ish decision for a root-ish task kept with its inputs (inputsKeptLocal): its reasons say so. */
export function keptWithInputs(decision: NonRootishDecision, kept: InputsKeptLocal): Decision {
  return decision.worker === null
    ? { worker: null, why: { ...decision.why, inputsKeptLocal: kept } }
    : { worker: decision.worker, why: { ...decision.why, inputsKeptLocal: kept } };
}

/** Bytes of the dependencies `ws` lacks (estimated where a size is not known yet). */
export function missingBytes(ctx: PlacementContext, ts: TaskRec, ws: WorkerRec): number {
  let bytes = 0;
  for (const dts of ts.dependencies) {
    if (!dts.whoHas.has(ws)) bytes += ctx.dataSize(dts);
  }
  return bytes;
}

/** Estimated seconds to move the dependencies `ws` lacks. */
export function commCost(ctx: PlacementContext, ts: TaskRec, ws: WorkerRec): number {
  return missingBytes(ctx, ts, ws) / ctx.bandwidth;
}

/** (estimated start time, bytes stored): smaller is better, compared in that order. */
export function workerObjective(ctx: PlacementContext, ts: TaskRec, ws: WorkerRec): [number, number] {
  const stackTime = ws.occupancy / ws.nthreads;
  return [stackTime + commCost(ctx, ts, ws), ws.nbytes];
}

function objectiveLess(a: [number, number], b: [number, number]): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

interface Scored {
  ws: WorkerRec;
  stack: number;
  missing: number;
  score: [number, number];
}

const scoredBetter = (a: Scored, b: Scored): boolean =>
  objectiveLess(a.score, b.score) || (!objectiveLess(b.score, a.score) && a.ws.order < b.ws.order);

/**
 * The candidate where the task would start soonest: occupancy / nthreads + missing bytes /
 * bandwidth, then the fewest bytes held. Reasons: `candidates` as [name, occupancy /
 * nthreads, missing bytes, nbytes held], best first.
 */
function byObjective(ctx: PlacementContext, ts: TaskRec, candidates: Iterable<WorkerRec>): NonRootishDecision {
  let best: Scored | null = null;
  const top: Scored[] = [];
  let n = 0;
  for (const ws of candidates) {
    n += 1;
    const stack = ws.occupancy / ws.nthreads;
    const missing = missingBytes(ctx, ts, ws);
    const scored: Scored = { ws, stack, missing, score: [stack + missing / ctx.bandwidth, ws.nbytes] };
    if (best === null || scoredBetter(scored, best)) best = scored;
    keepBest(top, scored, scoredBetter);
  }
  if (best === null) return { worker: null, why: NO_CANDIDATE }; // no candidates: decideWorker never asks with fewer than two
  const listed = top.map((c): [string, number, number, number] => [c.ws.name, micro(c.stack), c.missing, c.ws.nbytes]);
  return { worker: best.ws, why: withCandidates("objective", listed, n) };
}

/**
 * Dask's `decide_worker`: the pool is the workers holding a dependency (within the valid
 * workers, if restricted), else the valid workers, else (loose restrictions) anyone; the
 * winner is the worker where the task would start soonest.
 */
export function decideWorker(ctx: PlacementContext, ts: TaskRec, valid: Set<WorkerRec> | null): NonRootishDecision {
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
export function decideNonRootish(ctx: PlacementContext, ts: TaskRec): NonRootishDecision {
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
  return { worker: ws, why: leastOccupiedWhy("least-occupied", pool, ws, (w) => w.occupancy, undefined) };
}

/**
 * Reasons of a pick by a load figure: `candidates` as [name, load], the winner first, then
 * the least loaded others (ties broken round-robin or by join order, so the winner need not
 * be the first of equals).
 */
function leastOccupiedWhy<R extends string, E extends object = {}>(rule: R, pool: Iterable<WorkerRec>, chosen: WorkerRec, load: (ws: WorkerRec) => number, extra: E | undefined, always = false) {
  const top: WorkerRec[] = [chosen];
  let n = 0;
  const better = (a: WorkerRec, b: WorkerRec) => b !== chosen && (load(a) < load(b) || (load(a) === load(b) && a.order < b.order));
  for (const ws of pool) {
    n += 1;
    if (ws !== chosen) keepBest(top, ws, better);
  }
  return withCandidates(rule, top.map((ws): [string, number] => [ws.name, micro(load(ws))]), n, extra, always);
}

/** Queue slots a worker has: max(ceil(saturation * nthreads), 1) minus what it processes. */
export function taskSlotsAvailable(ws: WorkerRec, saturation: number): number {
  return fixedSlots(ws, saturation) - ws.processing.size;
}

/**
 * Dask's `decide_worker_rootish_queuing_enabled`: a worker with a free slot, or none (queue
 * it). Reasons: rule "rootish-queuing", `candidates` as [name, tasks processing / nthreads].
 * Adaptive saturation counts each worker's slots for the task's own group (saturation.ts),
 * and the reasons add the winner's `saturation`.
 */
export function decideRootishQueuing(ctx: PlacementContext, ts: TaskRec): Decision {
  let pool: Iterable<WorkerRec> = ctx.idleTaskCount;
  let best: WorkerRec | null = null;
  let bestLoad = Infinity;
  const adaptive = ctx.config.workerSaturation === "adaptive";
  const leaf = ts.dependents.size === 0;
  if (adaptive) {
    const open: WorkerRec[] = [];
    for (const ws of ctx.running) {
      if (adaptiveSlotCount(ctx.config, ws, ts.group, leaf) <= ws.processing.size) continue;
      open.push(ws);
      const load = ws.processing.size / ws.nthreads;
      if (load < bestLoad || (load === bestLoad && best !== null && ws.order < best.order)) {
        best = ws;
        bestLoad = load;
      }
    }
    pool = open;
  } else {
    for (const ws of pool) {
      const load = ws.processing.size / ws.nthreads;
      if (load < bestLoad || (load === bestLoad && best !== null && ws.order < best.order)) {
        best = ws;
        bestLoad = load;
      }
    }
  }
  if (best === null) return { worker: null, why: NO_CANDIDATE };
  // The reasons of the winner's count only: the others' are counted, not explained.
  const extra = adaptive ? { saturation: adaptiveSlots(ctx.config, best, ts.group, leaf) } : undefined;
  return { worker: best, why: leastOccupiedWhy("rootish-queuing", pool, best, (ws) => ws.processing.size / ws.nthreads, extra) };
}

/**
 * Dask's `decide_worker_rootish_queuing_disabled` (co-assignment): consecutive root tasks in
 * priority order go to the same worker, a share of the group proportional to its threads,
 * then the worker where the next task would start soonest (`worker_objective`) takes over.
 * The group forgets its last worker on its final unscheduled task, so a later submission to
 * the same group starts afresh.
 */
export function decideRootishCoassign(ctx: PlacementContext, ts: TaskRec): Decision {
  const tg = ts.group;
  const last = tg.lastWorker;
  let ws: WorkerRec;
  let pool: WorkerRec[] | null = null;
  if (last !== null && tg.lastWorkerTasksLeft > 0 && last.state === "running") {
    ws = last;
  } else {
    pool = ctx.idle.size > 0 ? [...ctx.idle] : [...ctx.running];
    if (pool.length === 0) return { worker: null, why: NO_CANDIDATE };
    ws = pool[0]!;
    let best = workerObjective(ctx, ts, ws);
    for (const w of pool) {
      const score = workerObjective(ctx, ts, w);
      if (objectiveLess(score, best) || (!objectiveLess(best, score) && w.order < ws.order)) {
        ws = w;
        best = score;
      }
    }
    tg.lastWorkerTasksLeft = Math.floor((tg.size / ctx.totalNthreads) * ws.nthreads);
  }
  // `pending` still counts this task: it is the group's last unscheduled one when it is 1.
  tg.lastWorker = tg.pending > 1 ? ws : null;
  tg.lastWorkerTasksLeft -= 1;
  // A new run of the group starts: the reasons list the workers it was chosen among (even
  // one), as [name, start-soonest objective]; a continued run only says how many more follow.
  const left = { left: tg.lastWorkerTasksLeft };
  return { worker: ws, why: pool === null ? { rule: "co-assign", ...left } : leastOccupiedWhy("co-assign", pool, ws, (w) => workerObjective(ctx, ts, w)[0], left, true) };
}
