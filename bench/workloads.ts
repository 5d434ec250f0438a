/**
 * The benchmark workloads on the embedded LocalCluster, one function per case. Each case
 * runs in its own child process (bench/child.ts) and returns result rows; bench/run.ts
 * decides which cases run, adds targets and Dask ratios, and prints the table.
 *
 * Shapes follow ../shared/peer/dask/*.py (and bench/peer/dask_peer.py): the same task
 * counts, worker counts, durations, warm-ups and fresh-cluster-per-repetition choices.
 */
import { existsSync, statSync, unlinkSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { getHeapStatistics } from "node:v8";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Future, LocalCluster } from "../index.js";
import { FAST_MS, FUNCTIONS, heapProbe, SLOW_MS } from "./functions.js";
import { floorShape } from "./w7-floor.js";
import { NatsServer, saturationSupported, startEmbedded, startNats, type Harness, type HarnessOptions, type Saturation, type TransportName } from "./harness.js";
import { EXECUTOR_THREAD_NAME as EXECUTOR_THREAD } from "../actors/executor/thread-source.js";
import { namedThreadsCpuMs, pythonShuffle, randomHex, sleep, stats, type Row } from "./lib.js";
import { roundLine, soak, soakRows, type SoakCase } from "./soak.js";
import { w8, type W8Case } from "./w8.js";

export type Case = (
  | { kind: "W1"; n: number; logs: boolean[]; saturation: Saturation | Saturation[]; reps: number; warmup: number }
  | { kind: "W2"; leaves: number; fanin: number; log: boolean; reps: number; warmupLeaves: number; saturation?: Saturation }
  | { kind: "W3"; nTasks: number; stealing: boolean; log: boolean; reps: number; saturation?: Saturation }
  | { kind: "W4"; variant: "spec" | "pinned"; nTasks: number; elements: number; stealing: boolean; log: boolean; reps: number; saturation?: Saturation }
  | { kind: "W5"; mode: "map" | "submit"; nLong: number; nShort: number; longMs: number; shortMs: number; seed: number; stealing: boolean; log: boolean; reps: number; saturation?: Saturation }
  | { kind: "W6-memory"; leaves: number; fanin: number }
  | { kind: "W6-embedded"; leaves: number; fanin: number; reps: number }
  | { kind: "W6-sim"; leaves: number; fanin: number; log: "memory" | "dropped" }
  | { kind: "R1"; n: number; treeLeaves: number; reps: number; threads?: number }
  | { kind: "W7"; shape: "workers" | "threads"; nTasks: number; ms: number; log: boolean; reps: number }
  | SoakCase
  | W8Case
) & { transport?: TransportName };

const HERE = dirname(fileURLToPath(import.meta.url));

const fmtN = (n: number): string => (n % 1000 === 0 ? `${n / 1000}k` : String(n));

function logPath(tag: string): string {
  return join(tmpdir(), `natsched-bench-${tag}-${process.pid}-${randomHex(4)}.natlog`);
}

function removeQuietly(path: string | undefined): void {
  if (path === undefined) return;
  if (process.env.NATSCHED_BENCH_KEEP_LOGS === "1") {
    console.error(`    kept log: ${path}`);
    return;
  }
  try {
    unlinkSync(path);
  } catch {
    /* already gone */
  }
}

/** Wait until the scheduler has forgotten every task (Dask peer: wait_idle). */
async function waitIdle(cluster: LocalCluster, timeoutMs = 60_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await cluster.flush();
    if (cluster.scheduler.core.tasks.size === 0) return true;
    await sleep(5);
  }
  return false;
}

function release(futures: Iterable<Future>): void {
  for (const f of futures) f.release();
}

/** Starts clusters on the case's transport; one nats-server per case process. */
class Hosts {
  private server: NatsServer | null = null;
  constructor(readonly transport: TransportName) {}

  async start(o: HarnessOptions, tag: string): Promise<Harness> {
    if (this.transport === "memory") return startEmbedded(o, tag);
    this.server ??= await NatsServer.start();
    return startNats(this.server, o, tag);
  }

  async stop(): Promise<void> {
    await this.server?.stop();
  }

  /** Row id and label suffixes. */
  get idSuffix(): string {
    return this.transport === "nats" ? ".nats" : "";
  }

  get labelSuffix(): string {
    return this.transport === "nats" ? " [NATS]" : "";
  }
}

// ---- W1 throughput --------------------------------------------------------------------------

/** Untimed W1 runs of `warmup` tasks before timing, on NATS (one on the embedded cluster). */
const NATS_W1_WARMUP_RUNS = 3;

/**
 * N independent no-op tasks, 2 workers x 1 thread, `client.map(noop, range(N), pure=false)`
 * then gather. One cluster per log mode and saturation (several saturations: compared in one
 * case), one untimed warm-up of `warmup` tasks each (10,000 from bench/run.ts; three such runs
 * on NATS, their rates kept as `warmup_tasks_per_s`); the repetitions of the clusters
 * alternate so each round shares the machine's state of the moment, and which goes first
 * alternates too (a ratio of two of them is then paired, not two cases minutes apart).
 */
