/**
 * Steal races on the simulator: a request or its answer in flight (10 ms each way) while
 * the victim or the thief dies, the thief is replaced under its name, or the victim starts
 * or finishes the task. Exact outcomes; no task runs twice unless a worker died running it.
 * Ports of Dask's test_steal.py races (docs/dask-tests-ported.md); the interleavings the
 * simulator cannot produce are in steal-transaction.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Scenario, SimAction, SimResult } from "../sim.js";
import { killedToldAtOnce, transitions, simulateDask as simulate } from "./sim-helpers.js";

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * a and b, 10 ms latency; f-0..f-3 pinned loosely on a, known to take 1 s. The on-demand
 * pass after the graph (t=0) asks a for f-3 on behalf of b: the request reaches a at 0.01,
 * a's confirm reaches the scheduler at 0.02, the compute-task reaches b at 0.03.
 */
const base: Scenario = {
  config: { defaultTaskDurations: { f: 1 } },
  network: { latency: 0.01 },
  workers: [{ name: "a" }, { name: "b" }],
  tasks: range(4).map((i) => ({ key: `f-${i}`, duration: 1, workers: ["a"], allowOtherWorkers: true })),
};

function run(actions: SimAction[]): { result: SimResult; stale: number } {
  let stale = -1;
  const result = simulate({ ...base, actions }, { probes: [{ at: 1000, probe: (view) => (stale = view.scheduler.stealing!.metrics.stale) }] });
  return { result, stale };
}

const placement = (result: SimResult) => Object.entries(result.tasks).map(([key, t]) => `${key}@${t.worker}x${t.executions}`);

describe("the race-free steal", () => {
  it("f-3 is confirmed at 0.02 and runs on b; a later pass moves f-2 as well", () => {
    const { result, stale } = run([]);
    expect(result.steals).toEqual([
      { key: "f-3", victim: "a", thief: "b", level: 0, requestId: "steal-0", requested: 0, decided: 0.02, outcome: "confirmed" },
      { key: "f-2", victim: "a", thief: "b", level: 0, requestId: "steal-1", requested: 1.04, decided: 1.06, outcome: "confirmed" },
    ]);
    expect(placement(result)).toEqual(["f-0@ax1", "f-1@ax1", "f-2@bx1", "f-3@bx1"]);
    expect(stale).toBe(0);
  });
});

describe("the victim dies", () => {
  it("with the request in flight: the steal is aborted by the worker-loss RELEASE, everything runs once on b", () => {
    const { result, stale } = run(killedToldAtOnce(0.005, "a"));
    expect(result.steals).toEqual([
      { key: "f-3", victim: "a", thief: "b", level: 0, requestId: "steal-0", requested: 0, decided: 0.005, outcome: "aborted", abortedBy: "RELEASE" },
    ]);
    expect(placement(result)).toEqual(["f-0@bx1", "f-1@bx1", "f-2@bx1", "f-3@bx1"]);
    expect(stale).toBe(0);
  });

  it("with its confirm in flight: aborted, the dead victim's confirm is refused; only f-0, which a was running, runs twice", () => {
    const { result, stale } = run(killedToldAtOnce(0.015, "a"));
    expect(result.steals).toEqual([
      { key: "f-3", victim: "a", thief: "b", level: 0, requestId: "steal-0", requested: 0, decided: 0.015, outcome: "aborted", abortedBy: "RELEASE" },
    ]);
    expect(placement(result)).toEqual(["f-0@bx2", "f-1@bx1", "f-2@bx1", "f-3@bx1"]);
    // The host refuses a report of an incarnation the scheduler no longer has: the core never sees it.
    expect(result.refused).toBe(1);
    expect(stale).toBe(0);
  });
});

