/**
 * End to end on LocalCluster: the client API, errors, placement options, data movement,
 * release and shutdown. Logs are off unless a test looks at them.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  BadOptionError,
  ClosedError,
  CycleError,
  Future,
  LocalCluster,
  MemoryLogSink,
  NatschedError,
  TaskFailedError,
  TimeoutError,
  UnknownDependencyError,
  UnknownFunctionError,
  type LocalClusterOptions,
} from "../index.js";
import type { WorkerActor } from "../actors/worker-actor.js";
import type { InputRecord, TransitionRecord } from "../log/types.js";
import { thrown, rejection } from "./errors-helpers.js";
import { untilFlushed } from "./support/until.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const clusters: LocalCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});

async function start(opts: Partial<LocalClusterOptions> & Pick<LocalClusterOptions, "functions">): Promise<LocalCluster> {
  const cluster = await LocalCluster.start({ log: false, configFile: false, ...opts });
  clusters.push(cluster);
  return cluster;
}

const basic = {
  inc: (x: number) => x + 1,
  add: (a: number, b: number) => a + b,
  double: (x: number) => 2 * x,
  sum: (xs: number[]) => xs.reduce((a, b) => a + b, 0),
  noop: () => null,
};

describe("the issue's example", () => {
  it("submit, map, gather, scatter with a workers restriction, compute with a named graph", async () => {
    const cluster = await start({
      workers: [
        { name: "a", nthreads: 1 },
        { name: "b", nthreads: 2 },
      ],
      functions: { inc: (x: number) => x + 1, add: (a: number, b: number) => a + b, len: (v: number[]) => v.length },
    });
    const client = cluster.client();
    const x = client.submit<number>("inc", [1]);
    const y = client.submit<number>("add", [x, 10]);
    expect(await y.result()).toBe(12);
    expect(await x.result()).toBe(2);
    const fs = client.map<number>("inc", [1, 2, 3]);
    expect(await client.gather(fs)).toEqual([2, 3, 4]);
    const bigValue = Array.from({ length: 10_000 }, (_, i) => i);
    const [d] = await client.scatter([bigValue], { workers: ["a"] });
    expect(cluster.workers.get("a")!.store.has(d!.key)).toBe(true);
    expect(cluster.workers.get("b")!.store.has(d!.key)).toBe(false);
    expect(await d!.result()).toEqual(bigValue);
    const n = client.submit<number>("len", [d]);
    expect(await n.result()).toBe(10_000);
    expect(await client.compute({ "load-0": ["inc", 1], "sum-0": ["add", "load-0", 2] })).toEqual({ "load-0": 2, "sum-0": 4 });
    expect(await client.gather({ x, y })).toEqual({ x: 2, y: 12 });
    expect(x.status).toBe("finished");
    expect(x.done()).toBe(true);
    await cluster.close();
    expect(cluster.closed).toBe(true);
  });

  it("a task over many inputs, half of them fetched from the other worker, gets each once", async () => {
    const cluster = await start({ workers: 2, functions: { one: (i: number) => i, sum: (...xs: number[]) => xs.reduce((a, b) => a + b, 0) } });
    const client = cluster.client();
    const workers = [...cluster.workers.keys()];
    const inputs = Array.from({ length: 300 }, (_, i) => client.submit("one", [i], { workers: [workers[i % 2]!] }));
    const total = client.submit("sum", inputs, { workers: [workers[0]!] });
    expect(await total.result()).toBe((299 * 300) / 2);
    // The worker knows each input once (the held result keeps the task on its worker).
    const task = cluster.workers.get(workers[0]!)!.core.tasks.get(total.key)!;
    expect(task.state).toBe("memory");
    expect(new Set(task.dependencies).size).toBe(300);
    expect(task.dependencies.length).toBe(300);
  });

  it("workers: 4, threadsPerWorker: 2 makes four two-thread workers", async () => {
    const cluster = await start({ workers: 4, threadsPerWorker: 2, functions: basic });
    const client = cluster.client();
    const workers = await client.workers();
    expect(workers.map((w) => [w.name, w.nthreads])).toEqual([
      ["worker-0", 2],
      ["worker-1", 2],
      ["worker-2", 2],
      ["worker-3", 2],
    ]);
    expect(await client.gather(client.map<number>("double", [1, 2, 3, 4, 5, 6, 7, 8, 9]))).toEqual([2, 4, 6, 8, 10, 12, 14, 16, 18]);
  });
});

describe("task functions", () => {
  it("async task functions are awaited", async () => {
    const cluster = await start({
      functions: {
        slowDouble: async (x: number) => {
          await sleep(2);
          return 2 * x;
        },
        add: (a: number, b: number) => a + b,
      },
    });
    const client = cluster.client();
    const a = client.submit<number>("slowDouble", [5]);
    const b = client.submit<number>("slowDouble", [a]);
    const c = client.submit<number>("add", [a, b]);
    expect(await c.result()).toBe(30);
  });

  it("objects, arrays and nested futures travel as arguments", async () => {
    const cluster = await start({ functions: { echo: (v: unknown) => v, inc: basic.inc } });
    const client = cluster.client();
    const one = client.submit<number>("inc", [0]);
    const v = client.submit("echo", [{ list: [one, 2, { deep: one }], name: "n" }]);
    expect(await v.result()).toEqual({ list: [1, 2, { deep: 1 }], name: "n" });
  });

  it("a literal object that looks like a key reference is passed through as data", async () => {
    const cluster = await start({ functions: { echo: (v: unknown) => v, inc: basic.inc } });
    const client = cluster.client();
    const v = client.submit("echo", [{ $key: "not a ref", n: 1 }]);
    expect(await v.result()).toEqual({ $key: "not a ref", n: 1 });
  });

  it("futures inside such a literal-looking object still become dependencies", async () => {
    const cluster = await start({ functions: { echo: (v: unknown) => v, inc: basic.inc } });
    const client = cluster.client();
    const one = client.submit<number>("inc", [0]);
    const v = client.submit("echo", [{ $key: "not a ref", value: one }]);
    expect(await v.result()).toEqual({ $key: "not a ref", value: 1 });
  });

  it("a throw: result() rejects with TaskFailedError naming the key and the original message", async () => {
    const cluster = await start({
      functions: {
        ...basic,
        boom: () => {
          throw new RangeError("kaboom: out of range");
        },
      },
    });
    const client = cluster.client();
    const bad = client.submit("boom", []);
    const err = await rejection(bad.result());
    expect(err).toBeInstanceOf(TaskFailedError);
    expect(err.message).toContain("kaboom: out of range");
    expect(err.message).toContain(bad.key);
    expect((err as TaskFailedError).key).toBe(bad.key);
    expect((err as TaskFailedError).originalMessage).toBe("kaboom: out of range");
    expect((err as TaskFailedError).originalName).toBe("RangeError");
    expect((err as NatschedError).code).toBe("TASK_FAILED");
    expect(bad.status).toBe("error");

    const dependent = client.submit("inc", [bad]);
    const derr = await rejection(dependent.result());
    expect(derr).toBeInstanceOf(TaskFailedError);
    expect((derr as TaskFailedError).key).toBe(dependent.key);
    expect((derr as TaskFailedError).failedKey).toBe(bad.key);
    expect(derr.message).toContain(bad.key);
    expect(derr.message).toContain("kaboom: out of range");

    // The cluster keeps working.
    expect(await client.submit("inc", [41]).result()).toBe(42);
  });

  it("an async rejection is a failure too; a dependent submitted before the failure also fails", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const cluster = await start({
      functions: {
        ...basic,
        later: async () => {
          await gate;
          throw new Error("late failure");
        },
      },
    });
    const client = cluster.client();
    const bad = client.submit("later", []);
    const dep = client.submit("inc", [bad]);
    const dep2 = client.submit("add", [dep, 1]);
    await cluster.flush();
    release();
    const err = await rejection(dep2.result());
    expect(err).toBeInstanceOf(TaskFailedError);
    expect((err as TaskFailedError).failedKey).toBe(bad.key);
    expect(err.message).toContain("late failure");
    expect(await rejection(bad.result())).toBeInstanceOf(TaskFailedError);
  });
});

describe("typed errors, and nothing accepted is lost", () => {
  it("unknown function -> UnknownFunctionError", async () => {
    const cluster = await start({ functions: basic });
    const client = cluster.client();
    const ok = client.submit<number>("inc", [1]);
    const f = client.submit("no-such-function", [1]);
    const err = await rejection(f.result());
    expect(err).toBeInstanceOf(UnknownFunctionError);
    expect(err.message).toContain("no-such-function");
    expect(await ok.result()).toBe(2);
  });

  it("cycle in compute() -> CycleError", async () => {
    const cluster = await start({ functions: basic });
    const client = cluster.client();
    const ok = client.submit<number>("inc", [10]);
    const err = await rejection(client.compute({ a: ["inc", "b"], b: ["inc", "c"], c: ["inc", "a"], d: ["inc", 1] }));
    expect(err).toBeInstanceOf(CycleError);
    expect((err as NatschedError).code).toBe("CYCLE");
    expect(err.message).toMatch(/a|b|c/);
    expect(await ok.result()).toBe(11);
    // The rejected graph left nothing behind: its keys are free to be used again.
    expect(await client.compute({ a: ["inc", 1], b: ["inc", "a"] })).toEqual({ a: 2, b: 3 });
  });

  it("a dependency on an unknown key -> UnknownDependencyError", async () => {
    const cluster = await start({ functions: basic });
    const client = cluster.client();
    const ghost = new Future("ghost-key", client);
    const f = client.submit("inc", [ghost]);
    const err = await rejection(f.result());
    expect(err).toBeInstanceOf(UnknownDependencyError);
    expect(err.message).toContain("ghost-key");
    expect(await client.submit<number>("inc", [1]).result()).toBe(2);
  });

  it("bad options -> BadOptionError, thrown at once", async () => {
    const cluster = await start({ functions: basic });
    const client = cluster.client();
    const cases: (() => unknown)[] = [
      () => client.submit("inc", [1], { bogus: true } as never),
      () => client.submit("inc", [1], { workers: 5 } as never),
      () => client.submit("inc", [1], { priority: Number.NaN }),
      () => client.submit("inc", [1], { resources: { GPU: -1 } }),
      () => client.submit("inc", [1], { pure: "no" } as never),
      () => client.submit("inc", [1], { key: "" }),
      () => client.submit("inc", 1 as never),
      () => client.map("inc", [1, 2], { workers: [] }),
    ];
    for (const run of cases) {
      const err = thrown(run);
      expect(err).toBeInstanceOf(BadOptionError);
      expect((err as NatschedError).code).toBe("BAD_OPTION");
    }
    const unknownOption = thrown(cases[0]!);
    expect(unknownOption.message).toContain("bogus");
    expect(thrown(cases[1]!).message).toContain("workers");
    expect(await client.submit<number>("inc", [1]).result()).toBe(2);
  });

  it("bad cluster options -> BadOptionError; bad config -> an error naming the key", async () => {
    await expect(LocalCluster.start({ workers: -1, functions: basic, log: false, configFile: false })).rejects.toBeInstanceOf(BadOptionError);
    await expect(LocalCluster.start({ workers: [{ name: "a" }, { name: "a" }], functions: basic, log: false, configFile: false })).rejects.toBeInstanceOf(BadOptionError);
    await expect(LocalCluster.start({ functions: { f: 3 as never }, log: false, configFile: false })).rejects.toBeInstanceOf(BadOptionError);
    await expect(LocalCluster.start({ functions: basic, log: false, configFile: false, config: { workerSaturation: -1 } })).rejects.toThrow(/workerSaturation/);
  });

  it("using a client after cluster.close() -> ClosedError", async () => {
    const cluster = await start({ functions: basic });
    const client = cluster.client();
    const f = client.submit<number>("inc", [1]);
    expect(await f.result()).toBe(2);
    await cluster.close();
    expect(thrown(() => client.submit("inc", [2]))).toBeInstanceOf(ClosedError);
    expect(thrown(() => client.map("inc", [2]))).toBeInstanceOf(ClosedError);
    await expect(client.gather([f])).rejects.toBeInstanceOf(ClosedError);
    await expect(f.result()).rejects.toBeInstanceOf(ClosedError);
    await expect(client.scatter([1])).rejects.toBeInstanceOf(ClosedError);
    expect(thrown(() => cluster.client())).toBeInstanceOf(ClosedError);
    await expect(cluster.addWorker({ name: "late" })).rejects.toBeInstanceOf(ClosedError);
    expect((thrown(() => client.submit("inc", [2])) as NatschedError).code).toBe("CLOSED");
  });

  it("a closed client is dropped by its cluster, with its connection: clients that come and go keep nothing", async () => {
    const cluster = await start({ functions: basic });
    const kept = cluster.client();
    for (let i = 0; i < 30; i++) {
      const client = cluster.client();
      expect(await client.submit<number>("inc", [i]).result()).toBe(i + 1);
      await client.close();
      expect(thrown(() => client.submit("inc", [i]))).toBeInstanceOf(ClosedError);
    }
    // White-box: the cluster's own list of clients (closed ones used to stay in it for good).
    expect((cluster as unknown as { clients: Set<unknown> }).clients.size).toBe(1);
    expect(await kept.submit<number>("inc", [41]).result()).toBe(42);
  });

  it("a result pending when the cluster closes rejects with ClosedError", async () => {
    const cluster = await start({ functions: { never: () => new Promise(() => undefined) } });
    const client = cluster.client();
    const f = client.submit("never", []);
    const pending = f.result();
    await cluster.flush();
    await cluster.close();
    expect(await rejection(pending)).toBeInstanceOf(ClosedError);
  });
});

describe("keys", () => {
  it("pure keys dedupe: same function and arguments, same key, computed once", async () => {
    let calls = 0;
    const cluster = await start({
      functions: {
        counted: (x: number) => {
          calls++;
          return x * 3;
        },
      },
    });
    const client = cluster.client();
    const a = client.submit<number>("counted", [7]);
    const b = client.submit<number>("counted", [7]);
    expect(a.key).toBe(b.key);
    expect(a.key).toMatch(/^counted-/);
    expect(await a.result()).toBe(21);
    expect(await b.result()).toBe(21);
    const c = client.submit<number>("counted", [7]);
    expect(await c.result()).toBe(21);
    const [m] = client.map<number>("counted", [7]);
    expect(m!.key).toBe(a.key);
    expect(await m!.result()).toBe(21);
    expect(calls).toBe(1);
    // Different arguments, different key.
    const d = client.submit<number>("counted", [8]);
    expect(d.key).not.toBe(a.key);
    expect(await d.result()).toBe(24);
    expect(calls).toBe(2);
  });

  it("pure: false gives distinct keys, each computed", async () => {
    let calls = 0;
    const cluster = await start({
      functions: {
        counted: (x: number) => {
          calls++;
          return x;
        },
      },
    });
    const client = cluster.client();
    const a = client.submit<number>("counted", [1], { pure: false });
    const b = client.submit<number>("counted", [1], { pure: false });
    expect(a.key).not.toBe(b.key);
    expect(a.key).toMatch(/^counted-/);
    expect(await client.gather([a, b])).toEqual([1, 1]);
    expect(calls).toBe(2);
  });

  it("an explicit key is used as given", async () => {
    const cluster = await start({ functions: basic });
    const client = cluster.client();
    const f = client.submit<number>("inc", [1], { key: "('my-key', 3)" });
    expect(f.key).toBe("('my-key', 3)");
    expect(await f.result()).toBe(2);
  });
});

describe("placement options", () => {
  it("priority: with 1 worker x 1 thread, higher user priority runs first", async () => {
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const blockerStarted = new Promise<void>((r) => (started = r));
    const cluster = await start({
      workers: 1,
      threadsPerWorker: 1,
      functions: {
        block: async () => {
          started();
          await gate;
          return "blocked";
        },
        rec: (label: string) => {
          order.push(label);
          return label;
        },
      },
    });
    const client = cluster.client();
    const blocker = client.submit("block", []);
    await blockerStarted;
    const low = client.submit("rec", ["low"], { key: "low-1", priority: -5 });
    const mid = client.submit("rec", ["mid"], { key: "mid-1" });
    const high = client.submit("rec", ["high"], { key: "high-1", priority: 10 });
    const top = client.submit("rec", ["top"], { key: "top-1", priority: 100 });
    await cluster.flush();
    release();
    expect(await client.gather([blocker, low, mid, high, top])).toEqual(["blocked", "low", "mid", "high", "top"]);
    expect(order).toEqual(["top", "high", "mid", "low"]);
  });

  it("the workers option is a hard restriction: the task runs there", async () => {
    const cluster = await start({ workers: 3, functions: basic });
    const client = cluster.client();
    const fs = client.map<number>("inc", [1, 2, 3, 4, 5, 6], { workers: ["worker-2"] });
    expect(await client.gather(fs)).toEqual([2, 3, 4, 5, 6, 7]);
    for (const f of fs) {
      expect(cluster.workers.get("worker-2")!.store.has(f.key)).toBe(true);
      expect(cluster.workers.get("worker-0")!.store.has(f.key)).toBe(false);
      expect(cluster.workers.get("worker-1")!.store.has(f.key)).toBe(false);
    }
    const single = client.submit<number>("inc", [100], { workers: "worker-1" });
    expect(await single.result()).toBe(101);
    expect(cluster.workers.get("worker-1")!.store.has(single.key)).toBe(true);
  });

  it("resources restriction: only a worker supplying the resource runs the task", async () => {
    const cluster = await start({
      workers: [{ name: "cpu", nthreads: 4 }, { name: "gpu", nthreads: 1, resources: { GPU: 1 } }],
      functions: basic,
    });
    const client = cluster.client();
    const fs = client.map<number>("double", [1, 2, 3, 4, 5], { resources: { GPU: 1 } });
    expect(await client.gather(fs)).toEqual([2, 4, 6, 8, 10]);
    for (const f of fs) expect(cluster.workers.get("gpu")!.store.has(f.key)).toBe(true);
    // More than any worker supplies: never runs.
    const never = client.submit("double", [99], { resources: { GPU: 2 } });
    expect(await rejection(never.result({ timeout: 100 }))).toBeInstanceOf(TimeoutError);
  });

  it("allowOtherWorkers falls back when the named worker does not exist; without it the task waits for that worker", async () => {
    const cluster = await start({ workers: 2, functions: basic });
    const client = cluster.client();
    const loose = client.submit<number>("inc", [1], { workers: ["ghost"], allowOtherWorkers: true });
    expect(await loose.result()).toBe(2);
    const strict = client.submit<number>("inc", [2], { workers: ["ghost"] });
    expect(await rejection(strict.result({ timeout: 100 }))).toBeInstanceOf(TimeoutError);
    await cluster.addWorker({ name: "ghost" });
    expect(await strict.result()).toBe(3);
    expect(cluster.workers.get("ghost")!.store.has(strict.key)).toBe(true);
  });
});

describe("data movement", () => {
  it("a task whose dependency lives on another worker fetches it worker-to-worker", async () => {
    const log = new MemoryLogSink();
    const cluster = await start({ workers: [{ name: "a" }, { name: "b" }], functions: basic, log });
    const client = cluster.client();
    const x = client.submit<number>("inc", [1], { workers: ["a"] });
    const y = client.submit<number>("add", [x, 10], { workers: ["b"] });
    expect(await y.result()).toBe(12);
    // b holds a copy of x, which it got from a.
    expect(cluster.workers.get("a")!.store.has(x.key)).toBe(true);
    expect(cluster.workers.get("b")!.store.has(x.key)).toBe(true);
    const bInputs = log.records.filter((r): r is InputRecord => r.actor === "worker.b" && r.kind === "input");
    const gather = bInputs.find((r) => r.event.op === "gather-done");
    expect(gather?.event).toMatchObject({ from: "a", received: [{ key: x.key }] });
    const story = log.records
      .filter((r): r is TransitionRecord => r.actor === "worker.b" && r.kind === "transition" && r.id === x.key)
      .map((r) => `${r.from}->${r.to}`);
    expect(story).toEqual(["released->fetch", "fetch->flight", "flight->memory"]);
    // Never through the client: the client gave x's value to nobody (no put-data on b).
    expect(bInputs.some((r) => r.event.op === "put-data")).toBe(false);
    // The scheduler learnt about the replica.
    const addKeys = log.records.find((r): r is InputRecord => r.actor === "scheduler" && r.kind === "input" && r.event.op === "add-keys");
    expect(addKeys?.event).toMatchObject({ worker: "b", keys: [{ key: x.key }] });
  });

  it("many dependencies spread over workers are all fetched (tree reduction)", async () => {
    const cluster = await start({ workers: 3, threadsPerWorker: 2, functions: basic });
    const client = cluster.client();
    const leaves = client.map<number>("inc", Array.from({ length: 30 }, (_, i) => i));
    const pairs: Future<number>[] = [];
    for (let i = 0; i < leaves.length; i += 3) pairs.push(client.submit<number>("sum", [[leaves[i], leaves[i + 1], leaves[i + 2]]]));
    const total = client.submit<number>("sum", [pairs]);
    expect(await total.result()).toBe(Array.from({ length: 30 }, (_, i) => i + 1).reduce((a, b) => a + b, 0));
  });
});

describe("releasing and closing", () => {
  it("released futures free data on workers (worker stores and the scheduler end empty)", async () => {
    const cluster = await start({ workers: 2, functions: basic });
    const client = cluster.client();
    const xs = client.map<number>("inc", Array.from({ length: 20 }, (_, i) => i));
    const total = client.submit<number>("sum", [xs]);
    expect(await total.result()).toBe(210);
    const stores = [...cluster.workers.values()].map((w) => w.store);
    expect(stores.reduce((n, s) => n + s.size, 0)).toBeGreaterThan(0);
    for (const f of xs) f.release();
    total.release();
    await untilFlushed(cluster, () => stores.every((s) => s.size === 0) && cluster.scheduler.core.tasks.size === 0);
    for (const w of cluster.workers.values()) expect(w.core.tasks.size).toBe(0);
    expect(total.status).toBe("cancelled");
  });

  it("scatter without workers spreads the data; released, it is freed", async () => {
    const cluster = await start({ workers: 2, functions: basic });
    const client = cluster.client();
    const fs = await client.scatter([10, 20, 30, 40]);
    const stores = [...cluster.workers.values()].map((w) => w.store);
    expect(stores.map((s) => s.size)).toEqual([2, 2]);
    expect(await client.gather(fs)).toEqual([10, 20, 30, 40]);
    const total = client.submit<number>("sum", [fs]);
    expect(await total.result()).toBe(100);
    for (const f of fs) f.release();
    total.release();
    await untilFlushed(cluster, () => stores.every((s) => s.size === 0) && cluster.scheduler.core.tasks.size === 0);
  });

  it("compute() releases its futures once it has the results", async () => {
    const cluster = await start({ workers: 2, functions: basic });
    const client = cluster.client();
    expect(await client.compute({ a: ["inc", 1], b: ["add", "a", "a"], c: ["double", "b"] })).toEqual({ a: 2, b: 4, c: 8 });
    const stores = [...cluster.workers.values()].map((w) => w.store);
    await untilFlushed(cluster, () => stores.every((s) => s.size === 0) && cluster.scheduler.core.tasks.size === 0);
  });

  it("compute() with keys: only those are returned, and nothing of the graph stays behind", async () => {
    const cluster = await start({ workers: 2, functions: basic });
    const client = cluster.client();
    expect(await client.compute({ a: ["inc", 1], b: ["double", "a"], unused: ["inc", 5] }, { keys: ["b"] })).toEqual({ b: 4 });
    const stores = [...cluster.workers.values()].map((w) => w.store);
    await untilFlushed(cluster, () => stores.every((s) => s.size === 0));
    await untilFlushed(cluster, () => cluster.scheduler.core.tasks.size === 0, 300).catch(() => undefined);
    expect([...cluster.scheduler.core.tasks.keys()]).toEqual([]);
  });

  it("a released future's key is kept while another future holds it", async () => {
    const cluster = await start({ workers: 1, functions: basic });
    const client = cluster.client();
    const a = client.submit<number>("inc", [1]);
    const b = client.submit<number>("inc", [1]);
    expect(await a.result()).toBe(2);
    a.release();
    await cluster.flush();
    await sleep(10);
    await cluster.flush();
    expect(await b.result()).toBe(2);
    b.release();
    const store = cluster.workers.get("worker-0")!.store;
    await untilFlushed(cluster, () => store.size === 0);
  });

  it("nothing leaks after close: stores empty, actors stopped, no timers left behind", async () => {
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const cluster = await LocalCluster.start({ workers: 3, functions: basic, log: false, configFile: false });
    const workers: WorkerActor[] = [...cluster.workers.values()];
    const client = cluster.client();
    const xs = client.map<number>("inc", Array.from({ length: 50 }, (_, i) => i));
    await client.gather(xs);
    await cluster.close();
    expect(cluster.closed).toBe(true);
    expect(cluster.workers.size).toBe(0);
    expect(client.closed).toBe(true);
    for (const w of workers) expect(w.store.size).toBe(0);
    expect(cluster.scheduler.core.state).toBe("closed");
    for (const w of workers) expect(w.core.state === "closing" || w.core.state === "closed").toBe(true);
    await sleep(5);
    const timersAfter = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    expect(timersAfter).toBeLessThanOrEqual(timersBefore);
    // Closing twice is harmless.
    await cluster.close();
  });

  it("closing while tasks still run: their late results do not land in the closed workers' stores", async () => {
    let finished = 0;
    const cluster = await LocalCluster.start({
      workers: 2,
      threadsPerWorker: 2,
      log: false,
      configFile: false,
      functions: {
        slow: async (x: number) => {
          await sleep(20);
          finished++;
          return x;
        },
      },
    });
    const workers: WorkerActor[] = [...cluster.workers.values()];
    const client = cluster.client();
    const fs = client.map("slow", [1, 2, 3, 4]);
    await untilFlushed(cluster, () => workers.reduce((n, w) => n + w.core.executing, 0) > 0);
    await cluster.close();
    void fs;
    await sleep(60);
    expect(finished).toBeGreaterThan(0);
    expect(workers.map((w) => [w.name, [...w.store.keys()]])).toEqual(workers.map((w) => [w.name, []]));
  });

  it("closing a client releases its keys on the cluster", async () => {
    const cluster = await start({ workers: 2, functions: basic });
    const c1 = cluster.client();
    const c2 = cluster.client();
    const f1 = c1.submit<number>("inc", [1]);
    const f2 = c2.submit<number>("inc", [1]);
    expect(await f1.result()).toBe(2);
    expect(await f2.result()).toBe(2);
    await c1.close();
    expect(cluster.scheduler.core.tasks.size).toBe(1);
    expect(await f2.result()).toBe(2);
    await c2.close();
    const stores = [...cluster.workers.values()].map((w) => w.store);
    await untilFlushed(cluster, () => stores.every((s) => s.size === 0) && cluster.scheduler.core.tasks.size === 0);
  });
});

describe("failures and scale", () => {
  it("killWorker mid-run: results are still correct (lost work and data recomputed)", async () => {
    const calls = new Map<number, number>();
    const cluster = await start({
      workers: 3,
      threadsPerWorker: 2,
      functions: {
        slowInc: async (x: number) => {
          calls.set(x, (calls.get(x) ?? 0) + 1);
          await sleep(3);
          return x + 1;
        },
        double: basic.double,
        sum: basic.sum,
      },
    });
    const client = cluster.client();
    const xs = client.map<number>("slowInc", Array.from({ length: 40 }, (_, i) => i));
    const ys = xs.map((x) => client.submit<number>("double", [x]));
    const total = client.submit<number>("sum", [ys]);
    // Let some work finish, so data lives on the worker about to die.
    await xs[5]!.wait();
    const dying = cluster.workers.get("worker-0")!;
    const heldByDead = xs.filter((x) => dying.store.has(x.key)).length;
    cluster.killWorker("worker-0");
    expect(cluster.workers.has("worker-0")).toBe(false);
    const expected = Array.from({ length: 40 }, (_, i) => 2 * (i + 1));
    expect(await client.gather(ys)).toEqual(expected);
    expect(await total.result()).toBe(expected.reduce((a, b) => a + b, 0));
    expect(await client.gather(xs)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(cluster.scheduler.core.workers.has("worker-0")).toBe(false);
    // What the dead worker held was computed again.
    const totalCalls = [...calls.values()].reduce((a, b) => a + b, 0);
    expect(totalCalls).toBeGreaterThanOrEqual(40 + heldByDead);
  });

  it("a killed worker's in-flight executions do not land in its store afterwards", async () => {
    const cluster = await start({
      workers: 2,
      threadsPerWorker: 2,
      functions: {
        slow: async (x: number) => {
          await sleep(15);
          return x;
        },
      },
    });
    const client = cluster.client();
    const fs = client.map<number>("slow", [1, 2, 3, 4, 5, 6, 7, 8]);
    const dying = cluster.workers.get("worker-0")!;
    await untilFlushed(cluster, () => dying.core.executing > 0);
    cluster.killWorker("worker-0");
    expect(dying.store.size).toBe(0);
    expect(await client.gather(fs)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    await sleep(20);
    expect([...dying.store.keys()]).toEqual([]);
  });

  it("removeWorker (a graceful retire) mid-way: data it held is moved, not recomputed", async () => {
    let calls = 0;
    const cluster = await start({
      workers: 2,
      functions: {
        countedInc: (x: number) => {
          calls++;
          return x + 1;
        },
        double: basic.double,
      },
    });
    const client = cluster.client();
    const xs = client.map<number>("countedInc", Array.from({ length: 10 }, (_, i) => i));
    expect(await client.gather(xs)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    const held = xs.filter((x) => cluster.workers.get("worker-0")!.store.has(x.key)).length;
    expect(held).toBeGreaterThan(0);
    await cluster.removeWorker("worker-0");
    const ys = xs.map((x) => client.submit<number>("double", [x]));
    expect(await client.gather(ys)).toEqual(Array.from({ length: 10 }, (_, i) => 2 * (i + 1)));
    expect(await client.gather(xs)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(calls).toBe(10);
    expect(cluster.scheduler.core.workers.has("worker-0")).toBe(false);
    expect(cluster.workers.get("worker-1")!.store.size).toBeGreaterThanOrEqual(10);
  });

  it("scattered data lost with its only holder fails what needs it with DataLostError, and the cluster goes on", async () => {
    const cluster = await start({ workers: 2, functions: { double: basic.double } });
    const client = cluster.client();
    const [d] = await client.scatter([21], { workers: ["worker-0"] });
    expect(await client.submit<number>("double", [d!]).result()).toBe(42);
    cluster.killWorker("worker-0");
    const again = client.submit<number>("double", [d!], { key: "double-again" });
    await expect(again.result()).rejects.toMatchObject({ name: "TaskFailedError", key: "double-again", failedKey: d!.key, originalName: "DataLostError" });
    await expect(d!.result()).rejects.toThrow(/scattered, not computed/);
    expect(await client.submit<number>("double", [5]).result()).toBe(10);
  });

  it("20,000 no-op tasks via map all complete correctly", async () => {
    const cluster = await start({ workers: 4, threadsPerWorker: 2, functions: { ident: (x: number) => x } });
    const client = cluster.client();
    const n = 20_000;
    const t0 = Date.now();
    const fs = client.map<number>("ident", Array.from({ length: n }, (_, i) => i));
    expect(new Set(fs.map((f) => f.key)).size).toBe(n);
    const values = await client.gather(fs);
    expect(values).toHaveLength(n);
    for (let i = 0; i < n; i++) if (values[i] !== i) throw new Error(`value ${i} is ${String(values[i])}`);
    expect(Date.now() - t0).toBeLessThan(20_000);
    const perWorker = [...cluster.workers.values()].map((w) => w.store.size);
    expect(perWorker.reduce((a, b) => a + b, 0)).toBe(n);
    // Work was spread over every worker.
    for (const count of perWorker) expect(count).toBeGreaterThan(0);
  });
});