async function w1(c: Extract<Case, { kind: "W1" }>, hosts: Hosts): Promise<Row[]> {
  const saturations = Array.isArray(c.saturation) ? c.saturation : [c.saturation];
  const suffix = (s: Saturation): string => (s === Infinity ? ".queuing-off" : s === "adaptive" ? ".adaptive" : "");
  const rows: Row[] = [];
  const modes = [];
  for (const saturation of saturations) {
    if (!saturationSupported(saturation)) {
      for (const log of c.logs) {
        rows.push({
          id: `W1.n${c.n}.log-${log ? "on" : "off"}${suffix(saturation)}${hosts.idSuffix}`,
          workload: "W1",
          label: `W1 ${fmtN(c.n)} no-op, 2x1, log ${log ? "on" : "off"}, saturation ${String(saturation)}${hosts.labelSuffix}`,
          unit: "tasks/s",
          higherIsBetter: true,
          value: null,
          status: "not-available" as const,
          note: `not available: this checkout's scheduler does not accept workerSaturation: ${JSON.stringify(saturation)}`,
        });
      }
      continue;
    }
    for (const log of c.logs) {
      const h = await hosts.start({ workers: 2, threadsPerWorker: 1, log, saturation }, "w1");
      modes.push({ log, saturation, h, walls: [] as number[], flushes: [] as number[] });
    }
  }
  const items = Array.from({ length: c.n }, (_, i) => i);
  const once = async (h: Harness, n: number): Promise<number> => {
    const t0 = performance.now();
    const futs = h.client.map("noop", n === c.n ? items : items.slice(0, n), { pure: false });
    const res = await h.client.gather(futs);
    const wall = (performance.now() - t0) / 1000;
    if (res.length !== n || res[n - 1] !== n - 1) throw new Error("W1: wrong results");
    release(futs);
    if (!(await h.waitIdle())) throw new Error("W1: scheduler did not go idle");
    return wall;
  };
  // On NATS the scheduler and worker processes are new: their hot code reaches TurboFan only
  // after 20,000-30,000 tasks (CPU a task falls over the first 10k runs, and stays flat
  // under --no-opt; docs/performance.md, Method), so they warm up over three runs.
  const warmupRuns = hosts.transport === "nats" ? NATS_W1_WARMUP_RUNS : 1;
  const warmupRates: number[][] = modes.map(() => []);
  for (let w = 0; w < warmupRuns; w++) {
    for (const [i, m] of modes.entries()) {
      const n = Math.min(c.warmup, c.n);
      warmupRates[i]!.push(Math.round(n / (await once(m.h, n))));
    }
  }
  for (let r = 0; r < c.reps; r++) {
    // Alternate which mode goes first (on-off, off-on, ...): the first full-size run of the
    // process still tiers up shared code (the JIT), and would otherwise always be log-on's.
    for (const m of r % 2 === 0 ? modes : [...modes].reverse()) {
      m.walls.push(await once(m.h, c.n));
      const flushed = await m.h.flushLog();
      if (flushed !== null) m.flushes.push(flushed);
    }
  }
  for (const m of modes) {
    const { logBytes } = await m.h.close();
    const tasksRun = c.n * c.reps + Math.min(c.warmup, c.n) * warmupRuns;
    const sat = suffix(m.saturation);
    const satLabel = m.saturation === Infinity ? ", queuing off" : m.saturation === "adaptive" ? ", adaptive saturation" : "";
    rows.push({
      id: `W1.n${c.n}.log-${m.log ? "on" : "off"}${sat}${hosts.idSuffix}`,
      workload: "W1",
      label: `W1 ${fmtN(c.n)} no-op, 2x1, log ${m.log ? "on" : "off"}${satLabel}${hosts.labelSuffix}`,
      unit: "tasks/s",
      higherIsBetter: true,
      value: stats(m.walls.map((w) => c.n / w), 4),
      status: "ok",
      // Adaptive is compared with Dask's default (queuing on, 1.1): Dask has no adaptive.
      shape: `W1.n${c.n}${sat === ".queuing-off" ? sat : ".queuing-on"}`,
      extra: {
        wall_s: stats(m.walls),
        us_per_task: stats(m.walls.map((w) => (w / c.n) * 1e6)),
        log_flush_after_s: m.flushes.length ? stats(m.flushes) : undefined,
        log_bytes_per_task: m.log ? Math.round(logBytes / tasksRun) : undefined,
        workerSaturation: String(m.saturation),
        warmup_tasks_per_s: warmupRates[modes.indexOf(m)],
        ...(modes.length > 1 ? { paired_with: modes.filter((o) => o !== m).map((o) => `log ${o.log ? "on" : "off"}, saturation ${String(o.saturation)}`) } : {}),
      },
    });
  }
  for (const saturation of saturations) {
    const on = modes.find((m) => m.log && m.saturation === saturation);
    const off = modes.find((m) => !m.log && m.saturation === saturation);
    if (on === undefined || off === undefined) continue;
    const sat = suffix(saturation);
    rows.push({
      id: `W1.n${c.n}.log-overhead${sat}${hosts.idSuffix}`,
      workload: "W1",
      label: `W1 ${fmtN(c.n)} log on / log off time (paired reps)${hosts.labelSuffix}`,
      unit: "x",
      higherIsBetter: false,
      value: stats(on.walls.map((w, i) => w / off.walls[i]!)),
      status: "ok",
    });
  }
  return rows;
}

// ---- W2 tree reduction ----------------------------------------------------------------------

/** Untimed full-size W2 trees after the small warm-up, on NATS (new daemons: see W1). */
const NATS_W2_WARMUP_TREES = 2;

/**
 * `leaves` tasks one(i) submitted one by one, then a summation tree of add(*children) with
 * fan-in k built from futures, layer by layer (k=2: 8,191 tasks for 4,096 leaves; k=8:
 * 4,681). Timed from the first submit until the root's result. The previous layer's futures
 * are released once the next layer is submitted, as Python drops them when `layer` is
 * reassigned. One cluster, one untimed warm-up over 512 leaves (on NATS, then two untimed
 * full-size trees; every warm-up's rate is kept as `warmup_tasks_per_s`).
 */
