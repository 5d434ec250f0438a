import type { Config } from "../config.js";
import { commCost, validWorkers, type PlacementContext } from "./placement.js";
import type { StealRequestWhy } from "../reasons.js";
import type { PrefixRec, TaskRec, WorkerRec } from "./state.js";
import { StealBin } from "./steal-bin.js";

/**
 * Work stealing after Dask's `distributed/stealing.py` (WorkStealing): an index of
 * stealable processing tasks binned by compute-to-communication ratio, a balancing pass
 * that plays idle workers against saturated ones, and the bookkeeping of in-flight
 * requests. The transactional part (steal-request, the victim's confirm/reject, moving the
 * task) is carried out by the scheduler core through `StealHost`, so every step is a task
 * machine transition in the log.
 */
export const LEVELS = 15;

/** Cost factor of each level; level 0 holds tasks without dependencies. */
/** Measured durations after which no level waits for more (enoughEvidence: level 14 waits for 8). */
const FULL_EVIDENCE = LEVELS - 1 - 6;

export const COST_MULTIPLIERS: readonly number[] = [1, ...Array.from({ length: LEVELS - 1 }, (_, i) => 1 + 2 ** (i + 1 - 6))];

export interface InFlight {
  victim: WorkerRec;
  thief: WorkerRec;
  victimDuration: number;
  thiefDuration: number;
  requestId: string;
  level: number;
  /**
   * What justified the request, logged with the STEAL transition and again with its
   * confirm, reject or abort: victim, thief, level, requestId, the estimated costs
   * (compute, commVictim, commThief) and the occupancies (occVictim, occThief).
   */
  why: StealRequestWhy;
}

export interface StealHost extends PlacementContext {
  readonly workers: ReadonlyMap<string, WorkerRec>;
  readonly saturated: ReadonlySet<WorkerRec>;
  readonly totalOccupancy: number;
  /** Move the task to processing.stealing and send the steal request to the victim. */
  requestSteal(ts: TaskRec, info: InFlight, why: StealRequestWhy): void;
  /** Dask's `is_unoccupied`: still a candidate thief at this occupancy and task count. */
  isUnoccupied(ws: WorkerRec, occupancy: number, nprocessing: number): boolean;
  checkIdleSaturated(ws: WorkerRec, occupancy?: number): void;
}

/**
 * Per-level counters (index = level). Every request ends confirmed, rejected or aborted, so
 * requests[l] = confirmed[l] + rejected[l] + aborted[l] + the requests at l still in flight.
 */
export interface StealMetrics {
  requests: number[];
  confirmed: number[];
  rejected: number[];
  /**
   * Requests that ended without moving or keeping the task by the victim's answer: the victim
   * no longer had the assignment (answered `released`), the thief left, or the task left
   * processing.stealing meanwhile (finished, erred, released, its victim left).
   */
  aborted: number[];
  /** Responses that arrived after the request was moot (task released, finished, moved). */
  stale: number;
}

/** Why a task is not stealable, or its cost multiplier and level. */
export type StealRatio = { level: number; costMultiplier: number } | null;

export class WorkStealing {
  private readonly stealable = new Map<WorkerRec, StealBin[]>();
  /** Level each indexed task sits at (absent: not indexed). */
  private readonly levelOf = new Map<TaskRec, number>();
  /** The worker whose bins hold each indexed task. */
  private readonly binnedOn = new Map<TaskRec, WorkerRec>();
  readonly inFlight = new Map<TaskRec, InFlight>();
  readonly inFlightOccupancy = new Map<WorkerRec, number>();
  private readonly inFlightTasks = new Map<WorkerRec, number>();
  /**
   * Tasks with inputs put while their prefix had fewer than FULL_EVIDENCE measured
   * durations, by prefix: their level, or whether they may be indexed at all, can change
   * with the next measurement, so they are put again on each (durationChanged).
   */
  private readonly awaitingEvidence = new Map<string, Set<TaskRec>>();
  private readonly costlyStealEvidence: boolean;
  private readonly fastPrefixes: ReadonlySet<string>;
  private requestCounter = 0;
  readonly metrics: StealMetrics = {
    requests: new Array(LEVELS).fill(0),
    confirmed: new Array(LEVELS).fill(0),
    rejected: new Array(LEVELS).fill(0),
    aborted: new Array(LEVELS).fill(0),
    stale: 0,
  };
  /**
   * Requests whose task left processing (exitProcessing) before any answer: kept until the
   * core logs the task's transition out of processing.stealing (takeAborted), so that
   * transition carries the request's reasons. Empty between stimuli.
   */
  private readonly aborted = new Map<TaskRec, InFlight>();

  constructor(
    private readonly host: StealHost,
    config: Config,
  ) {
    this.costlyStealEvidence = config.costlyStealEvidence;
    this.fastPrefixes = new Set(Object.entries(config.defaultTaskDurations).filter(([, d]) => d <= 0.001).map(([p]) => p));
  }

