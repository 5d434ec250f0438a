/**
 * SOAK: rounds of tasks, some failing, by clients that come and go (bench/soak-round.ts),
 * on the embedded cluster or on NATS. After each round, once the cluster is idle, every
 * actor's task records, stored keys and other tables are counted and each process's heap
 * after a full GC is read; the verdict (bench/soak-verdict.ts) says whether the records came
 * back to their baseline after every round and how the heap grew after the warm-up.
 */
import { existsSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomHex, stats, type Row, type Stats } from "./lib.js";
import { startEmbeddedSoak, type SoakCluster } from "./soak-embedded.js";
import { startNatsSoak } from "./soak-nats.js";
import { FULL_SHAPE, runRound, SMALL_SHAPE, type SoakShape } from "./soak-round.js";
import { HEAP_TOLERANCE_MB, judgeSoak, type SoakRound, type SoakSnapshot } from "./soak-verdict.js";
import type { TransportName } from "./harness.js";

export interface SoakCase {
  kind: "SOAK";
  rounds: number;
  shape: "full" | "small";
  /** Milliseconds a phase of a client's round may take before its unsettled futures count as hung. */
  timeoutMs: number;
  /** Fill the workers' tombstones before the rounds (see fillTombstones); off for a quick check. */
  fillTombstones: boolean;
  /** An event log file per process (deleted afterwards unless --keep-logs), or none. */
  log: boolean;
  transport?: TransportName;
}

/** Milliseconds to wait for the cluster to go idle after a round before counting anyway. */
const IDLE_TIMEOUT_MS = 60_000;

/** Tasks a client of the warm-up submits at once, and the most the warm-up runs. */
const WARMUP_BATCH = 10_000;
const WARMUP_MAX_TASKS = 400_000;

/**
 * Fill every worker's tombstones to their bound before the rounds. A worker keeps one per key
 * it dropped, up to MAX_TOMBSTONES (65,536): about 1,600 a round on each of two workers, so
 * they would otherwise grow through the first 40 rounds, a few MB of heap a worker that is
 * bounded and not a leak. Full from the start, they hold as much after every round. Runs
 * tasks that succeed (W1's shape) until every worker's tombstones are at their bound.
 */
async function fillTombstones(cluster: SoakCluster): Promise<{ tasks: number; seconds: number; tombstones: Record<string, number> }> {
  const t0 = performance.now();
  let tasks = 0;
  const full = (counts: SoakSnapshot["actors"]): boolean => Object.values(counts).every((a) => a.tombstoneCap === undefined || a.tombstones! >= a.tombstoneCap);
  let counts = await cluster.counts();
  while (!full(counts) && tasks < WARMUP_MAX_TASKS) {
    const client = await cluster.client();
    try {
      const futures = client.map("soakInc", Array.from({ length: WARMUP_BATCH }, (_, i) => -(tasks + i)), { pure: false });
      await client.gather(futures, { timeout: 120_000 });
      for (const f of futures) f.release();
    } finally {
      await client.close();
    }
    tasks += WARMUP_BATCH;
    await cluster.waitIdle(IDLE_TIMEOUT_MS);
    counts = await cluster.counts();
  }
  const tombstones: Record<string, number> = {};
  for (const [name, a] of Object.entries(counts)) if (a.tombstones !== undefined) tombstones[name] = a.tombstones;
  return { tasks, seconds: Number(((performance.now() - t0) / 1000).toFixed(1)), tombstones };
}

export interface SoakResult {
  transport: TransportName;
  shape: SoakShape;
  warmup: Awaited<ReturnType<typeof fillTombstones>>;
  baseline: SoakSnapshot;
  rounds: SoakRound[];
  verdict: ReturnType<typeof judgeSoak>;
}