async function w2(c: Extract<Case, { kind: "W2" }>, hosts: Hosts): Promise<Row[]> {
  const h = await hosts.start({ workers: 2, threadsPerWorker: 1, log: c.log, ...(c.saturation !== undefined ? { saturation: c.saturation } : {}) }, "w2");
  const client = h.client;
  const once = async (leaves: number): Promise<{ wall: number; submit: number; nTasks: number }> => {
    const t0 = performance.now();
    let layer: Future<number>[] = [];
    for (let i = 0; i < leaves; i++) layer.push(client.submit<number>("one", [i], { pure: false }));
    let nTasks = layer.length;
    const dropped: Future[][] = [];
    while (layer.length > 1) {
      const next: Future<number>[] = [];
      for (let j = 0; j < layer.length; j += c.fanin) next.push(client.submit<number>("add", layer.slice(j, j + c.fanin), { pure: false }));
      dropped.push(layer);
      nTasks += next.length;
      layer = next;
    }
    const submit = (performance.now() - t0) / 1000;
    // The graph went out with this tick's flush; the releases follow in a later envelope.
    await sleep(0);
    for (const l of dropped) release(l);
    const result = await layer[0]!.result();
    const wall = (performance.now() - t0) / 1000;
    if (result !== leaves) throw new Error(`W2: root is ${result}, expected ${leaves}`);
    release(layer);
    if (!(await h.waitIdle())) throw new Error("W2: scheduler did not go idle");
    return { wall, submit, nTasks };
  };
  // On NATS the scheduler and worker processes are new (see W1): two untimed full-size trees
  // (16,000 tasks at fan-in 2) get their hot code optimized first; the first timed tree ran
  // slower than the next two with the 512-leaf warm-up alone.
  const warmups = [await once(c.warmupLeaves)];
  for (let w = 0; w < (hosts.transport === "nats" ? NATS_W2_WARMUP_TREES : 0); w++) warmups.push(await once(c.leaves));
  const runs = [];
  for (let r = 0; r < c.reps; r++) runs.push(await once(c.leaves));
  await h.close();
  const nTasks = runs[0]!.nTasks;
  const adaptive = c.saturation === "adaptive";
  return [
    {
      id: `W2.fanin${c.fanin}.log-${c.log ? "on" : "off"}${adaptive ? ".adaptive" : ""}${hosts.idSuffix}`,
      workload: "W2",
      label: `W2 tree ${c.leaves} leaves fan-in ${c.fanin} (${nTasks} tasks), log ${c.log ? "on" : "off"}${adaptive ? ", adaptive saturation" : ""}${hosts.labelSuffix}`,
      unit: "tasks/s",
      higherIsBetter: true,
      value: stats(runs.map((r) => nTasks / r.wall), 4),
      status: "ok",
      shape: `W2.fanin${c.fanin}`,
      extra: {
        n_tasks: nTasks,
        wall_s: stats(runs.map((r) => r.wall)),
        submit_phase_s: stats(runs.map((r) => r.submit)),
        warmup_tasks_per_s: warmups.map((r) => Math.round(r.nTasks / r.wall)),
      },
    },
  ];
}

// ---- W3 good steal ----------------------------------------------------------------------------

/**
 * 4 workers x 1 thread; 5 small values scattered to worker-0 (the "pinned" variant: a
 * 5-key data group, so the consumers are not root-ish and go where the data is); 200 tasks
 * slow(data[0], i) sleeping 50 ms. Fresh cluster per repetition. Ideal 200*50ms/4.
 */
async function w3(c: Extract<Case, { kind: "W3" }>, hosts: Hosts): Promise<Row[]> {
  const ideal = (c.nTasks * SLOW_MS) / 1000 / 4;
  const walls: number[] = [];
  const placement: number[][] = [];
  const steals: unknown[] = [];
  for (let r = 0; r < c.reps; r++) {
    const h = await hosts.start({ workers: 4, log: c.log, stealing: c.stealing, observe: true, countPrefix: "slow-", ...(c.saturation !== undefined ? { saturation: c.saturation } : {}) }, "w3");
    const client = h.client;
    const data = await client.scatter([100, 101, 102, 103, 104], { workers: [h.workerNames[0]!] });
    const t0 = performance.now();
    const futs = Array.from({ length: c.nTasks }, (_, i) => client.submit("slow", [data[0], i], { pure: false }));
    await client.gather(futs);
    walls.push((performance.now() - t0) / 1000);
    placement.push(await h.keysPerWorker("slow-"));
    steals.push(h.steals());
    await h.close();
  }
  const on = c.stealing ? "on" : "off";
  const adaptive = c.saturation === "adaptive";
  return [
    {
      id: `W3.pinned.stealing-${on}${adaptive ? ".adaptive" : ""}${hosts.idSuffix}`,
      workload: "W3",
      label: `W3 good steal ${c.nTasks}x${SLOW_MS}ms, 4x1, stealing ${on}${adaptive ? ", adaptive saturation" : ""}: makespan / ideal ${ideal.toFixed(2)}s${hosts.labelSuffix}`,
      unit: "x ideal",
      higherIsBetter: false,
      value: stats(walls.map((w) => w / ideal)),
      status: "ok",
      shape: `W3.pinned.stealing-${on}`,
      extra: { ideal_s: ideal, wall_s: stats(walls), [hosts.transport === "nats" ? "keys_per_worker_incl_data" : "tasks_per_worker"]: placement, steals },
    },
  ];
}

// ---- W4 bad steal -----------------------------------------------------------------------------

/**
 * 4 workers x 1 thread; a 200 MB array scattered to worker-0 ("spec" variant: the shape the
 * issue's Dask figures come from, where Dask classes the consumers as root-ish and copies the
 * array to every worker), or the array plus 4 one-element arrays ("pinned": the consumer group
 * is not root-ish in Dask either); 200 tasks fast(big, i) of 1 ms. Fresh cluster per repetition. Bytes
 * moved = what workers received from peers (their `gather-done` inputs: a tap on the log
 * embedded, the worker processes' own logs on NATS); replicas = workers holding the array
 * at the end. Embedded: Float64Array(25e6); NATS: Uint8Array(200e6), which the NATS codec
 * carries as raw bytes (a Float64Array would go as JSON).
 */
