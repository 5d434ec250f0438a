/**
 * natsched on a NATS cluster, not one server: three nats-servers clustered on loopback, the
 * event log at 3 replicas, the scheduler, two workers and the client each given all three
 * URLs. Mid-run the server the scheduler is connected to is killed (SIGKILL), made the
 * leader of the log's stream and of JetStream's meta group first, so the scheduler's
 * reconnect and both elections happen at once. Once that server is back and the stream is
 * current on all three, the scheduler's new server goes the same way, together with the
 * scheduler (their host crashed), and stays down: 2 of 3 keep JetStream's quorum (killing
 * the second while the first is down would stop the log, and with it, by design, everything
 * the scheduler says). The scheduler is started again at once, while JetStream elects.
 */
import { jetstreamManager, type StreamInfo } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client, Future } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { logStreamName } from "../log/jetstream-layout.js";
import { replayAt } from "../replay/replay-at.js";
import { openJetStreamLog } from "../log/jetstream-reader.js";
import type { LogRecord } from "../log/types.js";
import { jetStreamAvailability } from "../log/jetstream-stream.js";
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
/** In the account natsched uses, and in the system account (meta leader step-downs). */
let nc: NatsConnection;
let sys: NatsConnection;

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
  sys = await connect({ servers: servers.urls, ...NatsServerCluster.SYSTEM_USER });
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await nc?.close().catch(() => undefined);
  await sys?.close().catch(() => undefined);
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await servers?.dispose();
});

async function streamInfo(): Promise<StreamInfo> {
  return (await jetstreamManager(nc)).streams.info(STREAM);
}

/** Polls `check` every 100 ms until it returns a value (not undefined), or fails after `timeoutMs`. */
async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms\n${scheduler.log}\n${servers.log}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The server the scheduler is connected to, made the leader of the log's stream and of
 * JetStream's meta group too (a step-down elects another peer, at random), so that killing
 * it takes all three away at once.
 */
