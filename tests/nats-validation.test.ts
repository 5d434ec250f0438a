/**
 * Foreign and malformed messages on natsched subjects are reported and dropped; the actors
 * keep working; a request, however malformed, is answered with what is wrong. Host-only
 * stimuli (scheduler-close, worker-lost, execute-done) are never accepted from the wire.
 */
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { schedulerOpProblem, workerOpProblem } from "../actors/validate-ops.js";
import type { Client } from "../actors/client.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";

const CLUSTER = "valid";
let server: NatsServer;
let scheduler: SchedulerProcess;
let worker: WorkerProcess;
let nc: NatsConnection;
let client: Client;
const errors: string[] = [];
const onError = (e: unknown) => void errors.push(String((e as Error)?.message ?? e));

beforeAll(async () => {
  server = await NatsServer.start();
  scheduler = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, log: false, configFile: false, onError });
  worker = await WorkerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, name: "w", nthreads: 1, functions: tasks.default, configFile: false, onError });
  nc = await connect({ servers: server.url });
  client = await connectClient({ servers: server.url, cluster: CLUSTER, onError });
});

afterAll(async () => {
  await client?.close();
  await nc?.close();
  await worker?.close();
  await scheduler?.close();
  await server?.dispose();
});

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; errors: ${JSON.stringify(errors)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("validation at the boundary", () => {
  it("drops non-JSON, non-envelopes and bad ops on every natsched subject and keeps computing", async () => {
    const before = errors.length;
    for (const subject of [`natsched.${CLUSTER}.scheduler`, `natsched.${CLUSTER}.worker.w`, `natsched.${CLUSTER}.data.w`]) {
      nc.publish(subject, "not json at all {");
      nc.publish(subject, JSON.stringify({ hello: "world" }));
      nc.publish(subject, JSON.stringify(null));
      nc.publish(subject, new Uint8Array([0xff, 0x00, 0x13]));
    }
    nc.publish(`natsched.${CLUSTER}.worker.w`, JSON.stringify({ v: 1, from: "?", ops: [null, 7, { op: "compute-task", key: 1 }, { op: "execute-done", key: "k" }] }));
    nc.publish(`natsched.${CLUSTER}.worker.w`, JSON.stringify({ v: 1, from: "?", ops: [{ op: "free-keys", keys: "all" }] }));
    await nc.flush();
    await until(() => errors.length - before >= 10, "the drops to be reported");
    expect(errors.slice(before).join("\n")).toMatch(/not JSON/);
    expect(errors.slice(before).join("\n")).toMatch(/unknown op "execute-done" for the worker/);
    expect(await client.submit("inc", [1]).result()).toBe(2);
  });

  it("answers bad ops in a valid envelope with ok:false PROTOCOL, one reply per op, and runs the good ones", async () => {
    const ops = [
      { op: "scheduler-close" },
      { op: "worker-lost", name: "w", id: "x", reason: "forged" },
      { op: "update-graph", client: "c", tasks: "lots", wants: [] },
      { op: "register-worker", name: "bad name.with.dots", id: "1", nthreads: 1, host: "h", resources: {}, functions: [] },
      { op: "task-finished", worker: "w", id: "x", key: "k", nbytes: "big", start: 0, stop: 1 },
      42,
      { op: "client-join", client: "c" },
    ];
    const reply = await nc.request(`natsched.${CLUSTER}.scheduler`, JSON.stringify({ v: 1, from: "intruder", ops }), { timeout: 5000 });
    const { replies } = reply.json<{ replies: { ok: boolean; error?: { code: string; message: string } }[] }>();
    expect(replies).toHaveLength(ops.length);
    expect(replies.slice(0, 6).every((r) => !r.ok && r.error?.code === "PROTOCOL")).toBe(true);
    expect(replies[0]!.error!.message).toMatch(/unknown op "scheduler-close"/);
    expect(replies[4]!.error!.message).toMatch(/bad or missing nbytes/);
    expect(replies[6]).toEqual({ ok: true });
    expect(scheduler.actor.core.state).toBe("running");
    expect((await client.workers()).map((w) => w.name)).toEqual(["w"]);
    expect(await client.submit("add", [2, 3]).result()).toBe(5);
  });

  it("answers every malformed request with an error saying what is wrong, on every subject that takes requests", async () => {
    const ask = async (subject: string, body: string | Uint8Array, opts: { headers?: ReturnType<typeof headers> } = {}) =>
      (await nc.request(subject, body, { timeout: 3000, ...opts })).json<Record<string, unknown>>();
    const garbage = "not json at all {";
    const bytes = new Uint8Array([0xff, 0x00, 0x13]);
    for (const subject of [`natsched.${CLUSTER}.scheduler`, `natsched.${CLUSTER}.scheduler.client.x`, `natsched.${CLUSTER}.scheduler.worker.w`, `natsched.${CLUSTER}.worker.w`]) {
      expect(await ask(subject, garbage), subject).toEqual({ replies: [], error: expect.stringMatching(/^malformed envelope: message on .* is not JSON/) });
      expect(await ask(subject, bytes), subject).toEqual({ replies: [], error: expect.stringMatching(/is not JSON/) });
      expect(await ask(subject, "null"), subject).toEqual({ replies: [], error: "malformed envelope: an envelope must be an object, got null" });
      expect(await ask(subject, JSON.stringify({ v: 1, from: "x" })), subject).toEqual({ replies: [], error: "malformed envelope: an envelope needs an `ops` array" });
    }
    expect(await ask(`natsched.${CLUSTER}.client.${client.id}`, garbage)).toEqual({ replies: [], error: expect.stringMatching(/is not JSON/) });
    expect(await ask(`natsched.${CLUSTER}.query`, garbage)).toEqual({ error: expect.stringMatching(/^malformed query: .*is not JSON/) });
    expect(await ask(`natsched.${CLUSTER}.query`, "7")).toEqual({ error: "a query must be an object with an `op`, got number" });
    expect(await ask(`natsched.${CLUSTER}.data.w`, garbage)).toEqual({ error: expect.stringMatching(/is not JSON/) });
    expect(await ask(`natsched.${CLUSTER}.data.w`, "[1, 2]")).toEqual({ error: expect.stringMatching(/a data request must be an object .*, got an array/) });
    expect(await ask(`natsched.${CLUSTER}.data.w`, "null")).toEqual({ error: expect.stringMatching(/got null/) });
    expect(await ask(`natsched.${CLUSTER}.announce.worker`, garbage)).toEqual({ error: expect.stringMatching(/^malformed worker-back: .*is not JSON/) });
    expect(await ask(`natsched.${CLUSTER}.announce.worker`, "{}")).toEqual({ error: expect.stringMatching(/^malformed worker-back/) });
    // A fragment header natsched cannot read: the request is answered, not left to time out.
    const h = headers();
    h.set("Natsched-Frag", "nonsense");
    expect(await ask(`natsched.${CLUSTER}.scheduler`, JSON.stringify({ v: 1, from: "x", ops: [] }), { headers: h })).toEqual({
      replies: [],
      error: expect.stringMatching(/bad Natsched-Frag header "nonsense"/),
    });
    expect(await client.submit("inc", [41]).result()).toBe(42);
  });

  it("validates each op's fields", () => {
    expect(schedulerOpProblem({ op: "heartbeat", name: "w", id: "1" })).toBeUndefined();
    expect(schedulerOpProblem({ op: "release-keys", client: "c", keys: ["a", 2] })).toMatch(/keys/);
    expect(schedulerOpProblem({ op: "__proto__" })).toMatch(/unknown op/);
    expect(workerOpProblem({ op: "compute-task", key: "k", func: "f", args: [], deps: [], priority: [0, 1, 2], duration: 0.5 })).toBeUndefined();
    expect(workerOpProblem({ op: "compute-task", key: "k", func: "f", args: [], deps: [], priority: [0, 1], duration: 0.5 })).toMatch(/priority/);
    expect(workerOpProblem({ op: "steal-request", key: "k" })).toMatch(/requestId/);
  });
});
