/**
 * The scheduler process killed (SIGKILL) mid-run and started again: it rebuilds its state
 * from its log in JetStream, catches up with the two live worker processes (results they
 * finished while it was down included), and the client's futures resolve with the right
 * results. Afterwards the cluster's log in JetStream replays clean.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import type { Client } from "../actors/client.js";
import { LocalCluster } from "../actors/local-cluster.js";
import { runCli } from "../cli/run.js";
import { LogCorruptError } from "../machines/errors.js";
import { JetStreamLogSink } from "../log/jetstream-log.js";
import { replayAt } from "../replay/replay-at.js";
import { openJetStreamLog } from "../log/jetstream-reader.js";
import { MemoryLogSink } from "../log/memory-log.js";
import type { LogRecord } from "../log/types.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "restart";
const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;
const POLICY = { NATSCHED_SCHEDULER__WORKER_TTL: "5" };

let server: NatsServer;
const processes: NatschedProcess[] = [];
let client: Client;

function spawn(label: string, args: string[], cluster = CLUSTER, env: Record<string, string> = POLICY): NatschedProcess {
  const p = NatschedProcess.spawn(label, [...args, "--nats", server.url, "--cluster", cluster, "--log", "jetstream"], env);
  processes.push(p);
  return p;
}

const startScheduler = (label: string, cluster = CLUSTER, env: Record<string, string> = POLICY) => spawn(label, ["scheduler"], cluster, env);
const startWorker = (name: string, cluster = CLUSTER, env: Record<string, string> = POLICY) =>
  spawn(`${cluster}-${name}`, ["worker", "--name", name, "--nthreads", "2", "--functions", FUNCTIONS], cluster, env);

beforeAll(async () => {
  server = await NatsServer.start();
  await startScheduler("scheduler").waitFor(/natsched scheduler: cluster/);
  await Promise.all(["w1", "w2"].map((name) => startWorker(name).waitFor(/registered/)));
  client = await connectClient({ servers: server.url, cluster: CLUSTER });
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await server?.dispose();
});

describe("a scheduler process killed and started again", () => {
  it("resumes from its JetStream log, and every future resolves with the right result", async () => {
    const n = 24;
    const slow = Array.from({ length: n }, (_, i) => client.submit<number>("slowInc", [i, 250], { pure: false }));
    const pairs = Array.from({ length: n / 2 }, (_, i) => client.submit<number>("add", [slow[2 * i], slow[2 * i + 1]], { pure: false }));
    const total = client.submit<number>("add", pairs, { key: "total" });
    await slow[2]!.wait();

    const first = processes[0]!;
    expect(await first.stop("SIGKILL")).toBe(-1);
    // Tasks go on finishing on the workers while no scheduler listens.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const second = startScheduler("scheduler-2");
    await second.waitFor(/resumed from its log: \d+ inputs re-run/);
    await second.waitFor(/resynced: 2 worker\(s\) answered; \d+ report\(s\) re-sent/, 20_000);
    expect(second.log).not.toMatch(/lost:/);

    expect(await client.gather(slow, { timeout: 30_000 })).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(await client.gather(pairs, { timeout: 30_000 })).toEqual(Array.from({ length: n / 2 }, (_, i) => 4 * i + 3));
    expect(await total.result({ timeout: 30_000 })).toBe((n * (n + 1)) / 2);
    expect((await client.workers()).map((w) => w.name).sort()).toEqual(["w1", "w2"]);

    // Everyone leaves cleanly, then the whole cluster's log replays: the scheduler's two
    // incarnations as one run, and the workers.
    await client.close();
    for (const p of processes.slice(1)) expect(await p.stop("SIGTERM")).toBe(0);
    const location = `${server.url}/${CLUSTER}`;
    const result = await replayAt(location);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    // The client logged to the cluster's JetStream log too (its default), and replays with the rest.
    expect(Object.keys(result.actors).sort()).toEqual([`client.${client.id}`, "scheduler", "worker.w1", "worker.w2"]);
    expect(result.actors[`client.${client.id}`]!.stopped).toBe(true);
    expect(result.actors.scheduler!.stopped).toBe(true);
    const out: string[] = [];
    expect(await runCli(["replay", location], { out: (t) => out.push(t), err: (t) => out.push(t) })).toBe(0);
  }, 90_000);

  it("declares a worker that died meanwhile lost after workerTtl, and recomputes its work elsewhere", async () => {
    const cluster = "restart-lost";
    const env = { NATSCHED_SCHEDULER__WORKER_TTL: "2" };
    const scheduler = startScheduler(`${cluster}-scheduler`, cluster, env);
    await scheduler.waitFor(/natsched scheduler: cluster/);
    const [w1, w2] = ["w1", "w2"].map((name) => startWorker(name, cluster, env));
    await Promise.all([w1!.waitFor(/registered/), w2!.waitFor(/registered/)]);
    const other = await connectClient({ servers: server.url, cluster });
    try {
      const futures = Array.from({ length: 12 }, (_, i) => other.submit<number>("slowInc", [i, 200], { pure: false }));
      await futures[0]!.wait();
      expect(await scheduler.stop("SIGKILL")).toBe(-1);
      expect(await w2!.stop("SIGKILL")).toBe(-1);
      const second = startScheduler(`${cluster}-scheduler-2`, cluster, env);
      await second.waitFor(/resynced: 1 worker\(s\) answered, lost: w2/, 20_000);
      expect(await other.gather(futures, { timeout: 30_000 })).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
      expect((await other.workers()).map((w) => w.name)).toEqual(["w1"]);
      // w2's own log ends where it was killed; the scheduler's replays clean.
      const replayed = await replayAt(`${server.url}/${cluster}`, { actor: "scheduler" });
      expect(replayed.actors.scheduler!.divergence).toBeUndefined();
      expect(replayed.problems.filter((p) => p.actor === "scheduler")).toEqual([]);
    } finally {
      await other.close();
    }
  }, 60_000);
});

/** The scheduler records of a small embedded run. */
async function schedulerRecords(): Promise<LogRecord[]> {
  const log = new MemoryLogSink();
  const cluster = await LocalCluster.start({ workers: [{ name: "a" }, { name: "b" }], functions: { inc: (x: number) => x + 1 }, log });
  const client = cluster.client();
  expect(await client.gather(client.map("inc", [1, 2, 3, 4]))).toEqual([2, 3, 4, 5]);
  await cluster.close();
  return log.records.filter((r) => r.actor === "scheduler");
}

