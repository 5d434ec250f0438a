/**
 * Scheduler ops a worker core once mishandled (found by tests/fuzz-scheduler-host.test.ts and
 * tests/fuzz-worker.test.ts): each is taken without an exception, and a task is never left
 * waiting for an input nobody can deliver.
 */
import { afterEach, describe, expect, it } from "vitest";
import { WorkerActor } from "../actors/worker-actor.js";
import type { ComputeTaskOp, DepInfo, WorkerToScheduler } from "../machines/protocol.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInput } from "../machines/worker/inputs.js";
import { MemoryBus } from "../transport/memory.js";
import type { Msg, Transport } from "../transport/types.js";
import { WireLike } from "./support/wire-like.js";

type Op = WorkerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

class Worker {
  sent: WorkerToScheduler[] = [];
  gathers: { from: string; keys: string[] }[] = [];
  readonly core = new WorkerCore(
    { name: "w", id: "w#1", nthreads: 1, transferIncomingCountLimit: 4 },
    {
      toScheduler: (op) => this.sent.push(structuredClone(op)),
      execute: () => undefined,
      gather: (from, keys) => this.gathers.push({ from, keys: [...keys] }),
      freeData: () => undefined,
      transition: () => undefined,
    },
  );
  private t = 0;

  constructor() {
    this.handle({ op: "registered" });
  }

  handle(op: Op): void {
    this.core.handle({ ...op, t: ++this.t } as WorkerInput);
  }

  compute(key: string, deps: DepInfo[], attempt = 1): void {
    const op: ComputeTaskOp = { op: "compute-task", key, func: "f", args: [], deps, priority: [0, 0, 0], duration: 0.5, run: 1, attempt };
    this.handle(op);
  }
}

describe("a compute-task naming this worker as the holder of an input it does not have", () => {
  it("is answered with missing-data about itself (the scheduler counts a copy that is not here)", () => {
    const w = new Worker();
    w.compute("y", [{ key: "x", nbytes: 8, holders: ["w"] }]);
    expect(w.sent).toEqual([{ op: "missing-data", worker: "w", id: "w#1", key: "x", holder: "w" }]);
    expect(w.core.tasks.get("y")?.state).toBe("waiting");
    // The other holders named are fetched from as usual.
    w.sent = [];
    w.compute("z", [{ key: "x2", nbytes: 8, holders: ["w", "p"] }], 2);
    expect(w.sent).toEqual([{ op: "missing-data", worker: "w", id: "w#1", key: "x2", holder: "w" }]);
    expect(w.gathers).toEqual([{ from: "p", keys: ["x2"] }]);
  });

  it("is said for an acquire-replicas too, and not for a key it has", () => {
    const w = new Worker();
    w.handle({ op: "acquire-replicas", keys: [{ key: "x", nbytes: 8, holders: ["w"] }] });
    expect(w.sent).toEqual([{ op: "missing-data", worker: "w", id: "w#1", key: "x", holder: "w" }]);
    w.sent = [];
    w.compute("a", []);
    w.handle({ op: "execute-done", key: "a", nbytes: 8, start: 0, stop: 1 });
    w.sent = [];
    w.compute("b", [{ key: "a", nbytes: 8, holders: ["w"] }], 2);
    expect(w.sent).toEqual([]);
    expect(w.core.tasks.get("b")?.state).toBe("executing");
  });

  it("with no other holder, leaves nothing waiting in fetch (DST quiescence-b39eb670)", () => {
    const w = new Worker();
    w.handle({ op: "acquire-replicas", keys: [{ key: "x", nbytes: 8, holders: ["w"] }], run: 1 });
    expect(w.core.tasks.has("x")).toBe(false);
    expect(w.gathers).toEqual([]);
  });
});

describe("an acquire-replicas of a run the worker has left", () => {
  it("is dropped as stale: a late confirmation request of the old run copies nothing (DST quiescence-b39eb670)", () => {
    const w = new Worker();
    w.compute("a", []);
    w.handle({ op: "new-run", run: 2 });
    w.sent = [];
    w.handle({ op: "acquire-replicas", keys: [{ key: "x", nbytes: 8, holders: ["p"] }], run: 1 });
    expect(w.core.tasks.has("x")).toBe(false);
    expect(w.gathers).toEqual([]);
    expect(w.sent).toEqual([]);
    // One of the run it is in is taken.
    w.handle({ op: "acquire-replicas", keys: [{ key: "x", nbytes: 8, holders: ["p"] }], run: 2 });
    expect(w.core.tasks.get("x")?.state).toBe("flight");
  });
});

