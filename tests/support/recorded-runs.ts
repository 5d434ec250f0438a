/**
 * Real LocalCluster runs recorded to a log file, the shapes what-if must come close on
 * (tests/what-if-ratios.test.ts; bench/what-if-incident.ts runs the incident at full size):
 * an incident (scattered data on one worker, stealing, failing tasks, a worker killed
 * mid-run), many no-op tasks (the hosts' per-task costs are the run), a tree reduction, and
 * tasks that keep their executor thread's CPU busy.
 */
import { LocalCluster } from "../../actors/local-cluster.js";
import type { Future } from "../../actors/client.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const TASKS = "tests/support/cpu-tasks.mjs";

/** How big an incident is: `chunks` tasks read the scattered data, and everything scales with it. */
export interface IncidentShape {
  /** Scattered inputs (on worker-0 only) and the tasks reading them. */
  inputs: number;
  chunks: number;
  /** Tasks that throw. */
  failing: number;
  /** Width of each reduction step over the chunks' results. */
  fanin: number;
  /** Milliseconds a chunk task sleeps: 1 to this. */
  maxMs: number;
}

export const SMALL_INCIDENT: IncidentShape = { inputs: 6, chunks: 300, failing: 4, fanin: 10, maxMs: 6 };
/** About the incident: 2,970 tasks on 4 workers x 2 threads. */
export const FULL_INCIDENT: IncidentShape = { inputs: 20, chunks: 2400, failing: 16, fanin: 5, maxMs: 8 };

/**
 * 4 workers x 2 threads, stealing on (the default): inputs scattered to worker-0, chunk tasks
 * reading them (so placed on worker-0 and stolen from there), failing tasks, a reduction
 * over the chunks; worker-2 killed (LocalCluster.killWorker) once a third of the chunks are
 * done. Returns the number of tasks submitted.
 */
export async function recordIncident(path: string, shape: IncidentShape = SMALL_INCIDENT): Promise<number> {
  const functions = {
    chunk: async (data: Float64Array, i: number) => {
      await sleep(1 + ((i * 7919) % shape.maxMs));
      return data[i % data.length]! + i;
    },
    sum: (...xs: number[]) => xs.reduce((a, b) => a + b, 0),
    broken: (i: number) => {
      throw new Error(`bad record ${i}`);
    },
  };
  const cluster = await LocalCluster.start({ workers: 4, threadsPerWorker: 2, functions, log: { path }, configFile: false });
  try {
    const client = cluster.client();
    const inputs = await client.scatter(
      Array.from({ length: shape.inputs }, (_, i) => new Float64Array(20_000).fill(i)),
      { workers: ["worker-0"] },
    );
    const chunks = Array.from({ length: shape.chunks }, (_, i) => client.submit<number>("chunk", [inputs[i % inputs.length]!, i]));
    const broken = Array.from({ length: shape.failing }, (_, i) => client.submit("broken", [i]));
    let level: Future<number>[] = chunks;
    let submitted = chunks.length + broken.length;
    while (level.length > 1) {
      const next: Future<number>[] = [];
      for (let i = 0; i < level.length; i += shape.fanin) next.push(client.submit<number>("sum", level.slice(i, i + shape.fanin)));
      submitted += next.length;
      level = next;
    }
    await chunks[Math.floor(shape.chunks / 3)]!.wait();
    cluster.killWorker("worker-2");
    await level[0]!.result();
    await Promise.all(broken.map((f) => f.wait().catch(() => undefined)));
    return submitted;
  } finally {
    await cluster.close();
  }
}

/** `n` no-op tasks on 2 workers x 1 thread: the run is the hosts' per-task costs. */
export async function recordNoops(path: string, n: number): Promise<number> {
  const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 1, functions: { noop: (x: number) => x }, log: { path }, configFile: false });
  try {
    const client = cluster.client();
    await client.gather(client.map<number>("noop", Array.from({ length: n }, (_, i) => i)));
    return n;
  } finally {
    await cluster.close();
  }
}

/** A binary tree summing `leaves` leaves (2 ms each) on 3 workers x 2 threads: transfers at every level. */
export async function recordTree(path: string, leaves: number): Promise<number> {
  const functions = {
    leaf: async (i: number) => {
      await sleep(2);
      return i;
    },
    add: (a: number, b: number) => a + b,
  };
  const cluster = await LocalCluster.start({ workers: 3, threadsPerWorker: 2, functions, log: { path }, configFile: false });
  try {
    const client = cluster.client();
    let level: Future<number>[] = client.map<number>("leaf", Array.from({ length: leaves }, (_, i) => i));
    let submitted = level.length;
    while (level.length > 1) {
      const next: Future<number>[] = [];
      for (let i = 0; i + 1 < level.length; i += 2) next.push(client.submit<number>("add", [level[i]!, level[i + 1]!]));
      if (level.length % 2 === 1) next.push(level[level.length - 1]!);
      submitted += Math.floor(level.length / 2);
      level = next;
    }
    if ((await level[0]!.result()) !== (leaves * (leaves - 1)) / 2) throw new Error("wrong tree sum");
    return submitted;
  } finally {
    await cluster.close();
  }
}

/** `n` tasks keeping an executor thread's CPU busy for 5 to 15 ms, on 2 workers x 2 threads, after one short task per thread. */
export async function recordCpuSleeps(path: string, n: number): Promise<number> {
  const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 2, functions: TASKS, log: { path }, configFile: false });
  try {
    const client = cluster.client();
    // The executor threads start with the first task each runs, and that task's time includes
    // the start (what-if does not model it apart): one short task per thread first, together.
    await client.gather(Array.from({ length: 4 }, (_, i) => client.submit("spin", [1], { key: `boot-${i}` })));
    await client.gather(Array.from({ length: n }, (_, i) => client.submit("spin", [5 + ((i * 37) % 11)], { key: `spin-${i}` })));
    return n + 4;
  } finally {
    await cluster.close();
  }
}