async function writeLog(nc: NatsConnection, cluster: string, records: LogRecord[]): Promise<void> {
  const sink = await JetStreamLogSink.open({ nc, cluster });
  for (const record of records) sink.append(record);
  await sink.close();
}

describe("resuming a scheduler from its log (in process)", () => {
  it("completes a last input the log holds only part of, continues the log, and starts afresh after a clean stop", async () => {
    const nc = await connect({ servers: server.url });
    try {
      const records = await schedulerRecords();
      // Cut in the middle of the update-graph input's transitions, as a crash can.
      const graph = records.findIndex((r) => r.kind === "input" && r.event.op === "update-graph");
      let end = graph + 1;
      while (records[end]?.kind === "transition") end++;
      expect(end - graph - 1).toBeGreaterThan(3);
      await writeLog(nc, "cut", records.slice(0, graph + 3));

      const resumed = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: "cut", log: { jetstream: true }, configFile: false, service: false });
      expect(resumed.resumed).toMatchObject({ records: graph + 3, inputs: records.slice(0, graph + 1).filter((r) => r.kind === "input").length, completed: end - graph - 3 });
      expect(resumed.actor.core.tasks.size).toBe(4);
      await resumed.close();
      const again = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: "cut", log: { jetstream: true }, configFile: false, service: false });
      expect(again.resumed).toBeNull();
      expect(again.actor.core.tasks.size).toBe(0);
      await again.close();

      const result = await replayAt(`${server.url}/cut`);
      expect(result.problems).toEqual([]);
      expect(result.ok).toBe(true);
      const logged = (await (await openJetStreamLog({ nc, cluster: "cut" })).readAll()).records;
      expect(logged.filter((r) => r.kind === "start")).toHaveLength(2);
      expect(logged.slice(0, end).map((r) => JSON.stringify({ ...r, t: 0 }))).toEqual(records.slice(0, end).map((r) => JSON.stringify({ ...r, t: 0 })));
    } finally {
      await nc.close();
    }
  });

  it("refuses a log its machines do not reproduce", async () => {
    const nc = await connect({ servers: server.url });
    try {
      const records = await schedulerRecords();
      const stopAt = records.findIndex((r) => r.kind === "stop");
      const tampered = records.slice(0, stopAt - 2).map((r) => (r.kind === "transition" && r.to === "memory" ? { ...r, to: "erred" } : r));
      await writeLog(nc, "tampered", tampered);
      const error = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: "tampered", log: { jetstream: true }, configFile: false, service: false }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LogCorruptError);
      expect((error as Error).message).toMatch(/cannot restart the scheduler .* diverged/);
    } finally {
      await nc.close();
    }
  });
});