describe("a report names the run of its assignment", () => {
  it("task-erred and task-finished carry the run the compute-task came in", () => {
    const w = new Worker();
    w.compute("a", []);
    w.handle({ op: "execute-failed", key: "a", error: { name: "E", message: "boom" }, start: 0, stop: 1 });
    w.compute("b", [], 2);
    w.handle({ op: "execute-done", key: "b", nbytes: 8, start: 1, stop: 2 });
    expect(w.sent.filter((op) => op.op === "task-erred" || op.op === "task-finished").map((op) => [op.op, (op as { run?: number }).run, (op as { attempt?: number }).attempt])).toEqual([
      ["task-erred", 1, 1],
      ["task-finished", 1, 2],
    ]);
  });
});

describe("a worker actor", () => {
  let stop: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await stop?.();
    stop = null;
  });

  /** Worker w on the in-process bus (as across a wire), a stand-in scheduler collecting its reports, and a sender. */
  async function start(): Promise<{ worker: WorkerActor; reports: WorkerToScheduler[]; sender: Transport; errors: unknown[] }> {
    const bus = new MemoryBus({ copy: true });
    const scheduler = bus.connect("scheduler");
    const sender = new WireLike(bus.connect("sender"));
    const reports: WorkerToScheduler[] = [];
    scheduler.subscribe("natsched.h.scheduler.worker.w", (msg: Msg) => {
      const ops = (msg.data as { ops: WorkerToScheduler[] }).ops;
      reports.push(...ops.filter((op) => op.op !== "register-worker"));
      if (msg.reply !== undefined) scheduler.publish(msg.reply, { replies: ops.map(() => ({ ok: true })) });
    });
    const errors: unknown[] = [];
    const worker = new WorkerActor({
      cluster: "h",
      transport: new WireLike(bus.connect("worker")),
      name: "w",
      id: "w-1",
      nthreads: 1,
      functions: { inc: (x: number) => x + 1 },
      clock: { now: () => 1 },
      log: null,
      transferIncomingCountLimit: 2,
      heartbeatInterval: Infinity,
      transferTimeout: 5000,
      onError: (error) => errors.push(error),
    });
    await worker.start();
    stop = async () => {
      worker.close();
      await scheduler.close();
      await sender.close();
    };
    return { worker, reports, sender, errors };
  }

  const computeTask = (key: string, func: string, deps: DepInfo[] = []): unknown => ({
    v: 1,
    from: "scheduler",
    ops: [{ op: "compute-task", key, func, args: [], deps, priority: [0, 0, 0], duration: 0.5, run: 1, attempt: 1 }],
  });

  it("runs only its own task functions: a task of func \"constructor\" fails with UNKNOWN_FUNCTION", async () => {
    const { reports, sender } = await start();
    sender.publish("natsched.h.worker.w", computeTask("x", "constructor") as never);
    await expect.poll(() => reports.length).toBe(1);
    expect(reports[0]).toMatchObject({ op: "task-erred", key: "x", error: { name: "UnknownFunctionError", code: "UNKNOWN_FUNCTION" } });
  });

  it("refuses a compute-task naming its own key, or one input twice, among its inputs", async () => {
    const { worker, sender } = await start();
    const self = await sender.request("natsched.h.worker.w", computeTask("x", "inc", [{ key: "x", nbytes: 8, holders: ["p"] }]) as never);
    expect(self).toMatchObject({ replies: [{ ok: false, error: { code: "PROTOCOL", message: expect.stringMatching(/names itself as an input/) } }] });
    const twice = await sender.request("natsched.h.worker.w", computeTask("y", "inc", [{ key: "a", nbytes: 8, holders: ["p"] }, { key: "a", nbytes: 8, holders: ["q"] }]) as never);
    expect(twice).toMatchObject({ replies: [{ ok: false, error: { code: "PROTOCOL", message: expect.stringMatching(/named twice/) } }] });
    expect(worker.core.tasks.size).toBe(0);
  });

  it("takes no memory for the size a put-data's transfer claims before its bytes arrive", async () => {
    const { sender } = await start();
    let asked: Msg | null = null;
    sender.subscribe("natsched.h.client.evil.data.1", (msg) => (asked = msg));
    const before = process.memoryUsage().arrayBuffers;
    const reply = sender.request(
      "natsched.h.data.w",
      { op: "put-data", who: "evil", transfer: { id: "t", size: 2e9, chunkBytes: 1e6, chunks: 2000, encoding: "v8" }, source: "natsched.h.client.evil.data.1" } as never,
      { timeout: 5000 },
    );
    await expect.poll(() => asked).not.toBeNull();
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(100e6);
    sender.publish(asked!.reply!, { error: "no such transfer" });
    expect(await reply).toMatchObject({ error: expect.stringMatching(/chunk \d of transfer t/) });
  });
});
