/**
 * W8, the case queuing exists for (issue 26): `roots` root tasks each producing `chunkBytes`
 * (10 MB at scale 1), reduced pairwise down to one, on 4 workers x 1 thread. Measured: the
 * peak of the bytes all workers hold together (sampled, bench/memory-sampler.ts) and the
 * makespan, per `workerSaturation` (1.1, "adaptive", Infinity = queuing off). The Dask peer
 * (bench/peer/dask_peer.py w8) runs the same graph.
 */
import { taskProbe } from "./functions.js";
import { saturationSupported, type Harness, type HarnessOptions, type Saturation, type TransportName } from "./harness.js";
import { stats, type Row } from "./lib.js";
import { StoredBytesSampler } from "./memory-sampler.js";

export interface W8Case {
  kind: "W8";
  roots: number;
  chunkBytes: number;
  /** chunkBytes / 10 MB, for the labels. */
  scale: number;
  saturation: Saturation;
  log: boolean;
  reps: number;
  /** The run is stopped once the workers hold more than this together. */
  budgetBytes: number;
  intervalMs: number;
}

export interface W8Hosts {
  readonly transport: TransportName;
  readonly idSuffix: string;
  readonly labelSuffix: string;
  start(o: HarnessOptions, tag: string): Promise<Harness>;
}

/** The graph: `chunk-<i>` roots, then layers of `combine-<depth>-<j>` over pairs; an odd one out is carried up a layer. */
export function w8Graph(roots: number, chunkBytes: number): { graph: Record<string, unknown[]>; root: string; n: number } {
  if (!Number.isInteger(roots) || roots < 1) throw new RangeError(`W8 needs a whole number of roots >= 1, got ${roots}`);
  const graph: Record<string, unknown[]> = {};
  let layer: string[] = [];
  for (let i = 0; i < roots; i++) {
    graph[`chunk-${i}`] = ["chunk", i, chunkBytes];
    layer.push(`chunk-${i}`);
  }
  for (let depth = 1; layer.length > 1; depth++) {
    const next: string[] = [];
    for (let j = 0; j < layer.length; j += 2) {
      if (j + 1 === layer.length) {
        next.push(layer[j]!);
        continue;
      }
      const key = `combine-${depth}-${j / 2}`;
      graph[key] = ["combine", layer[j]!, layer[j + 1]!];
      next.push(key);
    }
    layer = next;
  }
  return { graph, root: layer[0]!, n: Object.keys(graph).length };
}

/** The root's first byte: every combine adds its inputs' first bytes (mod 256), chunk i starts with i & 255. */
export function w8ExpectedFirstByte(roots: number): number {
  let s = 0;
  for (let i = 0; i < roots; i++) s = (s + (i & 255)) & 255;
  return s;
}

export function saturationTag(s: Saturation): string {
  return s === Infinity ? "inf" : String(s);
}

interface Rep {
  peak: number;
  wall: number | null;
  samples: number;
  peakAtS: number;
  peakPerWorkerMB: number[];
}

async function once(c: W8Case, hosts: W8Hosts): Promise<Rep> {
  const h = await hosts.start({ workers: 4, threadsPerWorker: 1, log: c.log, saturation: c.saturation }, "w8");
  let stopRun: (bytes: number) => void = () => undefined;
  const overBudget = new Promise<number>((resolve) => (stopRun = resolve));
  const sampler = new StoredBytesSampler(() => h.storedBytes(), { intervalMs: c.intervalMs, budgetBytes: c.budgetBytes, onOverBudget: (b) => stopRun(b) });
  try {
    // Embedded, the workers run in this process: each task samples too (timers can starve).
    if (hosts.transport === "memory") taskProbe.hook = () => void sampler.sample();
    const { graph, root } = w8Graph(c.roots, c.chunkBytes);
    sampler.start();
    const t0 = performance.now();
    const futures = h.client.persist(graph, { keys: [root] });
    // Settles either way: a run stopped at the budget leaves this future to fail at close.
    const result = futures[root]!.result().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    const outcome = await Promise.race([result, overBudget.then((bytes) => ({ bytes }))]);
    const wall = (performance.now() - t0) / 1000;
    if ("error" in outcome) throw outcome.error;
    // A run stopped at the budget has workers busy with gigabytes: on NATS their status
    // answers can time out, and the peak is a lower bound already.
    if ("bytes" in outcome) await sampler.sample().catch(() => undefined);
    else await sampler.sample();
    sampler.stop();
    if ("value" in outcome) {
      const v = outcome.value as Uint8Array;
      if (v.length !== c.chunkBytes || v[0] !== w8ExpectedFirstByte(c.roots)) throw new Error(`W8: wrong root (length ${v.length}, first byte ${v[0]})`);
      futures[root]!.release();
    }
    return { peak: sampler.peak, wall: "value" in outcome ? wall : null, samples: sampler.samples, peakAtS: Number((sampler.peakAtMs / 1000).toFixed(2)), peakPerWorkerMB: sampler.peakPerWorker.map((b) => Math.round(b / 1e6)) };
  } finally {
    sampler.stop();
    taskProbe.hook = null;
    await h.close();
  }
}

