/**
 * A client process on NATS killed with SIGKILL: the scheduler stops hearing its heartbeats
 * and, after clientReleaseGrace (2 s here), releases everything it wanted. A client that
 * rides through a nats-server restart keeps its futures: silence the scheduler could not
 * have heard through does not count.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "grace";
const GRACE = 2;
let server: NatsServer;
let scheduler: SchedulerProcess;
let worker: WorkerProcess;
const clients: NatschedProcess[] = [];

beforeAll(async () => {
  server = await NatsServer.start();
  const nats = { servers: server.url };
  scheduler = await SchedulerProcess.start({ nats, cluster: CLUSTER, log: false, configFile: false, config: { clientReleaseGrace: GRACE } });
  worker = await WorkerProcess.start({ nats, cluster: CLUSTER, name: "w1", nthreads: 2, functions: tasks.default, configFile: false });
}, 30_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.stop("SIGKILL")));
  await worker?.close();
  await scheduler?.close();
  await server?.dispose();
});

/** A client process that computed `n` tasks and holds their futures: its id and keys. */
async function startClient(n: number): Promise<{ process: NatschedProcess; id: string; keys: string[] }> {
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "tests", "support", "grace-client.ts"), server.url, CLUSTER, String(n)], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const proc = new NatschedProcess("client", child);
  clients.push(proc);
  await proc.waitFor(/^ready .+$/m);
  const [, id, ...keys] = /^ready .+$/m.exec(proc.log)![0].split(" ");
  return { process: proc, id: id!, keys };
}

async function until(check: () => boolean, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe("client processes that go away", () => {
  it("releases the tasks of a client killed with SIGKILL after the grace, not before", async () => {
    const core = scheduler.actor.core;
    const { process: proc, id, keys } = await startClient(5);
    expect(keys).toHaveLength(5);
    for (const key of keys) expect(core.tasks.get(key)?.state).toBe("memory");
    expect(core.clients.has(id)).toBe(true);

    expect(await proc.stop("SIGKILL")).toBe(-1);
    const killed = Date.now();
    await sleep(1000);
    expect(core.clients.has(id)).toBe(true); // within the grace: kept
    await until(() => !core.clients.has(id), "the killed client to be released", 10_000);
    expect((Date.now() - killed) / 1000).toBeGreaterThanOrEqual(GRACE - 0.5);
    for (const key of keys) expect(core.tasks.has(key)).toBe(false);
    await until(() => keys.every((key) => !worker.actor.core.tasks.has(key)), "the worker to free the results", 5000);
  }, 30_000);

  it("keeps the futures of a client whose connection comes back within the grace", async () => {
    const core = scheduler.actor.core;
    const { process: proc, id, keys } = await startClient(3);
    await server.restart();
    await sleep(GRACE * 2 * 1000);
    expect(core.clients.has(id)).toBe(true);
    for (const key of keys) expect(core.tasks.get(key)?.state).toBe("memory");
    await proc.stop("SIGKILL");
  }, 30_000);

  it("does not count a nats-server outage longer than the grace against the clients (nor the workers)", async () => {
    const core = scheduler.actor.core;
    const { process: proc, id, keys } = await startClient(3);
    await server.stop();
    await sleep(GRACE * 1.5 * 1000); // the scheduler hears nobody, and knows it
    await server.restart();
    await sleep(GRACE * 2 * 1000);
    expect(core.clients.has(id)).toBe(true);
    for (const key of keys) expect(core.tasks.get(key)?.state).toBe("memory");
    expect(core.running.map((w) => w.name)).toEqual(["w1"]);
    await proc.stop("SIGKILL");
  }, 30_000);
});
