/**
 * Bad input to the client API gets a typed error with a clear message, the same on the
 * embedded cluster's client and on a client of a cluster on NATS (Client.connect), and
 * nothing already submitted is disturbed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { LocalCluster } from "../actors/local-cluster.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { BadOptionError } from "../machines/errors.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";
import { thrown, rejection } from "./errors-helpers.js";

const FUNCTIONS = { inc: tasks.inc, add: tasks.add, slowInc: tasks.slowInc };

interface Setup {
  client: Client;
  other: Client;
  close(): Promise<void>;
}

async function embedded(): Promise<Setup> {
  const cluster = await LocalCluster.start({ workers: [{ name: "a" }, { name: "b" }], functions: FUNCTIONS, log: false, configFile: false });
  return { client: cluster.client(), other: cluster.client(), close: () => cluster.close() };
}

async function onNats(): Promise<Setup> {
  const server = await NatsServer.start({ jetstream: false });
  const nats = { servers: server.url, env: {} };
  const scheduler = await SchedulerProcess.start({ nats, cluster: "valid", log: false, configFile: false, service: false });
  const workers = await Promise.all(
    ["a", "b"].map((name) => WorkerProcess.start({ nats, cluster: "valid", name, nthreads: 1, functions: FUNCTIONS, configFile: false, service: false })),
  );
  const client = await connectClient({ ...nats, cluster: "valid", requestTimeout: 5000 });
  const other = await connectClient({ ...nats, cluster: "valid", requestTimeout: 5000 });
  return {
    client,
    other,
    close: async () => {
      await client.close();
      await other.close();
      await Promise.all(workers.map((w) => w.close()));
      await scheduler.close();
      await server.dispose();
    },
  };
}

describe.each([
  ["the embedded cluster", embedded],
  ["a cluster on NATS", onNats],
])("client input validation on %s", (_name, setup) => {
  let s: Setup;
  beforeAll(async () => {
    s = await setup();
  }, 30_000);
  afterAll(async () => {
    await s?.close();
  });

  it("map needs an iterable of items", () => {
    const error = thrown(() => s.client.map("inc", 5 as unknown as number[]));
    expect(error).toBeInstanceOf(BadOptionError);
    expect(error.message).toBe("option items: map takes an array (or another iterable) of items, one task each, got number 5");
    expect(thrown(() => s.client.map("inc", null as unknown as number[]))).toBeInstanceOf(BadOptionError);
    expect(thrown(() => s.client.map("inc", "12" as unknown as number[])).message).toMatch(/got the string "12"/);
    expect(thrown(() => s.client.map("", [1]))).toBeInstanceOf(BadOptionError);
  });

  it("map's keys: one per item, strings, none twice; nothing is submitted otherwise", async () => {
    const few = thrown(() => s.client.map("inc", [1, 2], { keys: ["a-1"] }));
    expect(few).toBeInstanceOf(BadOptionError);
    expect(few.message).toBe("option keys: map: 1 key(s) for 2 item(s): give one key per item");
    expect(thrown(() => s.client.map("inc", [1, 2], { keys: ["k-1", "k-1"] })).message).toMatch(/key "k-1" is given twice/);
    expect(thrown(() => s.client.map("inc", [1], { keys: [7 as unknown as string] })).message).toMatch(/keys\[0\] must be a non-empty string, got number 7/);
    expect(thrown(() => s.client.map("inc", [1], { keys: "k" as unknown as string[] })).message).toMatch(/must be an array of keys/);
    expect(s.client.keyStatus("a-1")).toBe("cancelled"); // never retained
    const fs = s.client.map<number>("inc", [1, 2], { keys: ["kv-1", "kv-2"] });
    expect(fs.map((f) => f.key)).toEqual(["kv-1", "kv-2"]);
    expect(await s.client.gather(fs, { timeout: 10_000 })).toEqual([2, 3]);
  });

  it("gather takes futures only, of this client", async () => {
    for (const bad of [5, "x", null, undefined, new Map()]) {
      const error = await rejection(s.client.gather(bad as never));
      expect(error).toBeInstanceOf(BadOptionError);
      expect(error.message).toMatch(/^option futures: gather takes a Future, an array of futures or an object of futures, got /);
    }
    const inArray = await rejection(s.client.gather([1] as never));
    expect(inArray).toBeInstanceOf(BadOptionError);
    expect(inArray.message).toBe("option futures: futures[0] is not a Future, got number 1");
    const inObject = await rejection(s.client.gather({ x: "nope" } as never));
    expect(inObject.message).toBe('option futures: futures.x is not a Future, got the string "nope"');
    const foreign = s.other.submit("inc", [100]);
    const error = await rejection(s.client.gather([foreign]));
    expect(error).toBeInstanceOf(BadOptionError);
    expect(error.message).toMatch(/is a future of another client/);
    expect(await foreign.result({ timeout: 10_000 })).toBe(101);
  });

  it("timeouts are milliseconds: a finite number >= 0", async () => {
    const f = s.client.submit<number>("slowInc", [1, 300], { pure: false });
    const error = await rejection(f.result({ timeout: 20 }));
    expect(error.name).toBe("TimeoutError");
    expect(error.message).toMatch(/after 20 ms/);
    for (const bad of [-1, NaN, Infinity, "5"]) {
      const e = await rejection(f.result({ timeout: bad as number }));
      expect(e).toBeInstanceOf(BadOptionError);
      expect(e.message).toMatch(/^option timeout: milliseconds, a finite number >= 0/);
    }
    await expect(f.wait({ timeout: -5 })).rejects.toBeInstanceOf(BadOptionError);
    expect(await f.result({ timeout: 10_000 })).toBe(2);
  });

  it("scatter to a worker that does not exist says so", async () => {
    const error = await rejection(s.client.scatter([1], { workers: ["zz"] }));
    expect(error).toBeInstanceOf(BadOptionError);
    expect(error.message).toMatch(/^option workers: no worker named "zz" in cluster "[\w-]+" \(its workers: a, b\)$/);
    expect(await rejection(s.client.scatter([1], { workers: [3 as unknown as string] }))).toBeInstanceOf(BadOptionError);
    expect((await rejection(s.client.scatter([1, 2], { keys: ["only-one"] }))).message).toMatch(/1 key\(s\) for 2 item\(s\)/);
    expect((await rejection(s.client.scatter(7 as unknown as number[]))).message).toMatch(/scatter takes an array of values, got number 7/);
    expect(await s.client.scatter([])).toEqual([]);
    const [d] = await s.client.scatter([41], { workers: "b" as unknown as string[] });
    expect(await s.client.submit<number>("inc", [d]).result({ timeout: 10_000 })).toBe(42);
  });

  it("persist's keys must be keys of the graph", () => {
    expect(thrown(() => s.client.persist({ x: ["inc", 1] }, { keys: "x" as unknown as string[] }))).toBeInstanceOf(BadOptionError);
    expect(thrown(() => s.client.persist({ x: ["inc", 1] }, { keys: ["toString"] })).message).toBe("option keys: toString is not a key of the graph");
  });
});