export async function w8(c: W8Case, hosts: W8Hosts): Promise<Row[]> {
  const tag = saturationTag(c.saturation);
  const id = (what: string): string => `W8.sat-${tag}.${what}${hosts.idSuffix}`;
  const shape = `${c.roots}x${Math.round(c.chunkBytes / 1e5) / 10}MB pairwise, 4x1, saturation ${tag}`;
  const label = (what: string): string => `W8 ${what}, ${shape}${hosts.labelSuffix}`;
  if (!saturationSupported(c.saturation)) {
    const note = `not available: this checkout's scheduler does not accept workerSaturation: ${JSON.stringify(c.saturation)}`;
    return [
      { id: id("peak"), workload: "W8", label: label("peak stored bytes"), unit: "MB", higherIsBetter: false, value: null, status: "not-available", note },
      { id: id("makespan"), workload: "W8", label: label("makespan"), unit: "s", higherIsBetter: false, value: null, status: "not-available", note },
    ];
  }
  const reps: Rep[] = [];
  for (let r = 0; r < c.reps; r++) {
    const rep = await once(c, hosts);
    reps.push(rep);
    if (rep.wall === null) break;
  }
  const stopped = reps.some((r) => r.wall === null);
  const walls = reps.flatMap((r) => (r.wall === null ? [] : [r.wall]));
  const budgetMB = Math.round(c.budgetBytes / 1e6);
  const extra = {
    roots: c.roots,
    chunk_mb: c.chunkBytes / 1e6,
    scale: c.scale,
    all_roots_mb: Math.round((c.roots * c.chunkBytes) / 1e6),
    budget_mb: budgetMB,
    sample_interval_ms: c.intervalMs,
    sampling: hosts.transport === "memory" ? "worker actors' tasks in memory, every interval and at every task start" : "each worker process's status endpoint (nbytes), every interval",
    samples: reps.map((r) => r.samples),
    peak_at_s: reps.map((r) => r.peakAtS),
    peak_per_worker_mb: reps.map((r) => r.peakPerWorkerMB),
    workerSaturation: tag,
  };
  return [
    {
      id: id("peak"),
      workload: "W8",
      label: label("peak stored bytes, sum over workers (sampled)"),
      unit: "MB",
      higherIsBetter: false,
      value: stats(reps.map((r) => r.peak / 1e6)),
      status: "ok",
      shape: `W8.sat-${tag}.peak`,
      ...(stopped ? { note: `stopped once the workers held more than the budget (${budgetMB} MB): the peak is a lower bound` } : {}),
      extra,
    },
    walls.length > 0
      ? { id: id("makespan"), workload: "W8", label: label("makespan"), unit: "s", higherIsBetter: false, value: stats(walls), status: "ok", shape: `W8.sat-${tag}.makespan`, extra: { wall_s: walls } }
      : { id: id("makespan"), workload: "W8", label: label("makespan"), unit: "s", higherIsBetter: false, value: null, status: "skipped", note: `not measured: the run was stopped at the memory budget (${budgetMB} MB)` },
  ];
}