async function schedulerServerLeadingJetStream(): Promise<NatsServer> {
  return until("the scheduler's server leading JetStream and the log's stream", async () => {
    const server = await servers.serverOf(SCHEDULER_CONNECTION);
    if (server === undefined) return undefined;
    const name = servers.nameOf(server);
    if ((await servers.metaLeader()) !== name) {
      await sys.request("$JS.API.META.LEADER.STEPDOWN", undefined, { timeout: 2000 });
      return undefined;
    }
    if ((await streamInfo()).cluster?.leader !== name) {
      await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${STREAM}`, undefined, { timeout: 2000 });
      return undefined;
    }
    return server;
  });
}

async function expectStillLeading(server: NatsServer): Promise<void> {
  expect(await servers.serverOf(SCHEDULER_CONNECTION)).toBe(server);
  expect(await servers.metaLeader()).toBe(servers.nameOf(server));
  expect((await streamInfo()).cluster?.leader).toBe(servers.nameOf(server));
}

/** Every replica of the log's stream current (a restarted server caught up), under a leader. */
async function streamCurrent(replicas: number): Promise<void> {
  await until(`the log stream current on ${replicas} servers`, async () => {
    const { cluster } = await streamInfo();
    const current = (cluster?.replicas ?? []).filter((r) => r.current && !r.offline).length;
    return cluster?.leader !== undefined && current === replicas - 1 ? true : undefined;
  });
}

/** What the log says of `key`, to see why it ran more than once. */
function lifeOf(key: string, records: LogRecord[]): string {
  const lines: string[] = [];
  for (const r of records) {
    if (r.kind === "transition" && r.id === key) lines.push(`${r.actor} ${r.seq} ${r.t.toFixed(3)} ${r.machine} ${r.event} ${r.from}->${r.to} ${JSON.stringify(r.why ?? {})}`);
    else if (r.kind === "input" && JSON.stringify(r.event).includes(key)) lines.push(`${r.actor} ${r.seq} ${r.t.toFixed(3)} ${JSON.stringify(r.event).slice(0, 300)}`);
  }
  return `${key} ran more than once:\n${lines.join("\n")}\n${scheduler.log}`;
}

function doneCount(futures: Future<unknown>[]): number {
  return futures.filter((f) => f.done()).length;
}

describe("a NATS cluster of three servers, the log at 3 replicas", () => {
  it("completes a run with right results across two servers killed (the second with the scheduler), and its log replays clean", async () => {
    const n = 40;
    // 1. The scheduler's server, leading JetStream and the log, dies mid-run.
    const first = await schedulerServerLeadingJetStream();
    const loads = Array.from({ length: n }, (_, i) => client.submit<number>("slowInc", [i, TASK_MS], { pure: false }));
    await until("a few loads done", async () => (doneCount(loads) >= 4 ? true : undefined));
    await expectStillLeading(first);
    expect(doneCount(loads)).toBeLessThan(n);
    await first.kill();
    // Asked while the other two elect a meta leader (a scheduler starting then asks the same):
    // JetStream is there, it just does not answer yet.
    expect(await jetStreamAvailability(nc)).toEqual({ available: true });
    const second = await until("the scheduler on another server", () => servers.serverOf(SCHEDULER_CONNECTION));
    expect(second).not.toBe(first);

    // 2. It comes back; once the stream is current on all three, the scheduler's new server
    // dies with the scheduler, and stays down. The same command starts the scheduler again.
    await first.start();
    await streamCurrent(3);
    const victim = await schedulerServerLeadingJetStream();
    const nexts = loads.map((load) => client.submit<number>("slowInc", [load, TASK_MS], { pure: false }));
    await until("a few of the next tasks done", async () => (doneCount(nexts) >= 4 ? true : undefined));
    await expectStillLeading(victim);
    expect(doneCount(nexts)).toBeLessThan(n);
    await Promise.all([victim.kill(), scheduler.stop("SIGKILL")]);
    const restarted = spawn("scheduler-2", ["scheduler", "--log-replicas", "3"]);
    // The log reads while both elections go on (the new scheduler reads it so).
    const midRun = await (await openJetStreamLog({ nc, cluster: CLUSTER })).readAll();
    expect(midRun.problems).toEqual([]);
    expect(midRun.records.length).toBeGreaterThan(0);
    const total = client.submit<number>("add", nexts, { key: "total" });

    await restarted.waitFor(/resumed from its log: \d+ inputs re-run/, 30_000);
    await restarted.waitFor(/resynced: 2 worker\(s\) answered; /, 30_000);
    expect(await client.gather(loads, { timeout: 30_000 })).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(await client.gather(nexts, { timeout: 30_000 })).toEqual(Array.from({ length: n }, (_, i) => i + 2));
    expect(await total.result({ timeout: 30_000 })).toBe((n * (n + 3)) / 2);
    expect((await client.workers()).map((w) => w.name).sort()).toEqual(["w1", "w2"]);
    // Nobody was lost or left meanwhile: each joined once, and the new scheduler took them on from its log.
    const membership = (p: NatschedProcess) => p.log.split("\n").filter((line) => / (worker|client) \S+ (joined|retiring|left|lost)/.test(line));
    expect(membership(scheduler)).toEqual([
      expect.stringMatching(/^natsched scheduler: worker w\d joined/),
      expect.stringMatching(/^natsched scheduler: worker w\d joined/),
      `natsched scheduler: client ${client.id} joined`,
    ]);
    expect(membership(restarted)).toEqual([]);

    await client.close();
    // The workers unregister first, then the scheduler records its stop.
    for (const p of [...processes.slice(1, 3), restarted]) expect(await p.stop("SIGTERM")).toBe(0);
    const location = `${servers.servers.find((s) => s.running)!.url}/${CLUSTER}`;
    // Each task ran once: nothing here lost a worker, and what the dead servers and the dead
    // scheduler swallowed was recovered by re-sending and resyncing, not by running anything again.
    const { records, problems } = await (await openJetStreamLog(location)).readAll();
    expect(problems).toEqual([]);
    const executions = new Map<string, number>();
    for (const r of records) if (r.kind === "transition" && r.machine === "wtask" && r.event === "EXECUTE") executions.set(r.id, (executions.get(r.id) ?? 0) + 1);
    expect(executions.size).toBe(2 * n + 1);
    const twice = [...executions].filter(([, count]) => count !== 1).map(([key]) => key);
    expect(twice, twice.length > 0 ? lifeOf(twice[0]!, records) : "").toEqual([]);

    const result = await replayAt(location);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    // The client logs to the cluster's JetStream log too (its default).
    expect(Object.keys(result.actors).sort()).toEqual([`client.${client.id}`, "scheduler", "worker.w1", "worker.w2"]);
    expect(result.actors.scheduler!.stopped).toBe(true);
  }, 60_000);
});
