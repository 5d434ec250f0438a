/**
 * The SOAK verdict from its rounds: whether every per-key record came back to its baseline
 * after every round, which other tables kept growing, and how much each process's heap
 * after GC grew over the rounds after the warm-up (a least-squares fit, and the mean of the
 * last third against the first, so no two noisy points decide). Reported, not asserted.
 */
import { BOUNDED_TABLES, type ActorCounts } from "./soak-tables.js";
import type { RoundOutcome } from "./soak-round.js";

/** What SOAK measured once the cluster was idle (before the first round, and after each). */
export interface SoakSnapshot {
  /** Per actor: "scheduler", "worker-0", ... */
  actors: Record<string, ActorCounts>;
  /** The embedded host's own tables (LocalCluster), when embedded. */
  host?: Record<string, number>;
  /** Heap used after a full GC per process, MB: "process" embedded; "scheduler", "worker-<i>", "client" on NATS. */
  heapMB: Record<string, number>;
  /** The cluster reached idle (no task on the scheduler, no client, nothing running) before the snapshot. */
  idle: boolean;
}

export interface SoakRound {
  round: number;
  outcome: RoundOutcome;
  snapshot: SoakSnapshot;
}

/**
 * Heap growth allowed from the end of the warm-up to the last round, per process. The leak
 * the issue measured is about 0.5 MB a round at about 3,000 tasks a round (300 failing);
 * heap-after-GC readings of an idle process move by a few hundred KB between rounds.
 */
export const HEAP_TOLERANCE_MB = 2;

/** The records that must be back at their baseline after every round, per actor. */
export function recordCounts(s: SoakSnapshot): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [actor, a] of Object.entries(s.actors)) {
    out[`${actor}.records`] = a.records;
    if (a.stored !== undefined) out[`${actor}.stored`] = a.stored;
    if (a.clients !== undefined) out[`${actor}.clients`] = a.clients;
  }
  return out;
}

export interface HeapTrend {
  /** First round of the fit (after the warm-up) and the last. */
  from: number;
  to: number;
  /** Least-squares slope, MB a round, and the growth it gives from `from` to `to`. */
  slopeMBPerRound: number;
  fitGrowthMB: number;
  /** Mean of the last third of the rounds minus the mean of the first third (of those fitted). */
  thirdsGrowthMB: number;
  /** The larger of the two, judged against the tolerance. */
  growthMB: number;
  withinTolerance: boolean;
}

export interface SoakVerdict {
  ok: boolean;
  /** Every record count (scheduler tasks and clients, each worker's tasks and stored keys) back at its baseline after every round. */
  recordsBackToBaseline: boolean;
  /** Rounds after which some record count was above its baseline, the first of them, and the counts above baseline after the last round. */
  roundsWithRecordsLeft: number;
  firstRoundWithRecordsLeft: number | null;
  recordsLeftAfterLastRound: Record<string, number>;
  /** Of those, worker records left per round on average (the growth rate of the leak). */
  recordsLeftPerRound: number;
  /** Tables (other than the records and the bounded ones) larger after the last round than after the first. */
  growingTables: { actor: string; table: string; afterFirst: number; afterLast: number }[];
  /** Bounded tables (tombstones, remembered clients), after the last round, with their bound. */
  boundedTables: { actor: string; table: string; afterLast: number; bound: string }[];
  heap: Record<string, HeapTrend>;
  heapToleranceMB: number;
  warmupRounds: number;
  futures: { total: number; ok: number; failed: number; hung: number; wrong: number; clientErrors: number };
  roundsNotIdle: number;
}

/** Rounds before the heap fit starts: the first fifth (JIT, caches, first allocations of every table), at least one. */
export function warmupRounds(rounds: number): number {
  return Math.min(Math.max(1, Math.ceil(rounds / 5)), Math.max(0, rounds - 3));
}