async function w4(c: Extract<Case, { kind: "W4" }>, hosts: Hosts): Promise<Row[]> {
  const walls: number[] = [];
  const moved: number[] = [];
  const transfers: number[] = [];
  const replicas: (number | null)[] = [];
  const placement: number[][] = [];
  const steals: unknown[] = [];
  const firstDurations: (number[] | null)[] = [];
  const nats = hosts.transport === "nats";
  for (let r = 0; r < c.reps; r++) {
    const h = await hosts.start({ workers: 4, log: c.log, stealing: c.stealing, observe: true, countPrefix: "fast-", ...(c.saturation !== undefined ? { saturation: c.saturation } : {}) }, "w4");
    const client = h.client;
    const tiny = c.variant === "pinned" ? [0, 1, 2, 3] : [];
    const values: ArrayLike<number>[] = nats
      ? [new Uint8Array(c.elements * 8).fill(r + 1), ...tiny.map((k) => Uint8Array.of(k))]
      : [new Float64Array(c.elements).fill(r + 1), ...tiny.map((k) => Float64Array.of(k))];
    // Keys of the form scatter gives (<type>-<32 hex>), without hashing 200 MB.
    const keys = values.map(() => `${nats ? "uint8array" : "float64array"}-${randomHex(16)}`);
    const data = await client.scatter(values, { workers: [h.workerNames[0]!], keys });
    const expected = values[0]!.length;
    const t0 = performance.now();
    const futs = Array.from({ length: c.nTasks }, (_, i) => client.submit<number>("fast", [data[0], i], { pure: false }));
    const res = await client.gather(futs);
    walls.push((performance.now() - t0) / 1000);
    if (res.some((x) => x !== expected)) throw new Error("W4: wrong results");
    replicas.push(h.replicas(keys[0]!));
    placement.push(await h.keysPerWorker("fast-"));
    steals.push(h.steals());
    firstDurations.push(h.firstDurationsMs());
    const closed = await h.close();
    moved.push(closed.bytesMoved ?? 0);
    transfers.push(closed.transfers ?? 0);
  }
  const bytes = c.elements * 8;
  const on = c.stealing ? "on" : "off";
  const sat = c.saturation === "adaptive" ? ".adaptive" : "";
  const satLabel = c.saturation === "adaptive" ? ", adaptive saturation" : "";
  return [
    {
      id: `W4.${c.variant}.stealing-${on}.makespan${sat}${hosts.idSuffix}`,
      workload: "W4",
      label: `W4 bad steal (${c.variant}) ${bytes / 1e6} MB + ${c.nTasks}x${FAST_MS}ms, 4x1, stealing ${on}${satLabel}: makespan${hosts.labelSuffix}`,
      unit: "s",
      higherIsBetter: false,
      value: stats(walls),
      status: "ok",
      shape: `W4.${c.variant}.stealing-${on}.makespan`,
      extra: { [nats ? "keys_per_worker_incl_data" : "tasks_per_worker"]: placement, replicas_at_end: replicas, transfers, steals, first_duration_samples_ms: firstDurations },
    },
    {
      id: `W4.${c.variant}.stealing-${on}.moved${sat}${hosts.idSuffix}`,
      workload: "W4",
      label: `W4 (${c.variant}) bytes moved between workers, stealing ${on}${satLabel}${hosts.labelSuffix}`,
      unit: "MB",
      higherIsBetter: false,
      value: stats(moved.map((b) => b / 1e6)),
      status: "ok",
      shape: `W4.${c.variant}.stealing-${on}.moved`,
      extra: { data_mb: bytes / 1e6, copies: moved.map((b) => Number((b / bytes).toFixed(3))) },
    },
  ];
}

// ---- W5 imbalance ------------------------------------------------------------------------------

/**
 * 4 workers x 1 thread; nLong tasks of longMs and nShort of shortMs, one function, in the
 * order Python's random.Random(seed).shuffle gives (the Dask script's order exactly).
 * map: one client.map with keys work-0000.. in that order; submit: one submit per task.
 * Fresh cluster per repetition. Lower bound max(total / 4 threads, longest task).
 */
async function w5(c: Extract<Case, { kind: "W5" }>, hosts: Hosts): Promise<Row[]> {
  const durs = pythonShuffle([...Array<number>(c.nLong).fill(c.longMs / 1000), ...Array<number>(c.nShort).fill(c.shortMs / 1000)], c.seed);
  const total = durs.reduce((a, b) => a + b, 0);
  const lower = Math.max(total / 4, c.longMs / 1000);
  const walls: number[] = [];
  const steals: unknown[] = [];
  for (let r = 0; r < c.reps; r++) {
    const h = await hosts.start({ workers: 4, log: c.log, stealing: c.stealing, observe: true, countPrefix: "work-", ...(c.saturation !== undefined ? { saturation: c.saturation } : {}) }, "w5");
    const client = h.client;
    const t0 = performance.now();
    let futs: Future[];
    if (c.mode === "map") {
      futs = client.map("work", durs, { keys: durs.map((_, i) => `work-${String(i).padStart(4, "0")}`) });
    } else {
      futs = durs.map((d, i) => client.submit("work", [d, i], { pure: false }));
    }
    await client.gather(futs);
    walls.push((performance.now() - t0) / 1000);
    steals.push(h.steals());
    await h.close();
  }
  const on = c.stealing ? "on" : "off";
  const adaptive = c.saturation === "adaptive";
  return [
    {
      id: `W5.${c.mode}.stealing-${on}${adaptive ? ".adaptive" : ""}${hosts.idSuffix}`,
      workload: "W5",
      label: `W5 imbalance ${c.nLong}x${c.longMs}ms+${c.nShort}x${c.shortMs}ms (${c.mode}), 4x1, stealing ${on}${adaptive ? ", adaptive saturation" : ""}: makespan / lower bound ${lower.toFixed(3)}s${hosts.labelSuffix}`,
      unit: "x bound",
      higherIsBetter: false,
      value: stats(walls.map((w) => w / lower)),
      status: "ok",
      shape: `W5.${c.mode}.stealing-${on}`,
      extra: { lower_bound_s: lower, wall_s: stats(walls), steals },
    },
  ];
}

