/**
 * Holding a worker's reports to send them together (config reportHold): the host's hold on
 * fake timers, the worker core's say on which report may wait, the scheduler's `prompt` on
 * tasks others wait on, and the round trip measured from when a held report left.
 */
import { describe, expect, it } from "vitest";
import { ReportHold } from "../actors/host/report-hold.js";
import { resolveConfig } from "../machines/config.js";
import type { ComputeTaskOp, SchedulerToWorker, TaskFinishedOp } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput } from "../machines/scheduler/inputs.js";
import { WorkerCore } from "../machines/worker/core.js";
import { FakeTimers } from "./support/fake-timers.js";

const report = (key: string, stop: number): TaskFinishedOp => ({ op: "task-finished", worker: "w", id: "w-1", key, nbytes: 8, start: stop - 0.01, stop });

describe("ReportHold", () => {
  function rig(seconds = 0.05) {
    const timers = new FakeTimers();
    const sent: { op: TaskFinishedOp; at: number }[] = [];
    const hold = new ReportHold(seconds, timers, (op) => sent.push({ op: op as TaskFinishedOp, at: timers.now() }));
    return { timers, sent, hold };
  }

  it("sends what it holds in order, each stamped with how long it waited", () => {
    const { timers, sent, hold } = rig();
    timers.runUntil(1);
    hold.hold(report("a", 1));
    timers.runUntil(1.02);
    hold.hold(report("b", 1.02));
    timers.runUntil(1.03);
    expect(sent).toEqual([]);
    hold.release();
    expect(sent.map(({ op }) => op.key)).toEqual(["a", "b"]);
    expect(sent[0]!.op.held).toBeCloseTo(0.03, 9);
    expect(sent[1]!.op.held).toBeCloseTo(0.01, 9);
    expect(hold.size).toBe(0);
  });

  it("sends on its own once the oldest has waited the hold, and not again", () => {
    const { timers, sent, hold } = rig(0.05);
    hold.hold(report("a", 0));
    timers.runUntil(0.03);
    hold.hold(report("b", 0.03));
    timers.runUntil(0.049);
    expect(sent).toEqual([]);
    timers.runUntil(0.2);
    expect(sent.map(({ op, at }) => [op.key, at])).toEqual([
      ["a", 0.05],
      ["b", 0.05],
    ]);
    hold.release();
    expect(sent).toHaveLength(2);
  });

  it("keeps one timer and never clears it (a cleared timer wakes the loop too): it sends only what has waited the hold", () => {
    const { timers, sent, hold } = rig(0.05);
    hold.hold(report("a", 0));
    timers.runUntil(0.01);
    hold.release();
    expect(timers.pending).toEqual([0.05]);
    timers.runUntil(0.02);
    hold.hold(report("b", 0.02));
    // The timer set for "a" serves "b" too.
    expect(timers.pending).toEqual([0.05]);
    timers.runUntil(0.05);
    expect(sent.map(({ op }) => op.key)).toEqual(["a"]);
    expect(timers.pending).toEqual([0.07]);
    timers.runUntil(0.07);
    expect(sent.map(({ op, at }) => [op.key, at])).toEqual([
      ["a", 0.01],
      ["b", 0.07],
    ]);
    expect(sent[1]!.op.held).toBeCloseTo(0.05, 9);
    // Nothing held when it fires: no timer after it.
    hold.hold(report("c", 0.07));
    hold.release();
    timers.runUntil(0.2);
    expect(timers.pending).toEqual([]);
  });

  it("leaves a report released within a millisecond unstamped", () => {
    const { sent, hold } = rig();
    hold.hold(report("a", 0));
    hold.release();
    expect(sent[0]!.op).toEqual(report("a", 0));
  });

  it("offers: holds a short report the core lets wait, sends anything else after what it holds", () => {
    const { timers, sent, hold } = rig(0.05);
    const core = { readyCount: 1, reportMayWait: (key: string) => key !== "prompt" };
    timers.runUntil(1);
    hold.offer(report("a", 1), core);
    hold.offer({ ...report("long", 1), start: 0.9 }, core);
    expect(sent.map(({ op }) => op.key)).toEqual(["a", "long"]);
    hold.offer(report("b", 1), core);
    hold.offer(report("prompt", 1), core);
    expect(sent.map(({ op }) => op.key)).toEqual(["a", "long", "b", "prompt"]);
    hold.offer(report("c", 1), core);
    hold.afterInput(core);
    expect(hold.size).toBe(1);
    hold.afterInput({ ...core, readyCount: 0 });
    expect(sent.map(({ op }) => op.key)).toEqual(["a", "long", "b", "prompt", "c"]);
  });

  it("drops what it holds, and its timer, when dropped", () => {
    const { timers, sent, hold } = rig();
    hold.hold(report("a", 0));
    hold.drop();
    timers.runUntil(1);
    expect(sent).toEqual([]);
  });
});