  addWorker(ws: WorkerRec): void {
    this.stealable.set(ws, Array.from({ length: LEVELS }, () => new StealBin()));
  }

  removeWorker(ws: WorkerRec): void {
    const levels = this.stealable.get(ws);
    if (levels !== undefined) {
      for (const bin of levels) {
        for (const ts of bin.all()) {
          this.levelOf.delete(ts);
          this.binnedOn.delete(ts);
        }
      }
    }
    this.stealable.delete(ws);
  }

  /** Dask's `steal_time_ratio`. */
  stealTimeRatio(ts: TaskRec): StealRatio {
    if (this.fastPrefixes.has(ts.prefix.name)) return null;
    const r = ts.restrictions;
    if (r !== null && !r.allowOtherWorkers && (r.workers !== undefined || r.hosts !== undefined || r.resources !== undefined)) return null;
    if (ts.dependencies.length === 0) return { level: 0, costMultiplier: 0 };
    const compute = this.host.taskDuration(ts);
    if (!(compute > 0)) return null;
    let nbytes = 0;
    for (const dts of ts.dependencies) nbytes += this.host.dataSize(dts);
    const transfer = nbytes / this.host.bandwidth + this.host.config.latency;
    const costMultiplier = transfer / compute;
    let level = Math.round(Math.log2(costMultiplier) + 6);
    if (level < 1) level = 1;
    else if (level >= LEVELS) return null;
    return { level, costMultiplier };
  }

  /**
   * A task entered processing (or moved): index it if it may be stolen (Dask's
   * put_key_in_stealable). Its level comes from its prefix's current estimate: the measured
   * average, or the unknown-task duration, or twice the longest execution reported.
   *
   * One difference from Dask (config `costlyStealEvidence`): a task whose inputs cost more
   * to move than to compute is indexed only once the estimate rests on enough measurements
   * (enoughEvidence); until then it waits, and is put again as its prefix learns durations.
   */
  put(ts: TaskRec): void {
    const ws = ts.processingOn;
    if (ws === null) return;
    this.remove(ts); // a task put again (re-levelled) leaves its old place first
    const prefix = ts.prefix;
    if (ts.dependencies.length > 0 && prefix.samples < FULL_EVIDENCE) {
      let set = this.awaitingEvidence.get(prefix.name);
      if (set === undefined) this.awaitingEvidence.set(prefix.name, (set = new Set()));
      set.add(ts);
    }
    const ratio = this.stealTimeRatio(ts);
    if (ratio === null || !this.enoughEvidence(prefix, ratio)) return;
    const levels = this.stealable.get(ws);
    if (levels === undefined) return;
    levels[ratio.level]!.add(ts);
    this.levelOf.set(ts, ratio.level);
    this.binnedOn.set(ts, ws);
  }

  /**
   * Whether the estimate behind a steal is trusted for what the steal would move. A steal at
   * level 6 + k (inputs costing about 2^k times the compute to move) needs k measured
   * durations of the prefix, and any steal whose inputs cost more than the compute needs one:
   * nothing is moved on the unknown-task guess alone. The first durations of a prefix come
   * from a worker still taking in its burst of work (or compiling the function), and on a
   * shared event loop a 1 ms task measures 5-60 ms; one such sample is enough, under Dask's
   * rule, to copy a 200 MB input to every idle worker (the bad-steal benchmark, W4). The
   * more a steal would move, the more measurements it waits for; the EMA of a few honest
   * ones brings the level back where it belongs. A configured duration counts as measured.
   */
  private enoughEvidence(prefix: PrefixRec, ratio: { level: number; costMultiplier: number }): boolean {
    if (!this.costlyStealEvidence || ratio.costMultiplier < 1) return true;
    return prefix.samples >= Math.max(1, ratio.level - 6);
  }

  remove(ts: TaskRec): void {
    this.awaitingEvidence.get(ts.prefix.name)?.delete(ts);
    const level = this.levelOf.get(ts);
    if (level === undefined) return;
    this.levelOf.delete(ts);
    // The bin is found through the worker the task was put on: by the time a task leaves
    // processing, the core may already have cleared ts.processingOn.
    const ws = this.binnedOn.get(ts);
    this.binnedOn.delete(ts);
    if (ws !== undefined) this.stealable.get(ws)?.[level]!.delete(ts);
  }

  /** A task left processing (finished, erred, released, its worker left). */
  exitProcessing(ts: TaskRec): void {
    this.remove(ts);
    const info = this.removeInFlight(ts);
    if (info !== undefined) this.aborted.set(ts, info);
  }