// ---- W7 CPU-bound ----------------------------------------------------------------------------

/** W7's JIT warm-up: rounds of one task of no work per thread before the timed repetitions. */
const W7_WARM_ROUNDS = 1500;
/** Embedded W7: the timed runs start this long after the cluster (V8's memory reducer, see w7). */
const W7_REDUCER_SETTLED_MS = 11_000;

/**
 * N tasks of `ms` pure CPU (bench/cpu-tasks.mjs, on the workers' executor threads), cores =
 * os.availableParallelism(): "workers" = cores workers x 1 thread, "threads" = 1 worker x
 * cores threads. A task is a fixed count of loop iterations, calibrated here first to take
 * `ms` of CPU. One cluster, an untimed warm-up of 2 x cores tasks (threads import the module
 * and compile the loop; the scheduler learns the duration) and of 1,500 rounds of one task of
 * no work per thread (the JIT), then the timed repetitions. natsched's default workerSaturation
 * ("adaptive"). Ideal = N x ms / cores.
 */
async function w7(c: Extract<Case, { kind: "W7" }>, hosts: Hosts): Promise<Row[]> {
  const cores = availableParallelism();
  const tasks = (await import(pathToFileURL(join(HERE, "cpu-tasks.mjs")).href)) as { iterationsFor(ms: number): number };
  const iterations = tasks.iterationsFor(c.ms);
  const [workers, threads] = c.shape === "workers" ? [cores, 1] : [1, cores];
  const ideal = (c.nTasks * c.ms) / 1000 / cores;
  // natsched's default saturation, as a user runs it (W1-W5 place with Dask's 1.1, to compare
  // placements); Dask runs its own default.
  const started = performance.now();
  const h = await hosts.start({ workers, threadsPerWorker: threads, log: c.log, threadModule: "bench/cpu-tasks.mjs", saturation: "adaptive" }, "w7");
  const walls: number[] = [];
  // The CPU the executor threads spent on each timed run: what the tasks took on this machine
  // then, which drifts by several percent between runs (the same loop, other tenants' load).
  const works: number[] = [];
  try {
    const run = async (n: number): Promise<number> => {
      const t0 = performance.now();
      const futs = Array.from({ length: n }, (_, i) => h.client.submit("spin", [iterations, i], { pure: false }));
      const got = (await h.client.gather(futs)) as number[];
      const wall = (performance.now() - t0) / 1000;
      if (got.length !== n || got.some((x, i) => x !== i)) throw new Error("W7: spin returned wrong values");
      release(futs);
      if (!(await h.waitIdle())) throw new Error("W7: the scheduler did not forget the previous run");
      return wall;
    };
    await run(2 * cores);
    // The scheduler, the workers and the client stay in V8's baseline tiers until a function
    // has run long enough (V8 counts the bytecode it executed), at several times the CPU a
    // message of their optimized code; on NATS that CPU shares the cores with the executor
    // threads. W7's steady state is one message per task each way, so the warm-up is that
    // too: rounds of one task of no work per thread, under a prefix of their own (so the
    // duration `spin` learned stays 20 ms), as W1 warms up with its 10,000 untimed tasks; a
    // long-running cluster is past this.
    for (let round = 0; round < W7_WARM_ROUNDS; round++) {
      const warm = Array.from({ length: cores }, (_, i) => h.client.submit("spin", [0, i], { pure: false, key: `w7warm-${round}-${i}` }));
      await h.client.gather(warm);
      release(warm);
    }
    if (!(await h.waitIdle())) throw new Error("W7: the scheduler did not forget the warm-up");
    // Embedded, the cluster's threads live in this process, where V8's memory reducer is on (a
    // library leaves its host's flags alone; the daemons turn it off, cli/daemon-heap.ts). It
    // collects each thread's isolate two or three times some 8 s after the threads start,
    // once they allocate little, as an executor running pure CPU does: 100-250 ms of CPU on
    // V8's helper threads in the middle of a timed run (--trace-gc: `Mark-Compact (reduce)`).
    // A cluster that has run for a while is past it; the timed runs start once this one has.
    if (hosts.transport === "memory") await sleep(Math.max(0, W7_REDUCER_SETTLED_MS - (performance.now() - started)));
    for (let r = 0; r < c.reps; r++) {
      const before = namedThreadsCpuMs(h.workerPids, EXECUTOR_THREAD);
      walls.push(await run(c.nTasks));
      const after = namedThreadsCpuMs(h.workerPids, EXECUTOR_THREAD);
      // Nothing counted (no /proc, or threads that do not name themselves): no work row.
      if (before !== null && after !== null && after > before) works.push((after - before) / 1000);
    }
  } finally {
    await h.close();
  }
  // On NATS, the same shape with nothing of natsched in it (bench/w7-floor.ts), right after:
  // what the transport, the processes' wake-ups and the executor hop cost on this machine now.
  const floor = hosts.transport === "nats" ? await floorShape(c.shape, c.nTasks, c.ms, c.reps) : null;
  const ratios = stats(walls.map((w) => w / ideal));
  const rows: Row[] = [
    {
      id: `W7.${c.shape}${hosts.idSuffix}`,
      workload: "W7",
      label: `W7 CPU-bound ${c.nTasks}x${c.ms}ms, ${workers}x${threads} (threads), log ${c.log ? "on" : "off"}: makespan / ideal ${ideal.toFixed(2)}s${hosts.labelSuffix}`,
      unit: "x ideal",
      higherIsBetter: false,
      value: ratios,
      status: "ok",
      shape: `W7.${c.shape}`,
      extra: { cores, iterations_per_task: iterations, ideal_s: ideal, wall_s: stats(walls), workerSaturation: "adaptive", ...(floor ? { floor: { median: floor.median, min: floor.min, max: floor.max, reps: floor.reps } } : {}) },
      ...(floor ? { note: `floor (the same processes and threads, three messages a task, without natsched: bench/w7-floor.ts) ${floor.median.toFixed(2)} (${floor.min.toFixed(2)}-${floor.max.toFixed(2)}): natsched ${(ratios.median - floor.median >= 0 ? "+" : "") + (ratios.median - floor.median).toFixed(2)} over it` } : {}),
    },
  ];
  // The same runs over the work the tasks did: makespan / (the executor threads' CPU / cores).
  // 1.0 is no executor ever idle or waiting for a core; the machine's speed drops out.
  if (works.length === walls.length) {
    const workRatios = stats(walls.map((w, i) => w / (works[i]! / cores)));
    const perTask = stats(works.map((w) => (w * 1000) / c.nTasks));
    rows.push({
      id: `W7.${c.shape}.work${hosts.idSuffix}`,
      workload: "W7",
      label: `W7 CPU-bound ${c.nTasks}x${c.ms}ms, ${workers}x${threads}, log ${c.log ? "on" : "off"}: makespan / (tasks' CPU / cores)${hosts.labelSuffix}`,
      unit: "x work",
      higherIsBetter: false,
      value: workRatios,
      status: "ok",
      shape: `W7.${c.shape}.work`,
      extra: { cores, task_cpu_ms: perTask, executor_cpu_s: stats(works), wall_s: stats(walls), ...(floor?.work ? { floor: floor.work } : {}) },
      note: `a task took ${perTask.median.toFixed(1)} ms of CPU (${perTask.min.toFixed(1)}-${perTask.max.toFixed(1)} over the runs) for ${c.ms} ms calibrated` + (floor?.work ? `; floor ${floor.work.median.toFixed(2)} (${floor.work.min.toFixed(2)}-${floor.work.max.toFixed(2)}): natsched ${(workRatios.median - floor.work.median >= 0 ? "+" : "") + (workRatios.median - floor.work.median).toFixed(2)} over it` : ""),
    });
  }
  return rows;
}

