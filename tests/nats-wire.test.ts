/**
 * The documented wire protocol (docs/protocol.md, docs/nats.md) with plain NATS requests and
 * no natsched code on the client side: join, submit a graph, hear about results, fetch them
 * (inline and chunked), release, leave.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";

const CLUSTER = "wire";
const ME = "plain-client-1";
let server: NatsServer;
let scheduler: SchedulerProcess;
let worker: WorkerProcess;
let nc: NatsConnection;
const reports: { op: string; key: string; [field: string]: unknown }[] = [];

beforeAll(async () => {
  server = await NatsServer.start({ config: "max_payload: 262144\n" });
  scheduler = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, log: false, configFile: false });
  worker = await WorkerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, name: "solo", nthreads: 2, functions: tasks.default, configFile: false });
  nc = await connect({ servers: server.url });
  nc.subscribe(`natsched.${CLUSTER}.client.${ME}`, {
    callback: (_err, msg) => {
      const envelope = msg.json<{ v: number; ops: (typeof reports)[number][] }>();
      reports.push(...envelope.ops);
    },
  });
  await nc.flush();
});

afterAll(async () => {
  await nc?.close();
  await worker?.close();
  await scheduler?.close();
  await server?.dispose();
});

async function toScheduler(ops: unknown[]): Promise<{ replies: { ok: boolean; error?: { code?: string; message: string } }[] }> {
  const reply = await nc.request(`natsched.${CLUSTER}.scheduler`, JSON.stringify({ v: 1, from: ME, ops }), { timeout: 5000 });
  return reply.json();
}

async function report(key: string): Promise<(typeof reports)[number]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = reports.find((r) => r.key === key);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no report for ${key}; got ${JSON.stringify(reports)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("the wire protocol with plain NATS requests", () => {
  it("submits a graph, hears key-in-memory, and fetches the result as JSON", async () => {
    const { replies } = await toScheduler([
      { op: "client-join", client: ME },
      {
        op: "update-graph",
        client: ME,
        tasks: [
          { key: "x", func: "inc", args: [1], deps: [] },
          { key: "y", func: "add", args: [{ $key: "x" }, 10], deps: ["x"] },
        ],
        wants: ["y"],
      },
    ]);
    expect(replies).toEqual([{ ok: true }, { ok: true }]);
    const done = await report("y");
    expect(done).toMatchObject({ op: "key-in-memory", key: "y", workers: ["solo"] });
    const reply = await nc.request(`natsched.${CLUSTER}.data.solo`, JSON.stringify({ op: "get-data", keys: ["y", "nope"], who: ME }), { timeout: 5000 });
    expect(reply.json()).toEqual({ data: { y: 12 }, nbytes: { y: 8 }, missing: ["nope"] });
    expect((await toScheduler([{ op: "release-keys", client: ME, keys: ["y"] }])).replies).toEqual([{ ok: true }]);
  });

  it("fetches a result bigger than max_payload by pulling chunks", async () => {
    const n = 100_000;
    await toScheduler([{ op: "update-graph", client: ME, tasks: [{ key: "big", func: "ramp", args: [n], deps: [] }], wants: ["big"] }]);
    await report("big");
    const subject = `natsched.${CLUSTER}.data.solo`;
    const first = (await nc.request(subject, JSON.stringify({ op: "get-data", keys: ["big"], who: ME }), { timeout: 5000 })).json<{
      transfer: { id: string; size: number; chunkBytes: number; chunks: number; encoding: string };
    }>();
    expect(first.transfer).toMatchObject({ encoding: "json" });
    const { id, size, chunks } = first.transfer;
    expect(chunks).toBeGreaterThan(1);
    const parts: Uint8Array[] = [];
    for (let index = 0; index < chunks; index++) {
      parts.push((await nc.request(subject, JSON.stringify({ op: "get-chunk", id, index }), { timeout: 5000 })).data);
    }
    const body = Buffer.concat(parts);
    expect(body.length).toBe(size);
    const reply = JSON.parse(body.toString("utf8")) as { data: { big: number[] }; missing: string[] };
    expect(reply.missing).toEqual([]);
    expect(reply.data.big).toHaveLength(n);
    expect(reply.data.big[n - 1]).toBe(n - 1);
  });

  it("answers a bad graph with ok:false and a typed error code, and queries on the query subject", async () => {
    const { replies } = await toScheduler([
      {
        op: "update-graph",
        client: ME,
        tasks: [
          { key: "a", func: "inc", args: [{ $key: "b" }], deps: ["b"] },
          { key: "b", func: "inc", args: [{ $key: "a" }], deps: ["a"] },
        ],
        wants: ["a"],
      },
    ]);
    expect(replies[0]).toMatchObject({ ok: false, error: { code: "CYCLE" } });
    const status = (await nc.request(`natsched.${CLUSTER}.query`, JSON.stringify({ op: "status" }), { timeout: 5000 })).json<{ workers: { name: string }[] }>();
    expect(status.workers.map((w) => w.name)).toEqual(["solo"]);
  });

  it("hears key-erred for a failing task, then leaves", async () => {
    await toScheduler([{ op: "update-graph", client: ME, tasks: [{ key: "oops", func: "fail", args: ["no good"], deps: [] }], wants: ["oops"] }]);
    expect(await report("oops")).toMatchObject({ op: "key-erred", key: "oops", failedKey: "oops", error: { message: "no good" } });
    expect((await toScheduler([{ op: "client-leave", client: ME }])).replies).toEqual([{ ok: true }]);
  });
});
