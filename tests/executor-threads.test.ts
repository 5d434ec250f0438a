/**
 * Module functions on executor threads, embedded (LocalCluster): loading functions from a
 * module, running them in parallel on separate threads, moving data across threads, and a
 * worker loop that answers while every thread is busy. Parallelism is shown by overlap and
 * responsiveness by answers that arrive before the busy tasks are released: no timings.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../index.js";
import { fetchData } from "../actors/data-plane/fetch.js";
import { PROTOCOL_VERSION, type Envelope } from "../machines/protocol.js";
import { subjects } from "../transport/subjects.js";
import { replay } from "../replay/replay.js";
import { sizeof } from "../actors/sizeof.js";
import { until } from "./support/until.js";

const TASKS = "tests/support/cpu-tasks.mjs";
const dir = mkdtempSync(join(tmpdir(), "natsched-executor-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Ran = { start: number; end: number; threadId: number; mainThread: boolean };
type Met = { met: boolean; threadId: number; mainThread: boolean };


describe("functions from a module", () => {
  it("a path, a file: URL, a URL and a list mixing a module and an object all work", async () => {
    const url = pathToFileURL(resolve(TASKS));
    for (const functions of [TASKS, url.href, url, [TASKS, { plus: (a: number, b: number) => a + b }]]) {
      const cluster = await LocalCluster.start({ workers: 1, functions, log: false, configFile: false });
      try {
        const client = cluster.client();
        expect(await client.submit("total", [[1, 2, 3]]).result()).toBe(6);
        if (Array.isArray(functions)) expect(await client.submit("plus", [2, 3]).result()).toBe(5);
      } finally {
        await cluster.close();
      }
    }
  });

  it("module functions run on executor threads; plain-object functions and 'loop' module functions on the worker's loop", async () => {
    const cluster = await LocalCluster.start({
      workers: [{ name: "t" }, { name: "l", executor: "loop" }],
      functions: [TASKS, { onLoop: () => ({ mainThread: true }) }],
      log: false,
      configFile: false,
    });
    try {
      const client = cluster.client();
      const onThread = await client.submit<{ mainThread: boolean }>("where", [], { workers: "t", pure: false }).result();
      const onLoop = await client.submit<{ mainThread: boolean }>("where", [], { workers: "l", pure: false }).result();
      expect(onThread.mainThread).toBe(false);
      expect(onLoop.mainThread).toBe(true);
      expect(cluster.workers.get("t")!.pool).not.toBeNull();
      expect(cluster.workers.get("l")!.pool).toBeNull();
      expect(await client.submit("onLoop", [], { workers: "t" }).result()).toEqual({ mainThread: true });
    } finally {
      await cluster.close();
    }
  });

  it("a module entry can choose the loop for its functions", async () => {
    const cluster = await LocalCluster.start({ workers: 1, functions: { module: TASKS, executor: "loop" }, log: false, configFile: false });
    try {
      expect((await cluster.client().submit<{ mainThread: boolean }>("where", []).result()).mainThread).toBe(true);
    } finally {
      await cluster.close();
    }
  });

  it("a module that does not resolve, one without function exports, and a bad executor fail at start with BadOptionError", async () => {
    const bad = [
      { functions: "tests/support/no-such-module.mjs", message: /cannot load/ },
      { functions: "tests/support/no-functions.mjs", message: /exports no functions/ },
      { functions: ["", TASKS], message: /empty string/ },
      { functions: [], message: /empty list/ },
      { functions: "file://host-that-is-not-local/tasks.mjs", message: /not a file URL/ },
      { functions: { answer: 42 }, message: /answer is not a function/ },
    ];
    for (const { functions, message } of bad) {
      await expect(LocalCluster.start({ workers: 1, functions: functions as never, log: false, configFile: false })).rejects.toMatchObject({ code: "BAD_OPTION", name: "BadOptionError", message });
    }
    await expect(LocalCluster.start({ workers: 1, functions: TASKS, executor: "fast" as never, log: false, configFile: false })).rejects.toMatchObject({ code: "BAD_OPTION" });
  });

  it("a task's error and an async module function come back as on the loop", async () => {
    const cluster = await LocalCluster.start({ workers: 1, functions: TASKS, log: false, configFile: false });
    try {
      const client = cluster.client();
      await expect(client.submit("fail", ["boom"]).result()).rejects.toMatchObject({ code: "TASK_FAILED", message: expect.stringMatching(/boom/) });
      expect(await client.submit("later", ["v"]).result()).toBe("v");
    } finally {
      await cluster.close();
    }
  });
});

describe("executor threads", () => {
  it("two CPU-bound tasks on one worker with two threads run at the same time (each sees the other start)", async () => {
    const cluster = await LocalCluster.start({ workers: 1, threadsPerWorker: 2, functions: TASKS, log: false, configFile: false });
    try {
      const client = cluster.client();
      // Each spins until the other has started: both meet only if they ran at the same time.
      const [pa, pb] = [join(dir, "meet-a"), join(dir, "meet-b")];
      const [a, b] = (await client.gather([client.submit<Met>("meet", [pa, pb], { pure: false }), client.submit<Met>("meet", [pb, pa], { pure: false })])) as Met[];
      expect([a!.met, b!.met]).toEqual([true, true]);
      expect([a!.mainThread, b!.mainThread]).toEqual([false, false]);
      expect(a!.threadId).not.toBe(b!.threadId);
    } finally {
      await cluster.close();
    }
  });

  it("a 48 MB Float64Array works as a result, as an argument, across workers, with its nbytes", async () => {
    const n = 6_000_000;
    const cluster = await LocalCluster.start({ workers: 2, functions: TASKS, log: false, configFile: false });
    try {
      const client = cluster.client();
      const big = client.submit<Float64Array>("ramp", [n], { workers: "worker-0" });
      const doubled = client.submit<Float64Array>("scale", [big, 2], { workers: "worker-1" });
      const sum = client.submit<number>("total", [doubled], { workers: "worker-0" });
      expect(await sum.result()).toBe(n * (n - 1));
      const value = await doubled.result();
      expect(value).toBeInstanceOf(Float64Array);
      expect(value.length).toBe(n);
      expect(value[n - 1]).toBe(2 * (n - 1));
      // The store keeps what it gave out as arguments (copied into the thread, not moved).
      const kept = cluster.workers.get("worker-0")!.store.get(big.key) as Float64Array;
      expect(kept.length).toBe(n);
      // nbytes as for any value on the loop.
      expect(cluster.workers.get("worker-0")!.core.tasks.get(big.key)!.nbytes).toBe(sizeof(new Float64Array(n)));
      expect(cluster.workers.get("worker-1")!.totals.bytesFetched).toBeGreaterThanOrEqual(8 * n);
      const mixed = await client.submit<Record<string, unknown>>("mixed", [16]).result();
      expect(new Uint8Array(mixed.buffer as ArrayBuffer)).toEqual(new Uint8Array(16).fill(7));
      expect(mixed.ints).toEqual(Int32Array.from([1, 2, 3]));
      expect(mixed.when).toEqual(new Date(0));
      expect(mixed.map).toEqual(new Map([["a", 1]]));
      expect(mixed.list).toEqual([1, "two", null]);
    } finally {
      await cluster.close();
    }
  });

  it("with every thread busy, the worker answers heartbeats, steal requests and peers' data requests", async () => {
    const run = mkdtempSync(join(dir, "busy-"));
    const release = join(run, "release");
    const cluster = await LocalCluster.start({
      workers: 1,
      threadsPerWorker: 2,
      functions: TASKS,
      config: { heartbeatInterval: 0.02 },
      log: false,
      configFile: false,
    });
    try {
      const client = cluster.client();
      const s = subjects(cluster.name);
      const busy = [0, 1].map((i) => client.submit<string>("spinUntil", [release, join(run, `started-${i}`)], { pure: false }));
      await until(() => existsSync(join(run, "started-0")) && existsSync(join(run, "started-1")));
      expect(cluster.workers.get("worker-0")!.pool!.busy).toBe(2);

      const observer = cluster.bus.connect("observer");
      const seen: string[] = [];
      observer.subscribe(s.workerOps("worker-0"), (msg) => {
        for (const op of (msg.data as Envelope<{ op: string }>).ops) seen.push(op.op);
      });
      await until(() => seen.includes("heartbeat"));

      const steal: Envelope<unknown> = { v: PROTOCOL_VERSION, from: "scheduler", ops: [{ op: "steal-request", key: busy[0]!.key, requestId: "probe" }] };
      expect(await observer.request(s.worker("worker-0"), steal, { timeout: 10_000 })).toEqual({ replies: [{ ok: true }] });
      await until(() => seen.includes("steal-response"));

      const [held] = await client.scatter([42], { workers: ["worker-0"] });
      const fetched = await fetchData(observer, s.workerData("worker-0"), [held!.key], "peer", 10_000);
      expect(fetched.values).toEqual([42]);
      expect(await held!.result()).toBe(42);
      await observer.close();

      writeFileSync(release, "");
      expect(await client.gather(busy)).toEqual(["released", "released"]);
    } finally {
      writeFileSync(release, "");
      await cluster.close();
    }
  });

  it("a cancelled task running on a thread is stopped: its thread is replaced and the next task runs there", async () => {
    const run = mkdtempSync(join(dir, "stop-"));
    const release = join(run, "release");
    const started = join(run, "started");
    const cluster = await LocalCluster.start({ workers: 1, threadsPerWorker: 1, functions: TASKS, log: false, configFile: false });
    try {
      const client = cluster.client();
      // No time limit that matters: only a stop ends it, since nobody creates `release`.
      const stuck = client.submit<string>("spinUntil", [release, started, 3_600_000], { pure: false });
      await until(() => existsSync(started));
      const stuckThread = Number(readFileSync(started, "utf8"));
      await stuck.cancel();
      await expect(stuck.result()).rejects.toMatchObject({ code: "CANCELLED" });
      const next = await client.submit<{ threadId: number; mainThread: boolean }>("where", [], { pure: false }).result();
      expect(next.mainThread).toBe(false);
      expect(next.threadId).not.toBe(stuckThread);
      const worker = cluster.workers.get("worker-0")!;
      await until(() => worker.core.taskState(stuck.key) === undefined);
      expect(worker.pool!.busy).toBe(0);
      expect(existsSync(release)).toBe(false);
    } finally {
      await cluster.close();
    }
  });

  it("a run with module functions on threads replays", async () => {
    const path = join(dir, "threads.natlog");
    const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 2, functions: [TASKS, { plus: (a: number, b: number) => a + b }], log: { path }, configFile: false });
    const client = cluster.client();
    const spins = [1, 2, 3, 4].map((i) => client.submit<Ran>("spin", [5 * i]));
    const sums = await client.gather([client.submit("total", [client.submit("ramp", [1000])]), client.submit("plus", [1, 2])]);
    expect(sums).toEqual([499500, 3]);
    await client.gather(spins);
    await expect(client.submit("fail", ["x"]).result()).rejects.toThrow(/x/);
    await cluster.close();
    const result = await replay(path);
    expect(result.ok).toBe(true);
  });
});
