/**
 * natsched on a NATS cluster, not one server: three nats-servers clustered on loopback, the
 * event log at 3 replicas, the scheduler, two workers and the client each given all three
 * URLs. Mid-run the server the scheduler is connected to is killed (SIGKILL), and made the
 * log stream's leader first, so the scheduler's reconnect and a stream leader election
 * happen at once; once it is back and the stream is current on all three, the scheduler's
 * new server is killed the same way, and stays down (2 of 3 keep JetStream's quorum).
 */
import { jetstreamManager, type StreamInfo } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import type { Future } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { logStreamName } from "../replay/jetstream-layout.js";
import { replayAt } from "../replay/jetstream-open.js";
import { openJetStreamLog } from "../replay/jetstream-reader.js";
import { NatsServerCluster, type NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "ha";
const STREAM = logStreamName(CLUSTER);
const SCHEDULER_CONNECTION = `natsched-scheduler-${CLUSTER}`;
const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;
const TASK_MS = 150;

let servers: NatsServerCluster;
const processes: NatschedProcess[] = [];
let scheduler: NatschedProcess;
let client: Client;
let nc: NatsConnection;

function spawn(label: string, args: string[]): NatschedProcess {
  const p = NatschedProcess.spawn(label, [...args, "--nats", servers.url, "--cluster", CLUSTER, "--log", "jetstream"]);
  processes.push(p);
  return p;
}

beforeAll(async () => {
  servers = await NatsServerCluster.start();
  scheduler = spawn("scheduler", ["scheduler", "--log-replicas", "3"]);
  await scheduler.waitFor(/durability: stream replicas 3/);
  await Promise.all(["w1", "w2"].map((name) => spawn(name, ["worker", "--name", name, "--nthreads", "2", "--functions", FUNCTIONS]).waitFor(/registered/)));
  client = await connectClient({ servers: servers.urls, cluster: CLUSTER });
  nc = await connect({ servers: servers.urls });
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await nc?.close().catch(() => undefined);
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await servers?.dispose();
});

async function streamInfo(): Promise<StreamInfo> {
  return (await jetstreamManager(nc)).streams.info(STREAM);
}

/** Polls `check` every 100 ms until it returns a value (not undefined), or fails after `timeoutMs`. */
async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms\n${scheduler.log}\n${servers.log}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The server the scheduler is connected to, made the log stream's leader too (a leader
 * step-down elects another replica, at random), so killing it takes both away.
 */
async function schedulerServerLeadingTheLog(): Promise<NatsServer> {
  return until("the scheduler's server leading the log stream", async () => {
    const server = await servers.serverOf(SCHEDULER_CONNECTION);
    if (server === undefined) return undefined;
    const info = await streamInfo();
    if (info.cluster?.leader === servers.nameOf(server)) return server;
    if (info.cluster?.leader !== undefined) await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${STREAM}`, undefined, { timeout: 2000 });
    return undefined;
  });
}

/** Every replica of the log stream current, and a leader among them. */
async function streamCurrent(replicas: number): Promise<void> {
  await until(`the log stream current on ${replicas} servers`, async () => {
    const { cluster } = await streamInfo();
    const current = (cluster?.replicas ?? []).filter((r) => r.current && !r.offline).length;
    return cluster?.leader !== undefined && current === replicas - 1 ? true : undefined;
  });
}

async function expectStillLeading(server: NatsServer): Promise<void> {
  expect(await servers.serverOf(SCHEDULER_CONNECTION)).toBe(server);
  expect((await streamInfo()).cluster?.leader).toBe(servers.nameOf(server));
}

function doneCount(futures: Future<unknown>[]): number {
  return futures.filter((f) => f.done()).length;
}

describe("a NATS cluster of three servers, the log at 3 replicas", () => {
  it("completes a run with right results across two servers killed, and its log replays clean", async () => {
    const n = 40;
    // 1. The scheduler's server, which leads the log stream, dies mid-run.
    const first = await schedulerServerLeadingTheLog();
    const loads = Array.from({ length: n }, (_, i) => client.submit<number>("slowInc", [i, TASK_MS], { pure: false }));
    await until("a few loads done", async () => (doneCount(loads) >= 4 ? true : undefined));
    await expectStillLeading(first);
    expect(doneCount(loads)).toBeLessThan(n);
    await first.kill();
    const second = await until("the scheduler on another server", () => servers.serverOf(SCHEDULER_CONNECTION));
    expect(second).not.toBe(first);

    // 2. It comes back; once the stream is current on all three, the scheduler's new server
    // dies, and stays down.
    await first.start();
    await streamCurrent(3);
    const victim = await schedulerServerLeadingTheLog();
    const nexts = loads.map((load) => client.submit<number>("slowInc", [load, TASK_MS], { pure: false }));
    await until("a few of the next tasks done", async () => (doneCount(nexts) >= 4 ? true : undefined));
    await expectStillLeading(victim);
    expect(doneCount(nexts)).toBeLessThan(n);
    await victim.kill();
    const total = client.submit<number>("add", nexts, { key: "total" });

    expect(await client.gather(loads, { timeout: 30_000 })).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(await client.gather(nexts, { timeout: 30_000 })).toEqual(Array.from({ length: n }, (_, i) => i + 2));
    expect(await total.result({ timeout: 30_000 })).toBe((n * (n + 3)) / 2);
    expect((await client.workers()).map((w) => w.name).sort()).toEqual(["w1", "w2"]);

    await client.close();
    // The workers unregister first, then the scheduler records its stop.
    for (const p of [...processes.slice(1), scheduler]) expect(await p.stop("SIGTERM")).toBe(0);
    const alive = servers.servers.find((s) => s.running)!;
    const location = `${alive.url}/${CLUSTER}`;
    // Each task ran once: a worker executes a task only on a compute-task, which nothing lost here repeated.
    const reader = await openJetStreamLog(location);
    const { records, problems } = await reader.readAll();
    expect(problems).toEqual([]);
    const executions = new Map<string, number>();
    for (const r of records) if (r.kind === "transition" && r.machine === "wtask" && r.event === "EXECUTE") executions.set(r.id, (executions.get(r.id) ?? 0) + 1);
    expect(executions.size).toBe(2 * n + 1);
    expect([...executions.values()].every((count) => count === 1)).toBe(true);

    const result = await replayAt(location);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(Object.keys(result.actors).sort()).toEqual(["scheduler", "worker.w1", "worker.w2"]);
  }, 60_000);
});