  /**
   * The request of a task leaving processing.stealing other than by its answer, if
   * exitProcessing ended it: counted as aborted, and its reasons returned for the log.
   */
  takeAborted(ts: TaskRec): InFlight | undefined {
    const info = this.aborted.get(ts);
    if (info === undefined) return undefined;
    this.aborted.delete(ts);
    this.count("aborted", info.level);
    return info;
  }

  /** Aborted requests not logged yet (0 after every stimulus; the DST checks it). */
  get abortedPending(): number {
    return this.aborted.size;
  }

  /** A prefix learned a duration, or reported executions changed its estimate: put its waiting tasks again. */
  durationChanged(prefix: PrefixRec): void {
    // Past FULL_EVIDENCE samples no task of the prefix waits (put tracks none): the common case, one comparison.
    if (prefix.samples > FULL_EVIDENCE) return;
    const tasks = this.awaitingEvidence.get(prefix.name);
    if (tasks === undefined) return;
    this.awaitingEvidence.delete(prefix.name);
    for (const ts of tasks) {
      if (ts.processingOn === null || this.inFlight.has(ts)) continue;
      this.remove(ts);
      this.put(ts);
    }
  }

  isStealable(ts: TaskRec): boolean {
    return this.levelOf.has(ts);
  }

  nextRequestId(): string {
    return `steal-${this.requestCounter++}`;
  }

  addInFlight(ts: TaskRec, info: InFlight): void {
    this.inFlight.set(ts, info);
    add(this.inFlightOccupancy, info.victim, -info.victimDuration);
    add(this.inFlightOccupancy, info.thief, info.thiefDuration);
    add(this.inFlightTasks, info.victim, -1);
    add(this.inFlightTasks, info.thief, 1);
    this.count("requests", info.level);
  }

  /** Count a request or an outcome at its level (a task moved by hand outside the index has level -1: not counted). */
  count(metric: "requests" | "confirmed" | "rejected" | "aborted", level: number): void {
    if (level >= 0 && level < LEVELS) this.metrics[metric][level]! += 1;
  }

  removeInFlight(ts: TaskRec): InFlight | undefined {
    const info = this.inFlight.get(ts);
    if (info === undefined) return undefined;
    this.inFlight.delete(ts);
    add(this.inFlightOccupancy, info.thief, -info.thiefDuration);
    add(this.inFlightOccupancy, info.victim, info.victimDuration);
    add(this.inFlightTasks, info.victim, 1);
    add(this.inFlightTasks, info.thief, -1);
    if (this.inFlight.size === 0) {
      // Nothing in flight: the corrections must be exactly zero, not float residue.
      this.inFlightOccupancy.clear();
      this.inFlightTasks.clear();
    }
    return info;
  }

  combinedOccupancy(ws: WorkerRec, occupancies?: ReadonlyMap<WorkerRec, number>): number {
    return (occupancies?.get(ws) ?? ws.occupancy) + (this.inFlightOccupancy.get(ws) ?? 0);
  }

  combinedNprocessing(ws: WorkerRec): number {
    return ws.processing.size + (this.inFlightTasks.get(ws) ?? 0);
  }

  /** Worth running a pass: some workers idle, not all, and someone with a backlog. */
  wantsBalance(): boolean {
    const host = this.host;
    if (host.idle.size === 0 || host.idle.size >= host.running.length) return false;
    if (host.saturated.size > 0) return true;
    for (const ws of host.running) {
      if (this.combinedNprocessing(ws) > ws.nthreads && !host.idle.has(ws)) return true;
    }
    return false;
  }

  /**
   * Dask's `WorkStealing.balance`, one pass. Deviation, for an O(stolen + levels) pass: a
   * victim's level is left at the first task whose steal does not pay (its neighbours in
   * the level have about the same ratio), where Dask tries every task of the level.
   */
  balance(): void {
    const host = this.host;
    const occupancies = new Map<WorkerRec, number>();
    for (const ws of host.running) occupancies.set(ws, ws.occupancy);
    const combined = (ws: WorkerRec) => this.combinedOccupancy(ws, occupancies);
    const thieves = new Set([...host.idle].sort((a, b) => a.order - b.order));
    if (thieves.size === 0 || thieves.size >= host.running.length) return;
    let victims: WorkerRec[];
    if (host.saturated.size > 0) {
      victims = [...host.saturated];
    } else {
      victims = [...host.running]
        .sort((a, b) => combined(b) - combined(a) || a.order - b.order)
        .slice(0, 10)
        .filter((ws) => combined(ws) > 0.2 && this.combinedNprocessing(ws) > ws.nthreads && !thieves.has(ws));
      if (victims.length === 0) return;
    }
    victims.sort((a, b) => combined(b) - combined(a) || a.order - b.order);

    for (let level = 0; level < LEVELS && thieves.size > 0; level++) {
      for (const victim of victims) {
        if (thieves.size === 0) break;
        const stealable = this.stealable.get(victim)?.[level];
        if (stealable === undefined || stealable.size === 0) continue;
        for (const ts of stealable.newestFirst()) {
          if (thieves.size === 0) break;
          if (ts.processingOn !== victim || this.levelOf.get(ts) !== level) {
            stealable.delete(ts);
            continue;
          }
          const thief = this.pickThief(ts, thieves, occupancies);
          if (thief === null) continue;
          const occThief = combined(thief);
          const occVictim = combined(victim);
          const commThief = commCost(host, ts, thief);
          const commVictim = commCost(host, ts, victim);
          const compute = host.taskDuration(ts);
          if (occThief + commThief + compute > occVictim - (commVictim + compute) / 2) break;
          this.moveTaskRequest(ts, victim, thief, level, { occVictim, occThief });
          if (!host.isUnoccupied(thief, combined(thief), this.combinedNprocessing(thief))) thieves.delete(thief);
        }
        host.checkIdleSaturated(victim, combined(victim));
      }
    }
  }

