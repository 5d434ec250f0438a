/**
 * Edge cases at the doors of a cluster: a get-data request whose keys are not an array is
 * told what is wrong; task keys that are property names of every JavaScript object
 * (`__proto__`, `constructor`, ...) are refused with a typed error at the client and at the
 * scheduler (a raw message), and the cluster goes on; a gather whose holder never delivers
 * still honours its timeout; the running totals of the scheduler and workers.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { BadOptionError, GraphError, TimeoutError } from "../machines/errors.js";
import { isReservedKey } from "../machines/graph/index.js";
import { PROTOCOL_VERSION } from "../machines/protocol.js";
import { thrown } from "./errors-helpers.js";

const clusters: LocalCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});

async function start(): Promise<LocalCluster> {
  const cluster = await LocalCluster.start({
    name: "edge",
    workers: [{ name: "a" }, { name: "b" }],
    functions: { inc: (x: number) => x + 1, fail: () => { throw new Error("no"); } },
    log: false,
    configFile: false,
  });
  clusters.push(cluster);
  return cluster;
}

describe("a get-data request", () => {
  it("whose keys are not an array is told so, not that get-data is unknown", async () => {
    const cluster = await start();
    const probe = cluster.bus.connect("probe");
    for (const keys of ["x", 5, { a: 1 }, undefined]) {
      const reply = (await probe.request("natsched.edge.data.a", { op: "get-data", keys, who: "probe" }, { timeout: 2000 })) as { error?: string };
      expect(reply.error).toMatch(/^get-data: keys must be an array of task keys, got /);
    }
    expect(await probe.request("natsched.edge.data.a", { op: "nope" }, { timeout: 2000 })).toEqual({ error: 'unknown data request "nope"' });
    await probe.close();
  });
});

describe("task keys that are property names of every object", () => {
  it("are refused by the client with a typed error, before anything is submitted", async () => {
    const cluster = await start();
    const client = cluster.client();
    expect(isReservedKey("__proto__") && isReservedKey("constructor") && isReservedKey("toString")).toBe(true);
    for (const key of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      const error = thrown(() => client.submit("inc", [1], { key }));
      expect(error).toBeInstanceOf(BadOptionError);
      expect(error.message).toContain(`key ${JSON.stringify(key)} is a property name of every JavaScript object`);
    }
    expect(thrown(() => client.map("inc", [1, 2], { keys: ["ok-1", "valueOf"] }))).toBeInstanceOf(BadOptionError);
    await expect(client.scatter([1], { keys: ["__proto__"] })).rejects.toBeInstanceOf(BadOptionError);
    const graph = JSON.parse('{"__proto__": ["inc", 1], "y": ["inc", "__proto__"]}') as Record<string, unknown>;
    expect(thrown(() => client.persist(graph))).toBeInstanceOf(GraphError);
    // Nothing was retained or submitted; the cluster works.
    expect(cluster.scheduler.core.tasks.size).toBe(0);
    expect(await client.submit<number>("inc", [1], { key: "proto-ok" }).result({ timeout: 5000 })).toBe(2);
  });

  it("are refused by the scheduler when a raw update-graph or update-data carries them", async () => {
    const cluster = await start();
    const raw = cluster.bus.connect("raw");
    const send = async (ops: unknown[]) =>
      ((await raw.request("natsched.edge.scheduler", { v: PROTOCOL_VERSION, from: "raw", ops }, { timeout: 2000 })) as { replies: { ok: boolean; error?: { name: string; code?: string; message: string } }[] }).replies;
    const [graph] = await send([
      { op: "update-graph", client: "raw", tasks: [{ key: "__proto__", func: "inc", args: [1], deps: [] }, { key: "after", func: "inc", args: [{ $key: "__proto__" }], deps: ["__proto__"] }], wants: ["after"] },
    ]);
    expect(graph).toMatchObject({ ok: false, error: { name: "GraphError", code: "GRAPH" } });
    expect(graph!.error!.message).toContain('key "__proto__" is a property name of every JavaScript object');
    const [data] = await send([{ op: "update-data", client: "raw", data: [{ key: "constructor", nbytes: 8, workers: ["a"] }] }]);
    expect(data).toMatchObject({ ok: false, error: { name: "ProtocolError", code: "PROTOCOL" } });
    expect(cluster.scheduler.core.tasks.size).toBe(0);
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
    const client = cluster.client();
    expect(await client.compute({ x: ["inc", 1], y: ["inc", "x"] }, { timeout: 5000 })).toEqual({ x: 2, y: 3 });
    await raw.close();
  });
});

describe("gather", () => {
  it("honours its timeout when the worker said to hold a result never delivers it", async () => {
    const cluster = await start();
    const client = cluster.client();
    const f = client.submit<number>("inc", [1], { key: "vanishing" });
    await f.wait({ timeout: 5000 });
    // Gone behind the scheduler's back: it still names the worker as the holder.
    for (const w of cluster.workers.values()) w.store.delete("vanishing");
    const t0 = Date.now();
    const error = await f.result({ timeout: 400 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as Error).message).toMatch(/vanishing after 400 ms/);
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});

describe("running totals", () => {
  it("count the tasks the scheduler and each worker completed and erred, and the bytes moved", async () => {
    const cluster = await start();
    const client = cluster.client();
    const [d] = await client.scatter([new Float64Array(1000)], { workers: ["a"] });
    const xs = client.map<number>("inc", [1, 2, 3, 4, 5, 6]);
    await client.gather(xs);
    // Runs on b only: its argument is fetched from a.
    const len = client.submit("inc", [d], { workers: ["b"] });
    await len.wait({ timeout: 5000 });
    await expect(client.submit("fail", [], { key: "bad" }).result({ timeout: 5000 })).rejects.toThrow(/no/);
    await cluster.flush();
    expect(cluster.scheduler.totals).toMatchObject({ tasksCompleted: 7, tasksErred: 1 });
    const workers = [...cluster.workers.values()];
    expect(workers.reduce((n, w) => n + w.totals.tasksCompleted, 0)).toBe(7);
    expect(workers.reduce((n, w) => n + w.totals.tasksErred, 0)).toBe(1);
    const [a, b] = [cluster.workers.get("a")!, cluster.workers.get("b")!];
    expect(a.totals.bytesScattered).toBeGreaterThanOrEqual(8000);
    expect(b.totals.bytesFetched).toBe(a.totals.bytesScattered);
    expect(a.totals.bytesServed).toBeGreaterThanOrEqual(8000);
    expect(a.totals.keysServed + b.totals.keysServed).toBeGreaterThanOrEqual(7);
  });
});

describe("the specs a client keeps to resubmit after a scheduler's new run", () => {
  it("are kept while a future (or a kept task depending on them) needs them, and dropped after", async () => {
    const cluster = await start();
    const client = cluster.client();
    const specs = () => [...(client as unknown as { specs: Map<string, unknown> }).specs.keys()].sort();
    const a = client.submit<number>("inc", [1], { key: "chain-a" });
    const b = client.submit<number>("inc", [a], { key: "chain-b" });
    const c = client.submit<number>("inc", [b], { key: "chain-c" });
    expect(await c.result({ timeout: 5000 })).toBe(4);
    a.release();
    b.release();
    expect(specs()).toEqual(["chain-a", "chain-b", "chain-c"]);
    c.release();
    expect(specs()).toEqual([]);
    const fs = client.map("inc", [1, 2, 3]);
    const out = client.persist({ p: ["inc", 1], q: ["inc", "p"], r: ["inc", 5] }, { keys: ["q"] });
    expect(specs()).toEqual([...fs.map((f) => f.key), "p", "q"].sort());
    await client.gather(fs);
    for (const f of [...fs, ...Object.values(out)]) f.release();
    expect(specs()).toEqual([]);
  });
});

