/**
 * Issue 20, finding 3, on a real nats-server: a bare NATS connection (no natsched code) can
 * reach every worker's data subject, as any client must to get results. Whatever subject
 * permissions say, it cannot overwrite a result, store data under reserved keys, or have a
 * key it seeded taken as a result or an input; natsched's client scatters the same value
 * twice and gets KeyExistsError for an explicit key that exists; the scatter lease frees what
 * nobody registered.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { realClock } from "../actors/host/clock.js";
import { connectClient } from "../actors/process/connect-client.js";
import { resyncAfterRestart } from "../actors/process/scheduler-resync.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { KeyExistsError } from "../machines/errors.js";
import * as tasks from "./support/cluster-tasks.js";
import { rejection } from "./errors-helpers.js";
import { NatsServer } from "./support/nats-server.js";
import type { Transport } from "../transport/types.js";

const CLUSTER = "scatter";
/** Seconds; long enough that the resync test runs inside it. */
const LEASE = 2;
let server: NatsServer;
let scheduler: SchedulerProcess;
const workers: WorkerProcess[] = [];
let owner: Client;
let raw: NatsConnection;

beforeAll(async () => {
  server = await NatsServer.start();
  const nats = { servers: server.url };
  const config = { workStealing: false, scatterLease: LEASE };
  scheduler = await SchedulerProcess.start({ nats, cluster: CLUSTER, log: false, configFile: false, config });
  for (const name of ["w1", "w2"]) workers.push(await WorkerProcess.start({ nats, cluster: CLUSTER, name, nthreads: 1, functions: tasks.default, configFile: false, config }));
  owner = await connectClient({ servers: server.url, cluster: CLUSTER });
  raw = await connect({ servers: server.url });
}, 30_000);

afterAll(async () => {
  await owner?.close();
  await raw?.close();
  for (const w of workers) await w.close();
  await scheduler?.close();
  await server?.dispose();
});

/** A request from the bare connection, its JSON answer. */
async function ask(subject: string, body: string): Promise<Record<string, unknown>> {
  return (await raw.request(`natsched.${CLUSTER}.${subject}`, body, { timeout: 5000 })).json<Record<string, unknown>>();
}
const putData = (worker: string, data: Record<string, unknown>) => ask(`data.${worker}`, JSON.stringify({ op: "put-data", data, who: "intruder" }));
const getData = (worker: string, keys: string[]) => ask(`data.${worker}`, JSON.stringify({ op: "get-data", keys, who: "intruder" }));

