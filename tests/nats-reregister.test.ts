/**
 * A scheduler stopped cleanly and started again begins a new run that knows no worker: it
 * announces itself, and the worker processes of the last run register with it again (saying
 * what they hold), so work submitted to the new run runs on them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import * as tasks from "./support/cluster-tasks.js";

const { default: _default, ...taskFunctions } = tasks;
import { NatsServer } from "./support/nats-server.js";

const CLUSTER = "rereg";

let server: NatsServer;
const schedulers: SchedulerProcess[] = [];
const workers: WorkerProcess[] = [];
const clients: Client[] = [];
const reregistered: string[] = [];

async function startScheduler(): Promise<SchedulerProcess> {
  const s = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, log: false, configFile: false, service: false });
  schedulers.push(s);
  return s;
}

async function client(): Promise<Client> {
  const c = await connectClient({ servers: server.url, cluster: CLUSTER, requestTimeout: 10_000 });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  server = await NatsServer.start();
  await startScheduler();
  for (const name of ["w1", "w2"]) {
    workers.push(
      await WorkerProcess.start({
        nats: { servers: server.url },
        cluster: CLUSTER,
        name,
        nthreads: 1,
        functions: taskFunctions,
        configFile: false,
        service: false,
        onReregistered: () => reregistered.push(name),
      }),
    );
  }
}, 30_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await Promise.all(workers.map((w) => w.close().catch(() => undefined)));
  await Promise.all(schedulers.map((s) => s.close().catch(() => undefined)));
  await server?.dispose();
});

describe("workers and a scheduler that starts a new run", () => {
  it("register again with the new scheduler, which frees what they held from the last run", async () => {
    const first = await client();
    const held = first.submit<number>("inc", [1], { key: "old-result" });
    expect(await held.result({ timeout: 10_000 })).toBe(2);
    const holder = workers.find((w) => w.actor.store.has("old-result"));
    expect(holder).toBeDefined();
    await first.close();
    await schedulers[0]!.close();
    reregistered.length = 0;

    const second = await startScheduler();
    const deadline = Date.now() + 10_000;
    while (second.actor.core.running.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(second.actor.core.running.map((ws) => ws.name).sort()).toEqual(["w1", "w2"]);
    expect(second.actor.core.running.map((ws) => ws.id).sort()).toEqual(workers.map((w) => w.actor.id).sort());
    expect(reregistered.sort()).toEqual(["w1", "w2"]);

    // What they held belongs to the old run: the new one, told about it, has it freed.
    while (holder!.actor.store.has("old-result") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(holder!.actor.store.has("old-result")).toBe(false);

    const c = await client();
    const futures = Array.from({ length: 6 }, (_, i) => c.submit<number>("slowInc", [i, 50], { pure: false }));
    expect(await c.gather(futures, { timeout: 10_000 })).toEqual([1, 2, 3, 4, 5, 6]);
    expect((await c.workers()).map((w) => w.name).sort()).toEqual(["w1", "w2"]);
  }, 30_000);

  it("a repeated announcement is harmless: a scheduler that knows the worker keeps it as it is", async () => {
    const current = schedulers.at(-1)!;
    const before = current.actor.core.running.map((ws) => `${ws.name}:${ws.id}`).sort();
    current.transport.publish(`natsched.${CLUSTER}.announce.scheduler`, { v: 1, op: "scheduler-started" });
    const deadline = Date.now() + 5_000;
    reregistered.length = 0;
    while (reregistered.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(current.actor.core.running.map((ws) => `${ws.name}:${ws.id}`).sort()).toEqual(before);
    const c = await client();
    expect(await c.submit<number>("inc", [10]).result({ timeout: 10_000 })).toBe(11);
  }, 20_000);
});
