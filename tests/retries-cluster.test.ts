/**
 * The `retries` option (submit, map, persist, compute) and client.fireAndForget on
 * LocalCluster: attempts in the log, the last attempt's error, bad values refused at the
 * client, a fired-and-forgotten task run after its client let go and forgotten once done,
 * and the logs replayed.
 */
import { afterEach, describe, expect, it } from "vitest";
import { BadOptionError, LocalCluster, MemoryLogSink, readReason, replay, TaskFailedError } from "../index.js";
import type { TransitionRecord } from "../log/types.js";
import { explainReasons } from "../tools/story-reasons.js";
import { rejection } from "./errors-helpers.js";
import { untilFlushed } from "./support/until.js";

const clusters: LocalCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});

/** Calls of `flaky` per argument: it fails on its first `failures` calls for that argument. */
let calls = new Map<string, number>();
/** What `record` saw, in order: the side effect a fired-and-forgotten task leaves. */
let recorded: number[] = [];
let gate: { open: () => void; opened: Promise<void> };

function newGate(): void {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gate = { open, opened };
}

async function start(): Promise<{ cluster: LocalCluster; log: MemoryLogSink }> {
  calls = new Map();
  recorded = [];
  newGate();
  const log = new MemoryLogSink();
  const cluster = await LocalCluster.start({
    log,
    configFile: false,
    workers: [{ name: "a", nthreads: 1 }],
    functions: {
      flaky: (name: string, failures: number) => {
        const n = (calls.get(name) ?? 0) + 1;
        calls.set(name, n);
        if (n <= failures) throw new Error(`${name} failed on call ${n}`);
        return `${name} ok on call ${n}`;
      },
      failsOnce: (name: string) => {
        const n = (calls.get(name) ?? 0) + 1;
        calls.set(name, n);
        if (n === 1) throw new Error(`${name} failed on call 1`);
        return `${name} ok on call ${n}`;
      },
      inc: (x: number) => x + 1,
      record: async (x: number) => {
        await gate.opened;
        recorded.push(x);
        return x;
      },
    },
  });
  clusters.push(cluster);
  return { cluster, log };
}

function taskMoves(log: MemoryLogSink, key: string): TransitionRecord[] {
  return log.records.filter((r): r is TransitionRecord => r.kind === "transition" && r.actor === "scheduler" && r.machine === "task" && r.id === key);
}