describe("a bare NATS connection on the data plane", () => {
  it("cannot overwrite a computed result: the future, a new client's submit and a dependent see the true value", async () => {
    const x = owner.submit<number>("inc", [1], { workers: ["w1"] });
    expect(await x.result({ timeout: 10_000 })).toBe(2);
    const overHolder = await putData("w1", { [x.key]: 999 });
    const onOther = await putData("w2", { [x.key]: 999 });
    const registered = await ask("scheduler", JSON.stringify({ v: 1, from: "intruder", ops: [{ op: "update-data", client: "intruder", data: [{ key: x.key, nbytes: 8, workers: ["w2"] }] }] }));

    expect(await x.result({ timeout: 10_000 })).toBe(2);
    const newcomer = await connectClient({ servers: server.url, cluster: CLUSTER });
    try {
      const same = newcomer.submit<number>("inc", [1]);
      expect(same.key).toBe(x.key);
      expect(await same.result({ timeout: 10_000 })).toBe(2);
      expect(await newcomer.submit<number>("inc", [same], { workers: ["w2"] }).result({ timeout: 10_000 })).toBe(3);
    } finally {
      await newcomer.close();
    }
    expect(await getData("w1", [x.key])).toEqual({ data: { [x.key]: 2 }, nbytes: { [x.key]: 8 }, missing: [] });

    expect(overHolder).toMatchObject({ code: "KEY_EXISTS", keys: [x.key] });
    expect(overHolder.error).toMatch(/already; scatter creates data under new keys and never overwrites it/);
    expect(onOther).toMatchObject({ ok: true });
    expect(registered).toMatchObject({ replies: [{ ok: false, error: { name: "KeyExistsError", code: "KEY_EXISTS", keys: [x.key] } }] });
  });

  it("cannot store data under __proto__ or constructor", async () => {
    const reply = (await raw.request(`natsched.${CLUSTER}.data.w1`, '{"op":"put-data","who":"intruder","data":{"fine":1,"__proto__":999,"constructor":5}}', { timeout: 5000 })).json<Record<string, unknown>>();
    expect(reply).toMatchObject({ code: "PROTOCOL", keys: ["__proto__", "constructor"] });
    expect(reply.error).toMatch(/not a task key/);
    expect(await getData("w1", ["fine"])).toMatchObject({ missing: ["fine"] });
  });

  it("cannot seed a key before it is computed: the seed is neither its result nor an input", async () => {
    expect(await putData("w1", { "seeded-result": 999 })).toMatchObject({ ok: true });
    expect(await putData("w2", { "seeded-input": 999 })).toMatchObject({ ok: true });
    expect(await owner.submit<number>("inc", [1], { key: "seeded-result", workers: ["w1"] }).result({ timeout: 10_000 })).toBe(2);
    const input = owner.submit<number>("inc", [10], { key: "seeded-input", workers: ["w1"] });
    expect(await owner.submit<number>("inc", [input], { workers: ["w2"] }).result({ timeout: 10_000 })).toBe(12);
    expect(await input.result()).toBe(11);
  });

  it("leaves data nobody registers for the scatter lease to free", async () => {
    expect(await putData("w1", { orphan: 1 })).toMatchObject({ ok: true });
    for (let i = 0; ; i++) {
      const answer = await getData("w1", ["orphan"]);
      if ((answer.missing as string[]).includes("orphan")) break;
      if (i > 200) throw new Error("the orphan is still there");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Free again: a scatter that registers it takes it.
    const [orphan] = await owner.scatter(["mine"], { keys: ["orphan"], workers: ["w1"] });
    expect(await orphan!.result({ timeout: 10_000 })).toBe("mine");
  });
});

describe("a resync (a scheduler restarted or reconnected)", () => {
  it("keeps scattered data the scheduler counts, and adds no copy it does not count", async () => {
    // Registered on w1, and confirmed there at once (the scheduler's acquire-replicas naming w1).
    const [d] = await owner.scatter([77], { keys: ["resync-d"], workers: ["w1"] });
    expect(await d!.result({ timeout: 10_000 })).toBe(77);
    // Seeded on w2, never registered: a copy the scheduler does not count.
    expect(await putData("w2", { "resync-d": 999 })).toMatchObject({ ok: true });
    await expect.poll(() => workers[0]!.actor.core.tasks.get("resync-d")!.scattered).toBe(false);
    expect(workers[1]!.actor.core.tasks.get("resync-d")!.scattered).toBe(true);
    const report = await resyncAfterRestart({ cluster: CLUSTER, transport: scheduler.transport, actor: scheduler.actor, clock: realClock, workerTtl: 5 });
    expect(report.answered.sort()).toEqual(["w1", "w2"]);
    expect([...scheduler.actor.core.tasks.get("resync-d")!.whoHas].map((ws) => ws.name)).toEqual(["w1"]);
    expect(await owner.submit<number>("inc", [d], { workers: ["w2"] }).result({ timeout: 10_000 })).toBe(78);
  });
});

describe("a resync whose answer is older than a result", () => {
  it("does not count missing a result the worker finished after answering: it came in while the question was out", async () => {
    const slow = owner.submit<number>("slowInc", [1, 400], { workers: ["w1"], pure: false });
    await expect.poll(() => workers[0]!.actor.core.tasks.get(slow.key)?.state, { timeout: 10_000 }).toBe("executing");
    // What the scheduler tells w1 from here on about that key (a free-keys and a compute-task: computed again).
    const toW1: string[] = [];
    const watch = raw.subscribe(`natsched.${CLUSTER}.worker.w1`, {
      callback: (_e, m) => {
        for (const op of m.json<{ ops: { op: string; key?: string; keys?: string[] }[] }>().ops) if (op.key === slow.key || op.keys?.includes(slow.key)) toW1.push(op.op);
      },
    });
    await raw.flush();
    // The answers are held back until the scheduler has the result, as if they had travelled
    // slower than the task-finished the worker sent after answering.
    const transport = scheduler.transport;
    const late = new Proxy(transport, {
      get(target, prop) {
        if (prop === "request") {
          return async (...args: Parameters<Transport["request"]>) => {
            const answer = await target.request(...args);
            // The question reached w1 while the task ran: its answer cannot hold the result.
            if (args[0].endsWith(".w1")) expect((answer as { active: string[] }).active).toContain(slow.key);
            await expect.poll(() => scheduler.actor.core.tasks.get(slow.key)?.state, { timeout: 10_000 }).toBe("memory");
            return answer;
          };
        }
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const report = await resyncAfterRestart({ cluster: CLUSTER, transport: late, actor: scheduler.actor, clock: realClock, workerTtl: 5 });
    expect(report.answered.sort()).toEqual(["w1", "w2"]);
    const ts = scheduler.actor.core.tasks.get(slow.key)!;
    expect(ts.state).toBe("memory");
    expect([...ts.whoHas].map((ws) => ws.name)).toEqual(["w1"]);
    expect(await slow.result({ timeout: 10_000 })).toBe(2);
    await raw.flush();
    watch.unsubscribe();
    expect(toW1).toEqual([]);
  });
});

describe("natsched's client", () => {
  it("scatters the same value twice, and again from another client", async () => {
    const [first] = await owner.scatter([41]);
    const [again] = await owner.scatter([41]);
    const other = await connectClient({ servers: server.url, cluster: CLUSTER });
    try {
      const [theirs] = await other.scatter([41]);
      expect(again!.key).toBe(first!.key);
      expect(theirs!.key).toBe(first!.key);
      expect(await Promise.all([first!.result(), again!.result(), theirs!.result()])).toEqual([41, 41, 41]);
    } finally {
      await other.close();
    }
  });

  it("rejects an explicit key that exists with KeyExistsError", async () => {
    const [d] = await owner.scatter([1], { keys: ["explicit-d"], workers: ["w1"] });
    for (const workers of [["w1"], ["w2"]]) {
      const error = await rejection(owner.scatter([2], { keys: ["explicit-d"], workers }));
      expect(error).toBeInstanceOf(KeyExistsError);
      expect((error as KeyExistsError).keys).toEqual(["explicit-d"]);
    }
    expect(await d!.result({ timeout: 10_000 })).toBe(1);
  });
});