/** Runs the rounds; `onRound` hears each one as it ends (progress on stderr). */
export async function soak(c: SoakCase, onRound: (r: SoakRound) => void = () => undefined, onWarmup: (w: SoakResult["warmup"]) => void = () => undefined): Promise<SoakResult> {
  const transport = c.transport ?? "memory";
  const shape = c.shape === "full" ? FULL_SHAPE : SMALL_SHAPE;
  const logPath: string | false = c.log ? join(tmpdir(), `natsched-bench-soak-${process.pid}-${randomHex(4)}.natlog`) : false;
  const options = { workers: 2, threadsPerWorker: 2, log: logPath };
  const cluster: SoakCluster = transport === "memory" ? await startEmbeddedSoak(options) : await startNatsSoak(options);
  try {
    const warmup = c.fillTombstones ? await fillTombstones(cluster) : { tasks: 0, seconds: 0, tombstones: {} };
    onWarmup(warmup);
    // The baseline: warmed up, idle, no client.
    const baseline = await cluster.snapshot(await cluster.waitIdle(IDLE_TIMEOUT_MS));
    const rounds: SoakRound[] = [];
    for (let round = 1; round <= c.rounds; round++) {
      const outcome = await runRound(cluster, round, shape, c.timeoutMs);
      const idle = await cluster.waitIdle(IDLE_TIMEOUT_MS);
      const r = { round, outcome, snapshot: await cluster.snapshot(idle) };
      rounds.push(r);
      onRound(r);
    }
    return { transport, shape, warmup, baseline, rounds, verdict: judgeSoak(baseline, rounds) };
  } finally {
    await cluster.close();
    // Embedded: one file (on NATS each process has its own, removed by its host).
    if (logPath !== false && transport === "memory") {
      if (process.env.NATSCHED_BENCH_KEEP_LOGS === "1") console.error(`    kept log: ${logPath}`);
      else if (existsSync(logPath)) unlinkSync(logPath);
    }
  }
}

/** One line of progress per round. */
export function roundLine(r: SoakRound): string {
  const o = r.outcome;
  const records = Object.entries(r.snapshot.actors)
    .map(([actor, a]) => {
      const states = Object.entries(a.states).map(([state, k]) => `${state} ${k}`).join(", ");
      return `${actor} ${a.records}${states ? ` (${states})` : ""}${a.stored !== undefined ? ` stored ${a.stored}` : ""}`;
    })
    .join("; ");
  const heap = Object.entries(r.snapshot.heapMB)
    .map(([p, mb]) => `${p} ${mb.toFixed(1)}`)
    .join(", ");
  const problems = [o.hung ? `${o.hung} HUNG` : "", o.wrong ? `${o.wrong} WRONG` : "", o.clientErrors.length ? `${o.clientErrors.length} client errors` : "", r.snapshot.idle ? "" : "NOT IDLE"].filter(Boolean).join(", ");
  const tombstones = Object.entries(r.snapshot.actors)
    .flatMap(([actor, a]) => (a.tombstones !== undefined ? [`${actor} ${a.tombstones}`] : []))
    .join(", ");
  return `    round ${r.round}: ${o.futures} futures in ${o.seconds} s${problems ? ` (${problems})` : ""}; records: ${records}; tombstones: ${tombstones}; heap MB after GC: ${heap}`;
}

const one = (x: number): Stats => stats([x]);

