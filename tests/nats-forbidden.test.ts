/**
 * What the scheduler refuses whatever the server permits (an open nats-server, no
 * permissions): worker ops on a client's subject or the bare one, ops naming another worker or
 * client than their subject, client ops on a worker's subject, and reports from a worker
 * incarnation it does not have. Each is answered FORBIDDEN in its slot, reported, counted, and
 * changes nothing: the task under attack finishes with its real result, and the log replays.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { replay } from "../replay/replay.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";

const C = "forbid";
let server: NatsServer;
let scheduler: SchedulerProcess;
const workers: WorkerProcess[] = [];
let client: Client;
let nc: NatsConnection;
let dir: string;
const errors: string[] = [];
const onError = (e: unknown) => void errors.push(`${(e as Error)?.name}: ${String((e as Error)?.message ?? e)}`);

type Reply = { replies: { ok: boolean; error?: { name: string; code?: string; message: string } }[] };

beforeAll(async () => {
  server = await NatsServer.start({ jetstream: false });
  dir = mkdtempSync(join(tmpdir(), "natsched-forbidden-"));
  const nats = { servers: server.url };
  scheduler = await SchedulerProcess.start({ nats, cluster: C, log: join(dir, "scheduler.natlog"), configFile: false, onError, config: { workStealing: false } });
  for (const name of ["w1", "w2"]) workers.push(await WorkerProcess.start({ nats, cluster: C, name, nthreads: 1, functions: tasks.default, configFile: false, onError }));
  client = await connectClient({ servers: server.url, cluster: C });
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await client?.close();
  await nc?.close();
  for (const w of workers) await w.close();
  await scheduler?.close();
  await server?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function request(subject: string, ops: unknown[], from = "intruder"): Promise<Reply["replies"]> {
  return (await nc.request(subject, JSON.stringify({ v: 1, from, ops }), { timeout: 5000 })).json<Reply>().replies;
}

describe("the scheduler, on a server that lets anyone publish anything", () => {
  it("refuses forged and misplaced ops with FORBIDDEN, and nothing changes", async () => {
    const core = scheduler.actor.core;
    const running = client.submit<number>("slowInc", [41, 1500], { workers: ["w1"], pure: false });
    for (let i = 0; core.tasks.get(running.key)?.processingOn?.name !== "w1"; i++) {
      if (i > 500) throw new Error("the task never started on w1");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // What `natsched status` hands anyone: the worker's name and incarnation id.
    const w1 = core.workers.get("w1")!.id;
    const forged = (worker: string, id: string) => ({ op: "task-finished", worker, id, key: running.key, nbytes: 8, start: 0, stop: 1 });
    const before = scheduler.actor.totals.refused;
    const cases: [string, unknown, RegExp][] = [
      [`natsched.${C}.scheduler.client.intruder`, forged("w1", w1), /task-finished is a worker op/],
      [`natsched.${C}.scheduler`, forged("w1", w1), /task-finished is a worker op/],
      [`natsched.${C}.scheduler.worker.w2`, forged("w1", w1), /names worker "w1", refused on worker w2's subject/],
      [`natsched.${C}.scheduler.worker.w1`, forged("w1", "w1-earlier"), /worker w1 is incarnation .* here, not w1-earlier/],
      [`natsched.${C}.scheduler.worker.ghost`, forged("ghost", "ghost-1"), /worker ghost \(incarnation ghost-1\) is not a worker of this scheduler/],
      [`natsched.${C}.scheduler.worker.w1`, { op: "client-leave", client: client.id }, /client-leave is a client op, refused on worker w1's subject/],
      [`natsched.${C}.scheduler.client.intruder`, { op: "release-keys", client: client.id, keys: [running.key] }, /names client .*, refused on client intruder's subject/],
      // Only the client itself cancels its keys.
      [`natsched.${C}.scheduler.client.intruder`, { op: "cancel-keys", client: client.id, keys: [running.key] }, /cancel-keys names client .*, refused on client intruder's subject/],
      [`natsched.${C}.scheduler.worker.w1`, { op: "cancel-keys", client: client.id, keys: [running.key] }, /cancel-keys is a client op, refused on worker w1's subject/],
      [`natsched.${C}.scheduler.elsewhere.x`, { op: "client-join", client: "x" }, /is not a subject the scheduler takes ops on/],
      [`natsched.${C}.scheduler.worker.w2`, { op: "unregister-worker", name: "w1", id: w1, reason: "forged" }, /names worker "w1"/],
    ];
    for (const [subject, op, why] of cases) {
      const [reply] = await request(subject, [op]);
      expect(reply, `${subject} ${JSON.stringify(op)}`).toMatchObject({ ok: false, error: { name: "ForbiddenError", code: "FORBIDDEN" } });
      expect(reply!.error!.message).toMatch(why);
    }
    expect(scheduler.actor.totals.refused - before).toBe(cases.length);
    expect(errors.filter((e) => /^ForbiddenError: scheduler: refused 1 op/.test(e))).toHaveLength(cases.length);
    const status = (await nc.request(`natsched.${C}.query`, JSON.stringify({ op: "status" }), { timeout: 5000 })).json<{ refused: number }>();
    expect(status.refused).toBe(scheduler.actor.totals.refused);
    // Nothing changed: still running on w1, both workers and the client still there, the real result.
    expect(core.tasks.get(running.key)?.processingOn?.name).toBe("w1");
    expect([...core.workers.keys()].sort()).toEqual(["w1", "w2"]);
    expect(core.clients.has(client.id)).toBe(true);
    expect(await running.result({ timeout: 10_000 })).toBe(42);
    expect(core.tasks.get(running.key)?.whoHas.size).toBe(1);
  }, 30_000);

  it("still takes what each role may send on its own subject, and the log of it all replays", async () => {
    const me = "plain-1";
    const replies = await request(`natsched.${C}.scheduler.client.${me}`, [{ op: "client-join", client: me }, { op: "client-leave", client: me }], me);
    expect(replies).toEqual([{ ok: true }, { ok: true }]);
    expect(await request(`natsched.${C}.scheduler`, [{ op: "client-join", client: "anyone" }, { op: "client-leave", client: "anyone" }])).toEqual([{ ok: true }, { ok: true }]);
    expect(await client.submit<number>("add", [1, 2]).result()).toBe(3);
    await scheduler.log!.flush();
    // The scheduler is still running: its log is open (no stop record yet), which openOk accepts.
    expect((await replay(scheduler.logPath!)).problems.map((p) => p.kind)).toEqual(["open"]);
    const result = await replay(scheduler.logPath!, { openOk: true });
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
  });
});
