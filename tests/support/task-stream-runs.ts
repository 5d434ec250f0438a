/**
 * Real logs for the task-stream tests (fold, trace export, browser widget): an embedded
 * cluster run with transfers, a failing task, stealing and a worker killed mid-run, and the
 * simulator's example scenario (a steal and a kill at fixed virtual times).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { LocalCluster, MemoryLogSink } from "../../index.js";
import { simulate, type Scenario } from "../../sim.js";
import type { LogRecord } from "../../log/types.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const functions = {
  load: async (i: number) => {
    await sleep(20);
    return new Float64Array(1000).fill(i);
  },
  slow: async (_data: unknown, i: number) => {
    await sleep(60);
    return i;
  },
  boom: async () => {
    await sleep(5);
    throw new Error("boom");
  },
  sum: (...xs: number[]) => xs.reduce((a, b) => a + b, 0),
};

/** The embedded run's records: alpha (2 threads), beta (2), gamma (1, killed while busy). */
export async function embeddedRun(): Promise<LogRecord[]> {
  const log = new MemoryLogSink();
  const cluster = await LocalCluster.start({
    workers: [
      { name: "alpha", nthreads: 2 },
      { name: "beta", nthreads: 2 },
      { name: "gamma", nthreads: 1 },
    ],
    functions,
    log,
    configFile: false,
    config: { workStealing: true },
  });
  try {
    const client = cluster.client();
    const data = client.submit("load", [0], { workers: ["alpha"] });
    const parts = Array.from({ length: 40 }, (_, i) => client.submit("slow", [data, i]));
    const bad = client.submit("boom", []);
    const total = client.submit("sum", parts);
    // Kill gamma once it runs something: its execution is lost and recomputed elsewhere.
    for (let i = 0; i < 400 && cluster.workers.get("gamma")!.core.executing === 0; i++) await sleep(5);
    cluster.killWorker("gamma");
    await bad.result().catch(() => undefined);
    await total.result();
  } finally {
    await cluster.close();
  }
  return log.records;
}

/** The simulator's run of examples/scenario.json (a steal that aborts, worker b killed at 0.5 s). */
export function simulatedRun(): LogRecord[] {
  const scenario = JSON.parse(readFileSync(join(import.meta.dirname, "../../examples/scenario.json"), "utf8")) as Scenario;
  return simulate(scenario).log;
}