export function judgeSoak(baseline: SoakSnapshot, rounds: readonly SoakRound[]): SoakVerdict {
  const base = recordCounts(baseline);
  let roundsWithRecordsLeft = 0;
  let firstRoundWithRecordsLeft: number | null = null;
  const above = (s: SoakSnapshot): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const [k, v] of Object.entries(recordCounts(s))) if (v !== (base[k] ?? 0)) out[k] = v - (base[k] ?? 0);
    return out;
  };
  for (const r of rounds) {
    if (Object.keys(above(r.snapshot)).length === 0) continue;
    roundsWithRecordsLeft++;
    firstRoundWithRecordsLeft ??= r.round;
  }
  const last = rounds[rounds.length - 1];
  const first = rounds[0];
  const leftAfterLast = last === undefined ? {} : above(last.snapshot);
  let workerRecordsLeft = 0;
  for (const [k, v] of Object.entries(leftAfterLast)) if (k.startsWith("worker") && k.endsWith(".records")) workerRecordsLeft += v;

  const growingTables: SoakVerdict["growingTables"] = [];
  const boundedTables: SoakVerdict["boundedTables"] = [];
  if (first !== undefined && last !== undefined) {
    for (const [actor, counts] of Object.entries(last.snapshot.actors)) {
      const before = first.snapshot.actors[actor]?.tables ?? {};
      for (const [table, afterLast] of Object.entries(counts.tables)) {
        if (BOUNDED_TABLES[table] !== undefined) {
          boundedTables.push({ actor, table, afterLast, bound: BOUNDED_TABLES[table]! });
          continue;
        }
        // The records themselves are judged above.
        if (table === "core.tasks" || table === "store" || table === "core.clients") continue;
        const afterFirst = before[table] ?? 0;
        if (afterLast > afterFirst) growingTables.push({ actor, table, afterFirst, afterLast });
      }
    }
    const hostBefore = first.snapshot.host ?? {};
    for (const [table, afterLast] of Object.entries(last.snapshot.host ?? {})) {
      const afterFirst = hostBefore[table] ?? 0;
      if (afterLast > afterFirst) growingTables.push({ actor: "host", table, afterFirst, afterLast });
    }
  }

  const warmup = warmupRounds(rounds.length);
  const heap: Record<string, HeapTrend> = {};
  const fitted = rounds.slice(warmup);
  for (const proc of Object.keys(last?.snapshot.heapMB ?? {})) {
    const points = fitted.map((r) => [r.round, r.snapshot.heapMB[proc]] as const).filter((p): p is readonly [number, number] => p[1] !== undefined);
    if (points.length < 2) continue;
    heap[proc] = heapTrend(points);
  }

  const futures = { total: 0, ok: 0, failed: 0, hung: 0, wrong: 0, clientErrors: 0 };
  for (const r of rounds) {
    futures.total += r.outcome.futures;
    futures.ok += r.outcome.ok;
    futures.failed += r.outcome.failed;
    futures.hung += r.outcome.hung;
    futures.wrong += r.outcome.wrong;
    futures.clientErrors += r.outcome.clientErrors.length;
  }
  const roundsNotIdle = rounds.filter((r) => !r.snapshot.idle).length;
  const recordsBackToBaseline = roundsWithRecordsLeft === 0;
  const heapOk = Object.values(heap).every((h) => h.withinTolerance);
  return {
    ok: recordsBackToBaseline && heapOk && growingTables.length === 0 && futures.hung === 0 && futures.wrong === 0 && futures.clientErrors === 0 && roundsNotIdle === 0,
    recordsBackToBaseline,
    roundsWithRecordsLeft,
    firstRoundWithRecordsLeft,
    recordsLeftAfterLastRound: leftAfterLast,
    recordsLeftPerRound: rounds.length > 0 ? Number((workerRecordsLeft / rounds.length).toFixed(1)) : 0,
    growingTables,
    boundedTables,
    heap,
    heapToleranceMB: HEAP_TOLERANCE_MB,
    warmupRounds: warmup,
    futures,
    roundsNotIdle,
  };
}

/** Least-squares slope and first-third/last-third means of (round, MB) points. */
export function heapTrend(points: readonly (readonly [number, number])[]): HeapTrend {
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  const from = points[0]![0];
  const to = points[n - 1]![0];
  const third = Math.max(1, Math.floor(n / 3));
  const mean = (ps: readonly (readonly [number, number])[]): number => ps.reduce((a, [, y]) => a + y, 0) / ps.length;
  const thirds = mean(points.slice(n - third)) - mean(points.slice(0, third));
  const fit = slope * (to - from);
  const growth = Math.max(fit, thirds);
  const r2 = (x: number): number => Number(x.toFixed(2));
  return { from, to, slopeMBPerRound: Number(slope.toFixed(3)), fitGrowthMB: r2(fit), thirdsGrowthMB: r2(thirds), growthMB: r2(growth), withinTolerance: growth <= HEAP_TOLERANCE_MB };
}
