/**
 * The seed's two examples end to end on the embedded LocalCluster, with the real
 * SchedulerActor running its periodic and on-demand stealing passes on the wall clock:
 * cheap data + slow compute is stolen, large data + fast compute is not.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LocalCluster, MemoryLogSink } from "../index.js";
import type { InputRecord, LogRecord, TransitionRecord } from "../log/types.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const clusters: LocalCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});

const functions = {
  slow: async (_data: unknown, i: number) => {
    await sleep(100);
    return i;
  },
  /** A quick look at the data (the seed's np.sum, cut short): well under a millisecond of CPU. */
  fast: (data: Float64Array, _i: number) => {
    let s = 0;
    for (let j = 0; j < 10_000; j++) s += data[j]!;
    return s;
  },
};

async function start(log: MemoryLogSink, workStealing = true): Promise<LocalCluster> {
  const cluster = await LocalCluster.start({ workers: 4, threadsPerWorker: 1, functions, log, configFile: false, config: { workStealing, workerSaturation: 1.1 } });
  clusters.push(cluster);
  return cluster;
}

/** Keys each worker started executing, from the workers' logged transitions. */
function executedBy(records: LogRecord[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of records) {
    if (r.kind !== "transition" || (r as TransitionRecord).event !== "EXECUTE" || !r.actor.startsWith("worker.")) continue;
    const worker = r.actor.slice("worker.".length);
    out.set(worker, [...(out.get(worker) ?? []), (r as TransitionRecord).id]);
  }
  return out;
}

/** Bytes workers received from peers (their gather-done inputs). */
function bytesMoved(records: LogRecord[]): number {
  let bytes = 0;
  for (const r of records) {
    if (r.kind !== "input" || !r.actor.startsWith("worker.")) continue;
    const event = (r as InputRecord).event as { op: string; received?: { nbytes: number }[] };
    if (event.op === "gather-done") for (const { nbytes } of event.received ?? []) bytes += nbytes;
  }
  return bytes;
}

/** The most executions running at one time, from the workers' execute-done inputs (their start and stop). */
function mostAtOnce(records: LogRecord[]): number {
  const edges: [number, number][] = [];
  for (const r of records) {
    if (r.kind !== "input" || !r.actor.startsWith("worker.")) continue;
    const event = (r as InputRecord).event as { op: string; start?: number; stop?: number };
    if (event.op === "execute-done") edges.push([event.start!, 1], [event.stop!, -1]);
  }
  // Ends before starts at the same instant: touching intervals do not overlap.
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (running += d));
  return most;
}

const steals = (records: LogRecord[], event: string) =>
  records.filter((r): r is TransitionRecord => r.kind === "transition" && r.actor === "scheduler" && (r as TransitionRecord).event === event);

describe("the seed's good example: cheap data, slow compute", () => {
  it("40 tasks of 100 ms pinned with their small input on one worker of four are stolen: the others run some, at the same time as the home worker", async () => {
    const log = new MemoryLogSink({ copy: false });
    const cluster = await start(log);
    const client = cluster.client();
    const [home] = [...cluster.workers.keys()];
    const [data] = await client.scatter([100], { workers: [home!] });
    const futures = Array.from({ length: 40 }, (_, i) => client.submit<number>("slow", [data, i], { pure: false, workers: [home!], allowOtherWorkers: true }));
    const results = await client.gather(futures);
    expect(results).toEqual(Array.from({ length: 40 }, (_, i) => i));
    await cluster.flush();

    const ran = executedBy(log.records);
    const others = [...ran].filter(([w]) => w !== home).reduce((n, [, keys]) => n + keys.length, 0);
    expect(others).toBeGreaterThan(10);
    // Every task ran exactly once, wherever it ended up.
    const all = [...ran.values()].flat();
    expect(new Set(all).size).toBe(40);
    expect(all).toHaveLength(40);
    // Not serial: stolen tasks ran beside the home worker's, at least three at a time at some point.
    expect(mostAtOnce(log.records)).toBeGreaterThanOrEqual(3);
    expect(steals(log.records, "STEAL_CONFIRM").length).toBeGreaterThan(10);
    const metrics = cluster.scheduler.core.stealing!.metrics;
    expect(metrics.confirmed.reduce((a, b) => a + b, 0)).toBe(steals(log.records, "STEAL_CONFIRM").length);
    // The running totals ($SRV.STATS on NATS) agree with the log.
    expect(cluster.scheduler.totals).toMatchObject({
      tasksCompleted: 40,
      tasksErred: 0,
      stealsRequested: steals(log.records, "STEAL").length,
      stealsConfirmed: steals(log.records, "STEAL_CONFIRM").length,
      stealsRejected: steals(log.records, "STEAL_REJECT").length,
    });
    expect(cluster.scheduler.totals.stealsConfirmed + cluster.scheduler.totals.stealsRejected).toBeLessThanOrEqual(cluster.scheduler.totals.stealsRequested);
    expect([...cluster.workers.values()].reduce((n, w) => n + w.totals.tasksCompleted, 0)).toBe(40);
  });

  it("with workStealing off, the same tasks all run on their worker", async () => {
    const log = new MemoryLogSink({ copy: false });
    const cluster = await start(log, false);
    const client = cluster.client();
    const [home] = [...cluster.workers.keys()];
    const [data] = await client.scatter([100], { workers: [home!] });
    const futures = Array.from({ length: 8 }, (_, i) => client.submit<number>("slow", [data, i], { pure: false, workers: [home!], allowOtherWorkers: true }));
    await client.gather(futures);
    await cluster.flush();
    expect([...executedBy(log.records).keys()]).toEqual([home]);
    expect(mostAtOnce(log.records)).toBe(1);
    expect(steals(log.records, "STEAL")).toEqual([]);
  });
});

describe("the seed's bad example: large data, fast compute", () => {
  it("50 sub-millisecond tasks on an 80 MB array held by one worker are not stolen: no byte moves between workers", async () => {
    const log = new MemoryLogSink({ copy: false });
    const cluster = await start(log);
    const client = cluster.client();
    const [home] = [...cluster.workers.keys()];
    // Learn that fast is fast (Dask's test does the same): a first call can take milliseconds
    // (compiling the loop), and that first sample alone would make the backlog look long.
    const [small] = await client.scatter([new Float64Array(10_000)], { workers: [home!] });
    await client.gather(Array.from({ length: 8 }, (_, i) => client.submit("fast", [small, i], { pure: false, workers: [home!] })));
    // Moving the array costs 0.8 s + latency: far more than the whole backlog, and hundreds
    // of times one task's compute.
    const [data] = await client.scatter([new Float64Array(10_000_000).fill(1)], { workers: [home!] });
    const futures = Array.from({ length: 50 }, (_, i) => client.submit<number>("fast", [data, i], { pure: false, workers: [home!], allowOtherWorkers: true }));
    const results = await client.gather(futures);
    expect(results).toEqual(Array(50).fill(10_000));
    await cluster.flush();

    expect(bytesMoved(log.records)).toBe(0);
    expect(steals(log.records, "STEAL_CONFIRM")).toEqual([]);
    expect([...executedBy(log.records).keys()]).toEqual([home]);
  });
});