/** The result rows (bench/lib.ts Row): records, futures, tables, heap per process; targets on each. */
export function soakRows(result: SoakResult): Row[] {
  const v = result.verdict;
  const sfx = result.transport === "nats" ? ".nats" : "";
  const on = result.transport === "nats" ? " [NATS]" : "";
  const n = result.rounds.length;
  const zero = (text: string) => ({ op: "<=" as const, value: 0, text });
  const perRound = result.rounds.map((r) => ({
    round: r.round,
    seconds: r.outcome.seconds,
    futures: { total: r.outcome.futures, ok: r.outcome.ok, failed: r.outcome.failed, hung: r.outcome.hung, wrong: r.outcome.wrong },
    submitted: r.outcome.submitted,
    ...(r.outcome.samples.hung.length ? { hungSamples: r.outcome.samples.hung } : {}),
    ...(r.outcome.samples.wrong.length ? { wrongSamples: r.outcome.samples.wrong } : {}),
    ...(r.outcome.clientErrors.length ? { clientErrors: r.outcome.clientErrors } : {}),
    idle: r.snapshot.idle,
    records: Object.fromEntries(Object.entries(r.snapshot.actors).map(([a, x]) => [a, x.records])),
    states: Object.fromEntries(Object.entries(r.snapshot.actors).map(([a, x]) => [a, x.states])),
    stored: Object.fromEntries(Object.entries(r.snapshot.actors).flatMap(([a, x]) => (x.stored !== undefined ? [[a, x.stored]] : []))),
    clients: r.snapshot.actors.scheduler?.clients,
    tombstones: Object.fromEntries(Object.entries(r.snapshot.actors).flatMap(([a, x]) => (x.tombstones !== undefined ? [[a, x.tombstones]] : []))),
    heapMB: r.snapshot.heapMB,
    tables: Object.fromEntries(Object.entries(r.snapshot.actors).map(([a, x]) => [a, x.tables])),
    ...(r.snapshot.host ? { host: r.snapshot.host } : {}),
  }));
  const s = result.shape;
  const rows: Row[] = [
    {
      id: `SOAK.records${sfx}`,
      workload: "SOAK",
      label: `SOAK ${n} rounds x ${s.clients} clients: task records, stored keys, clients left${on}`,
      unit: "records",
      higherIsBetter: false,
      value: one(Object.values(v.recordsLeftAfterLastRound).reduce((a, b) => a + b, 0)),
      status: "ok",
      target: zero("0 after every round"),
      ...(v.roundsWithRecordsLeft > 0 ? { note: `records above baseline after ${v.roundsWithRecordsLeft} of ${n} rounds (first: round ${v.firstRoundWithRecordsLeft}); after the last: ${JSON.stringify(v.recordsLeftAfterLastRound)}, ${v.recordsLeftPerRound} worker records a round` } : {}),
      extra: { verdict: v, shape: s, warmup: result.warmup, baseline: result.baseline, rounds: perRound },
    },
    {
      id: `SOAK.futures-hung${sfx}`,
      workload: "SOAK",
      label: `SOAK futures hung (of ${v.futures.total})${on}`,
      unit: "futures",
      higherIsBetter: false,
      value: one(v.futures.hung),
      status: "ok",
      target: zero("0"),
      ...(v.futures.hung > 0 ? { note: `hung in ${result.rounds.filter((r) => r.outcome.hung > 0).length} of ${n} rounds, e.g. ${result.rounds.find((r) => r.outcome.hung > 0)?.outcome.samples.hung[0] ?? ""}` } : {}),
    },
    {
      id: `SOAK.futures-wrong${sfx}`,
      workload: "SOAK",
      label: `SOAK futures ended wrong, client errors${on}`,
      unit: "futures",
      higherIsBetter: false,
      value: one(v.futures.wrong + v.futures.clientErrors),
      status: "ok",
      target: zero("0"),
      ...(v.futures.wrong + v.futures.clientErrors > 0
        ? { note: [result.rounds.find((r) => r.outcome.wrong > 0)?.outcome.samples.wrong[0], result.rounds.find((r) => r.outcome.clientErrors.length > 0)?.outcome.clientErrors[0]].filter(Boolean).join("; ") }
        : {}),
    },
    {
      id: `SOAK.tables-growing${sfx}`,
      workload: "SOAK",
      label: `SOAK other tables grown since round 1 (bounded ones apart)${on}`,
      unit: "tables",
      higherIsBetter: false,
      value: one(v.growingTables.length),
      status: "ok",
      target: zero("0"),
      ...(v.growingTables.length > 0 ? { note: v.growingTables.map((t) => `${t.actor} ${t.table} ${t.afterFirst} -> ${t.afterLast}`).join(", ") } : {}),
      extra: { growing: v.growingTables, bounded: v.boundedTables, rounds_not_idle: v.roundsNotIdle },
    },
  ];
  for (const [proc, h] of Object.entries(v.heap)) {
    const heaps = result.rounds.map((r) => r.snapshot.heapMB[proc]!);
    rows.push({
      id: `SOAK.heap.${proc}${sfx}`,
      workload: "SOAK",
      label: `SOAK heap after GC, ${proc === "process" ? "the process" : proc}: growth, rounds ${h.from}-${h.to}${on}`,
      unit: "MB",
      higherIsBetter: false,
      value: one(h.growthMB),
      status: "ok",
      target: { op: "<=", value: HEAP_TOLERANCE_MB, text: `<= ${HEAP_TOLERANCE_MB} MB (fit and thirds)` },
      note: `${result.baseline.heapMB[proc]?.toFixed(1)} MB before round 1, ${heaps[0]?.toFixed(1)} after it, ${heaps[heaps.length - 1]?.toFixed(1)} after round ${n}; fit ${h.slopeMBPerRound} MB/round (${h.fitGrowthMB} MB), last third - first third ${h.thirdsGrowthMB} MB`,
      extra: { trend: h, heap_mb_per_round: heaps, heap_mb_baseline: result.baseline.heapMB[proc] },
    });
  }
  return rows;
}
