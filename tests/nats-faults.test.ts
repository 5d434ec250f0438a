/**
 * Worker processes killed with SIGKILL: noticed by missed heartbeats (workerTtl 2 s here),
 * their work and data recomputed elsewhere; a task that keeps killing workers fails after
 * allowedFailures (1 here) with a clear error.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import type { Client } from "../actors/client.js";
import { TaskFailedError } from "../machines/errors.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "faults";
const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;
const POLICY = { NATSCHED_SCHEDULER__WORKER_TTL: "2", NATSCHED_SCHEDULER__ALLOWED_FAILURES: "1" };

let server: NatsServer;
let scheduler: NatschedProcess;
const workers = new Map<string, NatschedProcess>();
let client: Client;

function startWorker(name: string): NatschedProcess {
  const w = NatschedProcess.spawn(name, ["worker", "--nats", server.url, "--cluster", CLUSTER, "--name", name, "--nthreads", "2", "--functions", FUNCTIONS], POLICY);
  workers.set(name, w);
  return w;
}

beforeAll(async () => {
  server = await NatsServer.start();
  scheduler = NatschedProcess.spawn("scheduler", ["scheduler", "--nats", server.url, "--cluster", CLUSTER, "--no-log"], POLICY);
  await scheduler.waitFor(/natsched scheduler: cluster/);
  await Promise.all(["w1", "w2", "w3"].map((name) => startWorker(name).waitFor(/registered/)));
  client = await connectClient({ servers: server.url, cluster: CLUSTER });
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await Promise.all([...workers.values(), scheduler].filter(Boolean).map((p) => p.stop("SIGKILL")));
  await server?.dispose();
});

describe("worker processes that die", () => {
  it("recomputes the results and work of a worker killed mid-run", async () => {
    const futures = client.map("slowInc", Array.from({ length: 60 }, (_, i) => i), { pure: false });
    await futures[5]!.wait();
    const before = await client.workers();
    expect(before.find((w) => w.name === "w1")!.keys + before.find((w) => w.name === "w1")!.processing).toBeGreaterThan(0);
    expect(await workers.get("w1")!.stop("SIGKILL")).toBe(-1);
    const results = await client.gather(futures, { timeout: 20_000 });
    expect(results).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect((await client.workers()).map((w) => w.name).sort()).toEqual(["w2", "w3"]);
    for (const f of futures) f.release();
  }, 30_000);

  it("fails a task that kills every worker it runs on after allowedFailures, and keeps the cluster working", async () => {
    await startWorker("w4").waitFor(/registered/);
    const bad = client.submit("crash", [], { pure: false });
    const error = await bad.result({ timeout: 20_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskFailedError);
    expect((error as Error).message).toMatch(/workers died while running it/);
    const alive = (await client.workers()).map((w) => w.name);
    expect(alive).toHaveLength(1);
    expect(await client.submit("inc", [1], { pure: false }).result({ timeout: 10_000 })).toBe(2);
  }, 30_000);
});