// ---- W6 scale ----------------------------------------------------------------------------------

/** A summation tree over `leaves` leaves with fan-in k, as a named graph; the root key last. */
function treeGraph(leaves: number, k: number): { graph: Record<string, unknown>; root: string; n: number } {
  const graph: Record<string, unknown> = {};
  let layer: string[] = [];
  for (let i = 0; i < leaves; i++) {
    const key = `one-${i}`;
    graph[key] = ["one", i];
    layer.push(key);
  }
  for (let depth = 1; layer.length > 1; depth++) {
    const next: string[] = [];
    for (let j = 0; j < layer.length; j += k) {
      const key = `add-${depth}-${j / k}`;
      graph[key] = ["add", ...layer.slice(j, j + k)];
      next.push(key);
    }
    layer = next;
  }
  return { graph, root: layer[0]!, n: Object.keys(graph).length };
}

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g === undefined) throw new Error("W6 memory needs node --expose-gc (bench/run.ts passes it to its children)");
  g();
  g();
}

/**
 * Scheduler memory per task: a cluster with no workers, so the whole graph stays in the
 * scheduler (roots queued or no-worker, the rest waiting). heapUsed after a full GC once the
 * scheduler has every task, minus heapUsed after a full GC before the graph was built,
 * divided by the task count. The client's graph object is dropped before measuring; the
 * client keeps one Future (the root). This is everything the scheduler keeps per task:
 * task records, dependency sets, specs (arguments), queues, indexes.
 */
async function w6Memory(c: Extract<Case, { kind: "W6-memory" }>): Promise<Row[]> {
  const cluster = await LocalCluster.start({ workers: 0, functions: FUNCTIONS, log: false, configFile: false });
  const client = cluster.client();
  await client.connect();
  gc();
  const before = process.memoryUsage();
  const t0 = performance.now();
  let built: ReturnType<typeof treeGraph> | null = treeGraph(c.leaves, c.fanin);
  const n = built.n;
  const futures = client.persist(built.graph, { keys: [built.root] });
  built = null;
  while (cluster.scheduler.core.tasks.size < n) await sleep(10);
  await cluster.flush();
  const ingest = (performance.now() - t0) / 1000;
  gc();
  const after = process.memoryUsage();
  const perTask = (after.heapUsed - before.heapUsed) / n;
  const rows: Row[] = [
    {
      id: `W6.memory.n${n}`,
      workload: "W6",
      label: `W6 scheduler memory per task, ${n} tasks held (fan-in ${c.fanin} tree, no workers)`,
      unit: "KB/task",
      higherIsBetter: false,
      value: stats([perTask / 1024]),
      status: "ok",
      extra: {
        method: "heapUsed after gc() with all tasks in the scheduler minus before, / tasks",
        heap_before_mb: Math.round(before.heapUsed / 2 ** 20),
        heap_after_mb: Math.round(after.heapUsed / 2 ** 20),
        rss_delta_per_task_kb: Number(((after.rss - before.rss) / n / 1024).toFixed(3)),
        external_delta_per_task_kb: Number(((after.external - before.external) / n / 1024).toFixed(3)),
        build_submit_ingest_s: Number(ingest.toFixed(2)),
      },
    },
  ];
  release(Object.values(futures));
  await cluster.close();
  return rows;
}