describe("the thief dies", () => {
  it.each([
    ["with the request in flight", 0.005],
    ["with the confirm in flight", 0.015],
  ])("%s: the confirm finds the thief gone, the task is placed afresh on a (steal-reschedule)", (_when, at) => {
    const { result } = run(killedToldAtOnce(at, "b"));
    expect(result.steals).toEqual([
      { key: "f-3", victim: "a", thief: "b", level: 0, requestId: "steal-0", requested: 0, decided: 0.02, outcome: "aborted", abortedBy: "RELEASE" },
    ]);
    const release = transitions(result.log, { actor: "scheduler", id: "f-3", event: "RELEASE" });
    expect(release.map((r) => r.why)).toEqual([expect.objectContaining({ rule: "steal-reschedule", thief: "b", state: "ready" })]);
    expect(placement(result)).toEqual(["f-0@ax1", "f-1@ax1", "f-2@ax1", "f-3@ax1"]);
  });

  it("test_steal_worker_dies_same_ip: replaced under the same name before the confirm: not sent to the old b; the new b steals it anew", () => {
    const { result } = run([
      { at: 0.015, do: "kill-worker", worker: "b" },
      { at: 0.015, do: "add-worker", worker: { name: "b" } },
    ]);
    expect(result.steals.map((s) => [s.key, s.requested, s.decided, s.outcome])).toEqual([
      ["f-3", 0, 0.02, "aborted"],
      ["f-3", 0.02, 0.04, "confirmed"],
      ["f-2", 1.06, 1.08, "confirmed"],
    ]);
    expect(placement(result)).toEqual(["f-0@ax1", "f-1@ax1", "f-2@bx1", "f-3@bx1"]);
    // The old incarnation never got f-3: its only compute-tasks went to the new one.
    const computeTasks = result.log.filter((r) => r.kind === "input" && r.actor === "worker.b" && r.event.op === "compute-task");
    expect(computeTasks.every((r) => r.t > 0.015)).toBe(true);
  });
});

describe("the victim gets to the task first", () => {
  // b joins at 5 ms, so the first pass (on demand, after b registers) is at 5 ms; the request
  // reaches a at 10 ms, when a has run f-0 (1 ms) and started f-1.
  const late = (f1: number): Scenario => ({
    config: { defaultTaskDurations: { f: 1 } },
    network: { latency: 0.005 },
    workers: [{ name: "a" }, { name: "b", joinAt: 0.005 }],
    tasks: [
      { key: "f-0", duration: 0.001, workers: ["a"], allowOtherWorkers: true },
      { key: "f-1", duration: f1, workers: ["a"], allowOtherWorkers: true },
    ],
  });

  it("test_dont_steal_executing_tasks: executing when asked: rejected, it finishes on a", () => {
    const result = simulate(late(1));
    expect(result.steals).toEqual([{ key: "f-1", victim: "a", thief: "b", level: 0, requestId: "steal-0", requested: 0.005, decided: 0.015, outcome: "rejected" }]);
    expect(result.tasks["f-1"]).toEqual({ worker: "a", start: 0.006, end: 1.006, state: "memory", executions: 1 });
    const answer = result.log.find((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "steal-response");
    expect(answer).toMatchObject({ event: { outcome: "reject", state: "executing" } });
  });

  it("finished before the answer arrives: the task-finished overtakes the reject, the steal ends with FINISH", () => {
    const result = simulate(late(0.002));
    expect(result.steals).toEqual([
      { key: "f-1", victim: "a", thief: "b", level: 0, requestId: "steal-0", requested: 0.005, decided: 0.013000000000000001, outcome: "aborted", abortedBy: "FINISH" },
    ]);
    expect(result.tasks["f-1"]).toMatchObject({ worker: "a", executions: 1, state: "memory" });
  });
});

describe("test_stop_plugin", () => {
  it("with stealing off, ten tasks pinned loosely on a all run on a", () => {
    const result = simulate({
      ...base,
      config: { ...base.config, workStealing: false, workStealingInterval: 0.01 },
      tasks: range(10).map((i) => ({ key: `f-${i}`, duration: 0.1, workers: ["a"], allowOtherWorkers: true })),
    });
    expect(Object.values(result.tasks).map((t) => t.worker)).toEqual(Array(10).fill("a"));
    expect(result.steals).toEqual([]);
  });
});

describe("test_lose_task", () => {
  it("a hundred small graphs pinned on a, a pass every millisecond: every task runs exactly once and ends in memory", () => {
    const tasks = range(100).flatMap((round) =>
      range(10).map((i) => ({ key: `slowinc-${round}-${i}`, duration: 0.01, workers: ["a"], allowOtherWorkers: true, submitAt: round * 0.01 })),
    );
    const result = simulate({ config: { workStealingInterval: 0.001 }, workers: [{ name: "a" }, { name: "b" }], tasks });
    expect(result.steals.length).toBeGreaterThan(50);
    for (const task of Object.values(result.tasks)) expect(task).toMatchObject({ state: "memory", executions: 1 });
  });
});