  /**
   * Dask's `move_task_request`: ask `victim` to give `ts` up for `thief`, booking the
   * in-flight corrections. The first request for a task wins: while one is in flight (or
   * the task is not processing on `victim`) this does nothing and returns null; otherwise
   * the request id. `extra` joins the reasons logged with the STEAL transition.
   */
  moveTaskRequest(
    ts: TaskRec,
    victim: WorkerRec,
    thief: WorkerRec,
    level = this.levelOf.get(ts) ?? this.stealTimeRatio(ts)?.level ?? -1,
    extra: Partial<Pick<StealRequestWhy, "occVictim" | "occThief">> = {},
  ): string | null {
    if (this.inFlight.has(ts) || ts.processingOn !== victim || ts.state !== "processing.assigned") return null;
    const host = this.host;
    const compute = host.taskDuration(ts);
    const commVictim = commCost(host, ts, victim);
    const commThief = commCost(host, ts, thief);
    const requestId = this.nextRequestId();
    const why: StealRequestWhy = {
      victim: victim.name,
      thief: thief.name,
      level,
      requestId,
      compute,
      commVictim,
      commThief,
      // The balancing pass passes the occupancies it decided on; a request made by hand gets the current ones.
      occVictim: this.combinedOccupancy(victim),
      occThief: this.combinedOccupancy(thief),
      ...extra,
    };
    const info: InFlight = {
      victim,
      thief,
      victimDuration: compute + commVictim,
      thiefDuration: compute + commThief,
      requestId,
      level,
      why,
    };
    this.remove(ts);
    this.addInFlight(ts, info);
    host.requestSteal(ts, info, why);
    return requestId;
  }

  /**
   * Read-only view of the in-flight corrections: per worker, the occupancy and task count
   * the pending requests move (victims negative, thieves positive). Both are empty whenever
   * nothing is in flight.
   */
  inFlightCorrections(): { occupancy: ReadonlyMap<WorkerRec, number>; tasks: ReadonlyMap<WorkerRec, number> } {
    return { occupancy: this.inFlightOccupancy, tasks: this.inFlightTasks };
  }

  /** How many tasks the stealable index holds (all workers, all levels). */
  get stealableCount(): number {
    return this.levelOf.size;
  }

  /** Entries in the per-worker level bins, counted bin by bin (equals stealableCount when nothing leaked). */
  get binnedCount(): number {
    let n = 0;
    for (const levels of this.stealable.values()) for (const bin of levels) n += bin.size;
    return n;
  }

  /** Dask's `_get_thief`: the candidate where the task would start soonest. */
  private pickThief(ts: TaskRec, thieves: Set<WorkerRec>, occupancies: ReadonlyMap<WorkerRec, number>): WorkerRec | null {
    let pool: Iterable<WorkerRec> = thieves;
    const valid = validWorkers(this.host, ts);
    if (valid !== null) {
      const within = [...thieves].filter((ws) => valid.has(ws));
      if (within.length > 0) pool = within;
      else if (!ts.restrictions?.allowOtherWorkers) return null;
    }
    let best: WorkerRec | null = null;
    let bestStart = Infinity;
    let bestBytes = Infinity;
    for (const ws of pool) {
      const start = this.combinedOccupancy(ws, occupancies) / ws.nthreads + commCost(this.host, ts, ws);
      if (start < bestStart || (start === bestStart && (ws.nbytes < bestBytes || (ws.nbytes === bestBytes && best !== null && ws.order < best.order)))) {
        best = ws;
        bestStart = start;
        bestBytes = ws.nbytes;
      }
    }
    return best;
  }
}

function add(map: Map<WorkerRec, number>, ws: WorkerRec, delta: number): void {
  map.set(ws, (map.get(ws) ?? 0) + delta);
}