describe("retries on LocalCluster", () => {
  it("a task failing twice with retries=2 succeeds on its third run; the log has each attempt, its dependent waits for it, and replay verifies", async () => {
    const { cluster, log } = await start();
    const client = cluster.client();
    const x = client.submit<string>("flaky", ["x", 2], { retries: 2 });
    const y = client.submit<string>("inc", [x]);
    expect(await x.result({ timeout: 3000 })).toBe("x ok on call 3");
    expect(await y.result({ timeout: 3000 })).toBe("x ok on call 31");
    const retries = taskMoves(log, x.key)
      .map((r) => readReason(r))
      .filter((reason) => reason.kind === "retry");
    expect(retries.map((r) => r.why)).toEqual([
      { rule: "retry", worker: "a", try: 1, left: 1, message: "x failed on call 1" },
      { rule: "retry", worker: "a", try: 2, left: 0, message: "x failed on call 2" },
    ]);
    expect(taskMoves(log, x.key).filter((r) => r.event === "ASSIGN")).toHaveLength(3);
    // As story tells them.
    const told = taskMoves(log, x.key).filter((r) => readReason(r).kind === "retry").map((r) => explainReasons(r));
    expect(told[0]).toEqual(["its function failed and it has retries left: run again (worker=a try=1 left=1 message=x failed on call 1)"]);
    await client.close();
    await cluster.close();
    const replayed = await replay(log.records);
    expect(replayed.ok).toBe(true);
  });

  it("retries exhausted: TaskFailedError with the last attempt's message, on map and compute too", async () => {
    const { cluster, log } = await start();
    const client = cluster.client();
    const err = await rejection(client.submit("flaky", ["s", 10], { retries: 1 }).result({ timeout: 3000 }));
    expect(err).toBeInstanceOf(TaskFailedError);
    expect((err as Error).message).toContain("s failed on call 2");
    const mapped = client.map<string>("failsOnce", ["m1", "m2"], { retries: 1 });
    expect(await client.gather(mapped, { timeout: 3000 })).toEqual(["m1 ok on call 2", "m2 ok on call 2"]);
    const computed = await client.compute({ cc: ["flaky", "c", 2] }, { retries: 2, timeout: 3000 });
    expect(computed).toEqual({ cc: "c ok on call 3" });
    const failed = await rejection(client.compute({ dd: ["flaky", "d", 3] }, { retries: 2, timeout: 3000 }));
    expect((failed as Error).message).toContain("d failed on call 3");
    await client.close();
    await cluster.close();
    expect((await replay(log.records)).ok).toBe(true);
  });

  it("the failed key submitted again after its client left runs again with its new retries", async () => {
    const { cluster } = await start();
    const first = cluster.client();
    expect((await rejection(first.submit("flaky", ["r", 4], { retries: 1 }).result({ timeout: 3000 })) as Error).message).toContain("r failed on call 2");
    await first.close();
    await untilFlushed(cluster, () => cluster.scheduler.core.tasks.size === 0);
    const second = cluster.client();
    expect(await second.submit("flaky", ["r", 4], { retries: 2 }).result({ timeout: 3000 })).toBe("r ok on call 5");
  });

  it("a bad retries value is a BadOptionError on the client, before anything is sent", async () => {
    const { cluster } = await start();
    const client = cluster.client();
    for (const retries of [-1, 0.5, Infinity, "1"]) {
      expect(() => client.submit("inc", [1], { retries: retries as number })).toThrow(BadOptionError);
      expect(() => client.map("inc", [1], { retries: retries as number })).toThrow(BadOptionError);
      expect(() => client.persist({ a: ["inc", 1] }, { retries: retries as number })).toThrow(BadOptionError);
    }
    expect(() => client.submit("inc", [1], { retries: -1 })).toThrow(/retries.*whole number >= 0/);
    expect(cluster.scheduler.core.tasks.size).toBe(0);
  });
});

describe("fireAndForget on LocalCluster", () => {
  it("the task and its dependency run after the client released the future, and the cluster forgets them once done", async () => {
    const { cluster, log } = await start();
    const client = cluster.client();
    const x = client.submit<number>("inc", [1]);
    const y = client.submit<number>("record", [x]);
    void client.fireAndForget(y);
    x.release();
    y.release();
    await untilFlushed(cluster, () => cluster.scheduler.core.tasks.get(y.key)?.state === "processing.assigned");
    gate.open();
    await untilFlushed(cluster, () => recorded.length === 1 && cluster.scheduler.core.tasks.size === 0);
    expect(recorded).toEqual([2]);
    expect(cluster.workers.get("a")!.store.size).toBe(0);
    await client.close();
    await cluster.close();
    expect((await replay(log.records)).ok).toBe(true);
  });

  it("the task runs after the client closed; a failing one is forgotten too, its failure freed on the worker", async () => {
    const { cluster, log } = await start();
    const client = cluster.client();
    const done = client.submit<number>("record", [7]);
    const failing = client.submit("flaky", ["f", 5], { retries: 1 });
    await client.fireAndForget([done, failing]);
    await client.close();
    gate.open();
    await untilFlushed(cluster, () => recorded.length === 1 && calls.get("f") === 2 && cluster.scheduler.core.tasks.size === 0);
    expect(cluster.workers.get("a")!.core.tasks.size).toBe(0);
    await cluster.close();
    expect((await replay(log.records)).ok).toBe(true);
  });

  it("takes only this client's futures", async () => {
    const { cluster } = await start();
    const client = cluster.client();
    const other = cluster.client();
    const f = other.submit("inc", [1]);
    expect(() => client.fireAndForget(f)).toThrow(BadOptionError);
    expect(() => client.fireAndForget("nope" as never)).toThrow(BadOptionError);
  });
});