/**
 * Throughput of the same tree through the embedded cluster: 2 workers x 1 thread, log off,
 * no-op tasks, persist of the named graph timed until the root's result. Peak heap is
 * sampled every 1,000 task calls (includes garbage and the client's graph: an upper bound,
 * reported as extra).
 */
async function w6Embedded(c: Extract<Case, { kind: "W6-embedded" }>): Promise<Row[]> {
  const walls: number[] = [];
  const ingest: number[] = [];
  const peaks: number[] = [];
  let n = 0;
  for (let r = 0; r < c.reps; r++) {
    const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 1, functions: FUNCTIONS, log: false, configFile: false });
    const client = cluster.client();
    await client.connect();
    gc();
    const base = getHeapStatistics().used_heap_size;
    Object.assign(heapProbe, { every: 1000, calls: 0, peak: base });
    const t0 = performance.now();
    let built: ReturnType<typeof treeGraph> | null = treeGraph(c.leaves, c.fanin);
    n = built.n;
    const root = built.root;
    const futures = client.persist(built.graph, { keys: [root] });
    built = null;
    const rootFuture = futures[root]!;
    void cluster.flush().then(() => ingest.push((performance.now() - t0) / 1000));
    const result = await rootFuture.result();
    walls.push((performance.now() - t0) / 1000);
    heapProbe.every = 0;
    peaks.push((heapProbe.peak - base) / n / 1024);
    if (result !== c.leaves) throw new Error(`W6: root is ${String(result)}, expected ${c.leaves}`);
    release([rootFuture]);
    await cluster.close();
  }
  return [
    {
      id: `W6.embedded.n${n}`,
      workload: "W6",
      label: `W6 ${n}-task fan-in-${c.fanin} tree, embedded 2x1, log off`,
      unit: "tasks/s",
      higherIsBetter: true,
      value: stats(walls.map((w) => n / w), 4),
      status: "ok",
      extra: { n_tasks: n, wall_s: stats(walls), submit_until_delivered_s: ingest.length ? stats(ingest) : undefined, peak_heap_kb_per_task_sampled: stats(peaks) },
    },
  ];
}

/** The same tree through the simulator (natsched/sim), timed in real seconds. */
async function w6Sim(c: Extract<Case, { kind: "W6-sim" }>): Promise<Row[]> {
  const simPath = new URL("../sim.ts", import.meta.url);
  if (!existsSync(simPath)) return [{ id: "W6.sim", workload: "W6", label: "W6 simulator", unit: "s", higherIsBetter: false, value: null, status: "not-available", note: "sim.ts (simulate) not available yet" }];
  const { simulate } = (await import("../sim.js")) as typeof import("../sim.js");
  const { graph, n } = treeGraph(c.leaves, c.fanin);
  const tasks = Object.entries(graph).map(([key, v]) => {
    const spec = v as [string, ...unknown[]];
    return spec[0] === "one" ? { key, duration: 0.0001, nbytes: 8 } : { key, deps: spec.slice(1) as string[], duration: 0.0001, nbytes: 8 };
  });
  const t0 = performance.now();
  // The log kept in memory (the default, result.log) or not kept (`log: false`, for scale runs).
  const result = simulate({ workers: [{ name: "worker-0", nthreads: 1 }, { name: "worker-1", nthreads: 1 }], tasks }, c.log === "dropped" ? { log: false } : {});
  const real = (performance.now() - t0) / 1000;
  // The in-memory log is kept compactly and built into records on first read (log/compact-log.ts): timed apart.
  const t1 = performance.now();
  const logRecords = result.log.length;
  const materialize = (performance.now() - t1) / 1000;
  return [
    {
      id: `W6.sim.log-${c.log}.n${n}`,
      workload: "W6",
      label: `W6 ${n}-task fan-in-${c.fanin} tree through the simulator (2x1 workers), log ${c.log === "dropped" ? "not kept" : "kept in memory"}`,
      unit: "s",
      higherIsBetter: false,
      value: stats([real]),
      status: "ok",
      extra: { n_tasks: n, tasks_per_s: Math.round(n / real), log_records: logRecords, log_materialize_s: Number(materialize.toFixed(2)), virtual_makespan_s: result.makespan, extrapolated_1M_s: Number(((real * 1e6) / n).toFixed(1)) },
    },
  ];
}

// ---- R1 replay ---------------------------------------------------------------------------------

/**
 * R1: replay with verification. Writes a log by running a workload (W1: n no-op tasks after
 * a 1,000-task warm-up, 2x1; W6 shape: a fan-in-2 tree), then times `replay(path)` from
 * replay/replay.ts: every actor re-run through its machines, every recorded transition
 * checked. Transitions verified per second of wall time (reading and parsing the file
 * included), per repetition over the same log.
 */
