/**
 * Issue 20 as filed, on a real nats-server with the scheduler and a worker as they run in
 * `natsched scheduler` / `natsched worker`: client A's failed key, released and A gone,
 * submitted again by client B fails with TaskFailedError instead of waiting for ever, and
 * the worker keeps no record of the failure once nobody wants it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { TaskFailedError } from "../machines/errors.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";
import { until } from "./support/until.js";

const CLUSTER = "erred";
let server: NatsServer;
let scheduler: SchedulerProcess;
let worker: WorkerProcess;

beforeAll(async () => {
  server = await NatsServer.start({ jetstream: false });
  const nats = { servers: server.url, env: {} };
  scheduler = await SchedulerProcess.start({ nats, cluster: CLUSTER, log: false, configFile: false, service: false });
  // One worker: the key submitted again goes where its failure was kept.
  worker = await WorkerProcess.start({ nats, cluster: CLUSTER, name: "w1", nthreads: 2, functions: { fail: tasks.fail, inc: tasks.inc }, configFile: false, service: false });
}, 30_000);

afterAll(async () => {
  await worker?.close();
  await scheduler?.close();
  await server?.dispose();
});


describe("a failed key submitted again by another client, on NATS", () => {
  it("fails with TaskFailedError for every client in turn, and nothing is left on the worker", async () => {
    const nats = { servers: server.url, env: {}, cluster: CLUSTER, requestTimeout: 5000 };
    for (const name of ["A", "B", "C"]) {
      const client = await connectClient(nats);
      try {
        const f = client.submit("fail", ["boom"]);
        const other = client.submit<number>("inc", [41]);
        const err = await f.result({ timeout: 5000 }).catch((e: unknown) => e);
        expect(err, `client ${name}`).toBeInstanceOf(TaskFailedError);
        expect((err as TaskFailedError).message).toContain("boom");
        expect(await other.result({ timeout: 5000 })).toBe(42);
        if (name === "A") f.release();
      } finally {
        await client.close();
      }
    }
    await until(() => scheduler.actor.core.tasks.size === 0 && worker.actor.core.tasks.size === 0, 5000);
    expect(worker.actor.store.size).toBe(0);
  }, 30_000);
});
