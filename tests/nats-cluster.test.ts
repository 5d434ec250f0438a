/**
 * End to end on real processes: a nats-server of the test's own, `natsched scheduler` and
 * three `natsched worker` processes, and a client in this process.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { Client } from "../index.js";
import type { Graph } from "../actors/graph-spec.js";
import { TaskFailedError } from "../machines/errors.js";
import { openLog } from "../log/reader.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "e2e";
const FUNCTIONS = join(REPO_ROOT, "tests", "support", "cluster-tasks.ts");

let server: NatsServer;
let dir: string;
let scheduler: NatschedProcess;
let workers: NatschedProcess[] = [];
let client: Client;

function natsArgs(): string[] {
  return ["--nats", server.url, "--cluster", CLUSTER];
}

beforeAll(async () => {
  server = await NatsServer.start();
  dir = mkdtempSync(join(tmpdir(), "natsched-e2e-"));
  scheduler = NatschedProcess.spawn("scheduler", ["scheduler", ...natsArgs(), "--log", join(dir, "scheduler.natlog")]);
  workers = ["w1", "w2", "w3"].map((name) =>
    NatschedProcess.spawn(name, ["worker", ...natsArgs(), "--name", name, "--nthreads", "2", "--functions", FUNCTIONS, ...(name === "w3" ? ["--resources", "GPU=1"] : [])]),
  );
  await scheduler.waitFor(/natsched scheduler: cluster e2e/);
  await Promise.all(workers.map((w) => w.waitFor(/registered with cluster e2e/)));
  client = await Client.connect({ servers: server.url, cluster: CLUSTER });
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await Promise.all([...workers, scheduler].filter(Boolean).map((p) => p.stop("SIGKILL")));
  await server?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A tree reduction over `n` leaves: load-i = inc(i), double-i, then pairwise sums to one total. */
function treeGraph(n: number): Graph {
  const graph: Graph = {};
  let level: string[] = [];
  for (let i = 0; i < n; i++) {
    graph[`load-${i}`] = ["inc", i];
    graph[`double-${i}`] = ["double", `load-${i}`];
    level.push(`double-${i}`);
  }
  for (let depth = 0; level.length > 1; depth++) {
    const next: string[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const key = `sum-${depth}-${i / 2}`;
      graph[key] = level[i + 1] === undefined ? ["add", level[i]!] : ["add", level[i]!, level[i + 1]!];
      next.push(key);
    }
    level = next;
  }
  return graph;
}

describe("a cluster of processes on NATS", () => {
  it("lists the three workers with their threads", async () => {
    const ws = await client.workers();
    expect(ws.map((w) => [w.name, w.nthreads]).sort()).toEqual([
      ["w1", 2],
      ["w2", 2],
      ["w3", 2],
    ]);
  });

  it("computes a graph with the same results as the embedded cluster", async () => {
    const graph = treeGraph(64);
    const local = await LocalCluster.start({ workers: 3, threadsPerWorker: 2, functions: tasks.default, log: false, configFile: false });
    let expected: Record<string, unknown>;
    try {
      expected = await local.client().compute(graph);
    } finally {
      await local.close();
    }
    const got = await client.compute(graph);
    expect(got).toEqual(expected);
    expect(Object.keys(got)).toHaveLength(Object.keys(graph).length);

    const x = client.submit("inc", [1]);
    const y = client.submit("add", [x, 10]);
    expect(await y.result()).toBe(12);
    expect(await client.gather(client.map("inc", [1, 2, 3]))).toEqual([2, 3, 4]);
    const gpu = client.submit("double", [21], { resources: { GPU: 1 } });
    expect(await gpu.result()).toBe(42);
  });

  it("rejects a failed task's result with the original message and key", async () => {
    const f = client.submit("fail", ["it broke"]);
    const error = await f.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskFailedError);
    expect((error as TaskFailedError).originalMessage).toBe("it broke");
    expect((error as TaskFailedError).key).toBe(f.key);
  });

  it("moves a 20 MB typed array between workers and to the client, in chunks", async () => {
    const n = 2_500_000;
    const big = client.submit<Float64Array>("ramp", [n, 0.5], { workers: ["w1"], pure: false });
    const summary = client.submit("describe", [big], { workers: ["w2"] });
    const sum = client.submit("total", [big], { workers: ["w3"] });
    expect(await summary.result()).toEqual({ type: "Float64Array", length: n, first: 0, last: (n - 1) * 0.5 });
    expect(await sum.result()).toBe((0.5 * n * (n - 1)) / 2);
    const local = await big.result();
    expect(local).toBeInstanceOf(Float64Array);
    expect(local.length).toBe(n);
    expect(local[n - 1]).toBe((n - 1) * 0.5);
    const holders = (await client.workers()).filter((w) => w.nbytes > 8 * n).map((w) => w.name);
    expect(holders.sort()).toEqual(["w1", "w2", "w3"]);
    big.release();
    summary.release();
    sum.release();
  });

  it("scatters a large value to one worker and computes on it from another", async () => {
    const data = tasks.ramp(300_000, 2);
    const [d] = await client.scatter([data], { workers: ["w2"] });
    expect(await client.submit("total", [d], { workers: ["w1"] }).result()).toBe(tasks.total(data));
  });

  it("prints workers, load and tasks with `natsched status`", async () => {
    const status = NatschedProcess.spawn("status", ["status", ...natsArgs()]);
    expect(await status.whenExited()).toBe(0);
    expect(status.log).toMatch(/cluster e2e: scheduler running, 3 worker\(s\), 6 thread\(s\)/);
    for (const w of ["w1", "w2", "w3"]) expect(status.log).toMatch(new RegExp(`^\\s+${w}\\s`, "m"));
    expect(status.log).toMatch(/^tasks: /m);
  });

  it("completes a run across a nats-server restart", async () => {
    const futures = client.map("slowInc", Array.from({ length: 200 }, (_, i) => i), { pure: false });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await server.restart();
    const results = await client.gather(futures, { timeout: 30_000 });
    expect(results).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(await client.submit("inc", [41]).result()).toBe(42);
    for (const f of futures) f.release();
  }, 40_000);

  it("shuts down cleanly on SIGTERM: a worker unregisters, the scheduler flushes its log", async () => {
    expect(await workers[2]!.stop("SIGTERM")).toBe(0);
    expect(workers[2]!.log).toMatch(/SIGTERM, unregistered/);
    const names = (await client.workers()).map((w) => w.name).sort();
    expect(names).toEqual(["w1", "w2"]);
    await client.close();
    expect(await scheduler.stop("SIGTERM")).toBe(0);
    expect(scheduler.log).toMatch(/event log flushed/);
    const log = await openLog(join(dir, "scheduler.natlog"));
    let records = 0;
    let stopped = false;
    for await (const r of log.records()) {
      records++;
      if (r.actor === "scheduler" && r.kind === "stop") stopped = true;
    }
    expect(records).toBeGreaterThan(100);
    expect(stopped).toBe(true);
    expect(log.problems).toEqual([]);
  });
});