describe("which report may wait (WorkerCore.reportMayWait)", () => {
  function worker(nthreads: number) {
    const core = new WorkerCore({ name: "w", id: "w-1", nthreads, transferIncomingCountLimit: 50 }, { toScheduler() {}, execute() {}, gather() {}, freeData() {}, transition() {} });
    core.handle({ op: "registered", run: 1, t: 0 });
    let attempt = 0;
    const compute = (key: string, prompt = false) =>
      core.handle({ op: "compute-task", key, func: "f", args: [], deps: [], priority: [0, 0, ++attempt], duration: 0.01, run: 1, attempt, t: attempt, ...(prompt ? { prompt: true as const } : {}) });
    return { core, compute };
  }

  it("one nobody waits on, while tasks are queued for the threads", () => {
    const { core, compute } = worker(1);
    compute("a");
    compute("b");
    expect(core.readyCount).toBe(1);
    expect(core.reportMayWait("a")).toBe(true);
  });

  it("not one another task waits on (prompt)", () => {
    const { core, compute } = worker(1);
    compute("a", true);
    compute("b");
    expect(core.reportMayWait("a")).toBe(false);
  });

  it("not once nothing is queued: the scheduler's next tasks are due", () => {
    const { core, compute } = worker(2);
    compute("a");
    compute("b");
    expect(core.readyCount).toBe(0);
    expect(core.reportMayWait("a")).toBe(false);
  });
});

describe("the scheduler", () => {
  function scheduler(reportHold?: number) {
    const sent: SchedulerToWorker[] = [];
    const core = new SchedulerCore(resolveConfig({ workerSaturation: "adaptive" }), { toWorker: (_w, op) => sent.push(structuredClone(op)), toClient() {}, transition() {} });
    core.start(0);
    let t = 0;
    const handle = (op: Record<string, unknown>) => core.handle({ ...op, t: ++t } as SchedulerInput);
    handle({ op: "register-worker", name: "w", id: "w-1", nthreads: 1, host: "h", resources: {}, functions: ["f"], ...(reportHold !== undefined ? { reportHold } : {}) });
    const computes = () => sent.filter((op): op is ComputeTaskOp => op.op === "compute-task");
    return { core, handle, computes };
  }

  it("marks prompt the compute-task of a task others wait on, and only that one", () => {
    const { handle, computes } = scheduler();
    handle({ op: "update-graph", client: "c", tasks: [{ key: "a", func: "f", args: [], deps: [] }, { key: "b", func: "f", args: [], deps: ["a"] }, { key: "c", func: "f", args: [], deps: [] }], wants: ["b", "c"] });
    const byKey = new Map(computes().map((op) => [op.key, op]));
    expect(byKey.get("a")?.prompt).toBe(true);
    expect(byKey.get("c")?.prompt).toBeUndefined();
  });

  it("takes a worker's report hold from its registration, for adaptive saturation", () => {
    expect(scheduler(0.05).core.workers.get("w")?.reportHold).toBe(0.05);
    expect(scheduler().core.workers.get("w")?.reportHold).toBe(0);
  });

  it("answers a held report from when it left the worker (stop + held)", () => {
    const { handle, computes } = scheduler();
    const keys = Array.from({ length: 8 }, (_, i) => `x-${i}`);
    handle({ op: "update-graph", client: "c", tasks: keys.map((key) => ({ key, func: "f", args: [], deps: [] })), wants: keys });
    const first = computes()[0]!;
    const before = computes().length;
    handle({ op: "task-finished", worker: "w", id: "w-1", key: first.key, nbytes: 8, start: 1, stop: 1.02, attempt: first.attempt, run: first.run, held: 0.03 });
    const answer = computes().slice(before);
    expect(answer).toHaveLength(1);
    expect(answer[0]!.answers).toBeCloseTo(1.05, 9);
  });
});