async function r1(c: Extract<Case, { kind: "R1" }>): Promise<Row[]> {
  const rows: Row[] = [];
  const label = (what: string): string => `R1 replay with verification of the ${what} log`;
  if (!existsSync(new URL("../replay/replay.ts", import.meta.url))) {
    for (const what of ["W1", "W6"]) rows.push({ id: `R1.${what.toLowerCase()}`, workload: "R1", label: label(what), unit: "transitions/s", higherIsBetter: true, value: null, status: "not-available", note: "replay/replay.ts (replay()) not available yet" });
    return rows;
  }
  const mod = (await import("../replay/replay.js" as string)) as { replay?: (log: string, options?: { threads?: number }) => Promise<{ ok: boolean; stats: { records: number; inputs: number; transitions: number; seconds: number; threads?: number } }> };
  const replay = mod.replay;
  if (typeof replay !== "function") {
    for (const what of ["W1", "W6"]) rows.push({ id: `R1.${what.toLowerCase()}`, workload: "R1", label: label(what), unit: "transitions/s", higherIsBetter: true, value: null, status: "not-available", note: "replay/replay.ts has no replay() export yet" });
    return rows;
  }
  const logs: { what: string; path: string; tasks: number }[] = [];
  {
    const path = logPath("r1-w1");
    const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 1, functions: FUNCTIONS, log: { path }, configFile: false });
    const client = cluster.client();
    for (const n of [Math.min(1000, c.n), c.n]) {
      const futs = client.map("noop", Array.from({ length: n }, (_, i) => i), { pure: false });
      await client.gather(futs);
      release(futs);
      await waitIdle(cluster);
    }
    await cluster.close();
    logs.push({ what: "W1", path, tasks: c.n + Math.min(1000, c.n) });
  }
  {
    const path = logPath("r1-w6");
    const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 1, functions: FUNCTIONS, log: { path }, configFile: false });
    const client = cluster.client();
    const { graph, root, n } = treeGraph(c.treeLeaves, 2);
    const f = client.persist(graph, { keys: [root] });
    await f[root]!.result();
    release(Object.values(f));
    await waitIdle(cluster);
    await cluster.close();
    logs.push({ what: "W6", path, tasks: n });
  }
  // One untimed replay first, as the other workloads warm up: the first replay() of a process
  // starts its replay threads (here from the TypeScript sources), at a fraction of the rate
  // of the replays after it. Its rate is kept as cold_first_run.
  const t0 = performance.now();
  const cold = await replay(logs[0]!.path, c.threads === undefined ? undefined : { threads: c.threads });
  const coldRate = Math.round(cold.stats.transitions / ((performance.now() - t0) / 1000));
  for (const l of logs) {
    const rates: number[] = [];
    const engine: number[] = [];
    let last: Awaited<ReturnType<typeof replay>> | undefined;
    for (let r = 0; r < c.reps; r++) {
      const t0 = performance.now();
      last = await replay(l.path, c.threads === undefined ? undefined : { threads: c.threads });
      const wall = (performance.now() - t0) / 1000;
      rates.push(last.stats.transitions / wall);
      engine.push(last.stats.transitions / last.stats.seconds);
    }
    const bytes = statSync(l.path).size;
    removeQuietly(l.path);
    rows.push({
      id: `R1.${l.what.toLowerCase()}`,
      workload: "R1",
      label: `${label(l.what)} (${l.tasks} tasks, ${Math.round(bytes / 2 ** 20)} MB)`,
      unit: "transitions/s",
      higherIsBetter: true,
      value: stats(rates, 4),
      status: "ok",
      ...(last && !last.ok ? { note: "replay did not verify the log (ok: false)" } : {}),
      extra: { ok: last?.ok, records: last?.stats.records, inputs: last?.stats.inputs, transitions: last?.stats.transitions, records_per_s: last ? Math.round(last.stats.records / (last.stats.seconds || 1)) : undefined, engine_transitions_per_s: stats(engine, 4), log_bytes: bytes, threads: last?.stats.threads, ...(l === logs[0] ? { cold_first_run_transitions_per_s: coldRate } : {}) },
    });
  }
  return rows;
}

function saturationUnavailable(saturation: Saturation, id: string, workload: string, unit: string): Row {
  return { id, workload, label: `${id}: saturation ${String(saturation)}`, unit, higherIsBetter: false, value: null, status: "not-available", note: `not available: this checkout's scheduler does not accept workerSaturation: ${JSON.stringify(saturation)}` };
}

export async function runCase(c: Case): Promise<Row[]> {
  const hosts = new Hosts(c.transport ?? "memory");
  try {
    switch (c.kind) {
      case "W1":
        return await w1(c, hosts);
      case "W2":
        return c.saturation === undefined || saturationSupported(c.saturation) ? await w2(c, hosts) : [saturationUnavailable(c.saturation, `W2.fanin${c.fanin}.log-${c.log ? "on" : "off"}.adaptive${hosts.idSuffix}`, "W2", "tasks/s")];
      case "W3":
        return c.saturation === undefined || saturationSupported(c.saturation) ? await w3(c, hosts) : [saturationUnavailable(c.saturation, `W3.pinned.stealing-${c.stealing ? "on" : "off"}.adaptive${hosts.idSuffix}`, "W3", "x ideal")];
      case "W4":
        return await w4(c, hosts);
      case "W5":
        return c.saturation === undefined || saturationSupported(c.saturation) ? await w5(c, hosts) : [saturationUnavailable(c.saturation, `W5.${c.mode}.stealing-${c.stealing ? "on" : "off"}.adaptive${hosts.idSuffix}`, "W5", "x bound")];
      case "W6-memory":
        return await w6Memory(c);
      case "W6-embedded":
        return await w6Embedded(c);
      case "W6-sim":
        return await w6Sim(c);
      case "R1":
        return await r1(c);
      case "W7":
        return await w7(c, hosts);
      case "W8":
        return await w8(c, hosts);
      case "SOAK":
        // Progress on stderr: a full soak runs for minutes.
        return soakRows(
          await soak(
            c,
            (r) => console.error(roundLine(r)),
            (w) => w.tasks > 0 && console.error(`    warm-up: ${w.tasks} tasks in ${w.seconds} s, tombstones ${JSON.stringify(w.tombstones)}`),
          ),
        );
    }
  } finally {
    await hosts.stop();
  }
}
