/** Scheduler and workers answer the NATS micro-service protocol ($SRV.PING/INFO/STATS) on nats-server 2.9. */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";

const CLUSTER = "svc";
let server: NatsServer;
let scheduler: SchedulerProcess;
let workers: WorkerProcess[];
let nc: NatsConnection;

beforeAll(async () => {
  server = await NatsServer.start();
  scheduler = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, log: false, configFile: false });
  workers = await Promise.all(
    ["a", "b"].map((name) => WorkerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, name, nthreads: 2, functions: tasks.default, configFile: false })),
  );
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await nc?.close();
  await Promise.all((workers ?? []).map((w) => w.close()));
  await scheduler?.close();
  await server?.dispose();
});

/** Every answer to `subject` within `ms`. */
async function gatherAnswers<T>(subject: string, ms = 500): Promise<T[]> {
  const out: T[] = [];
  const answers = await nc.requestMany(subject, "", { maxWait: ms });
  for await (const m of answers) out.push(m.json<T>());
  return out;
}

describe("NATS services", () => {
  it("answers $SRV.PING for the scheduler and each worker", async () => {
    const pings = await gatherAnswers<{ name: string; metadata: Record<string, string> }>("$SRV.PING");
    const seen = pings.map((p) => `${p.name}:${p.metadata.name}`).sort();
    expect(seen).toEqual(["natsched-scheduler:scheduler", "natsched-worker:a", "natsched-worker:b"]);
    expect(pings.every((p) => p.metadata.cluster === CLUSTER)).toBe(true);
  });

  it("describes the status endpoint in $SRV.INFO", async () => {
    const [info] = await gatherAnswers<{ name: string; version: string; endpoints: { name: string; subject: string }[] }>("$SRV.INFO.natsched-scheduler");
    expect(info!.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(info!.endpoints).toEqual([expect.objectContaining({ name: "status", subject: `natsched.${CLUSTER}.status.scheduler` })]);
  });

  it("reports tasks by state, workers and processing in $SRV.STATS, and on the status endpoint", async () => {
    const client = await connectClient({ servers: server.url, cluster: CLUSTER });
    try {
      const futures = client.map("inc", [1, 2, 3, 4]);
      await client.gather(futures);
      const [stats] = await gatherAnswers<{ endpoints: { name: string; num_requests: number; data: Record<string, unknown> }[] }>("$SRV.STATS.natsched-scheduler");
      expect(stats!.endpoints[0]!.data).toMatchObject({ cluster: CLUSTER, state: "running", workers: 2, threads: 4, tasks: { memory: 4 } });
      const workerStats = await gatherAnswers<{ endpoints: { data: { name: string; tasks: Record<string, number> } }[] }>("$SRV.STATS.natsched-worker");
      const held = workerStats.map((s) => s.endpoints[0]!.data.tasks.memory ?? 0).reduce((a, b) => a + b, 0);
      expect(held).toBe(4);
      const status = (await nc.request(`natsched.${CLUSTER}.status.worker.a`, "", { timeout: 2000 })).json<{ name: string; nthreads: number }>();
      expect(status).toMatchObject({ name: "a", nthreads: 2 });
      // Running totals besides the gauges.
      await expect(client.submit("fail", ["boom"]).result()).rejects.toThrow(/boom/);
      const [after] = await gatherAnswers<{ endpoints: { data: { totals: Record<string, number> } }[] }>("$SRV.STATS.natsched-scheduler");
      expect(after!.endpoints[0]!.data.totals).toEqual({ tasksCompleted: 4, tasksErred: 1, stealsRequested: expect.any(Number), stealsConfirmed: expect.any(Number), stealsRejected: expect.any(Number), refused: 0 });
      const perWorker = (await gatherAnswers<{ endpoints: { data: { totals: Record<string, number> } }[] }>("$SRV.STATS.natsched-worker")).map((s) => s.endpoints[0]!.data.totals);
      expect(perWorker).toHaveLength(2);
      expect(perWorker.reduce((n, t) => n + t.tasksCompleted!, 0)).toBe(4);
      expect(perWorker.reduce((n, t) => n + t.tasksErred!, 0)).toBe(1);
      // The client's gather fetched the 4 results from the workers.
      expect(perWorker.reduce((n, t) => n + t.keysServed!, 0)).toBeGreaterThanOrEqual(4);
      expect(perWorker.reduce((n, t) => n + t.bytesServed!, 0)).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it("answers an instance by its id, counts requests to the endpoint, and stops answering when stopped", async () => {
    const pings = await gatherAnswers<{ type: string; id: string; metadata: Record<string, string> }>("$SRV.PING.natsched-worker");
    expect(pings.map((p) => p.type)).toEqual(["io.nats.micro.v1.ping_response", "io.nats.micro.v1.ping_response"]);
    const b = pings.find((p) => p.metadata.name === "b")!;
    const only = await gatherAnswers<{ id: string; metadata: Record<string, string> }>(`$SRV.INFO.natsched-worker.${b.id}`);
    expect(only.map((i) => [i.id, i.metadata.name])).toEqual([[b.id, "b"]]);
    const count = async () => (await gatherAnswers<{ endpoints: { num_requests: number }[] }>(`$SRV.STATS.natsched-worker.${b.id}`))[0]!.endpoints[0]!.num_requests;
    const before = await count();
    await nc.request(`natsched.${CLUSTER}.status.worker.b`, "", { timeout: 2000 });
    await nc.request(`natsched.${CLUSTER}.status.worker.b`, "", { timeout: 2000 });
    expect(await count()).toBe(before + 2);
    const extra = await WorkerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, name: "c", nthreads: 1, functions: tasks.default, configFile: false });
    expect((await gatherAnswers("$SRV.PING.natsched-worker")).length).toBe(3);
    await extra.close();
    expect((await gatherAnswers("$SRV.PING.natsched-worker")).length).toBe(2);
  });
});
