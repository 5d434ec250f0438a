/**
 * Failing tasks and dying workers, ported from dask/distributed's test_scheduler.py and
 * test_failed_workers.py (see docs/dask-tests-ported.md).
 */
import { describe, expect, it } from "vitest";
import type { SimTaskSpec } from "../sim.js";
import { independentTasks, killedToldAtOnce, transitions, simulateDask as simulate } from "./sim-helpers.js";

describe("a task that errs", () => {
  it("fails, and so do its dependents, transitively; unrelated work finishes", () => {
    const result = simulate({
      workers: [{ name: "a" }, { name: "b" }],
      tasks: [
        { key: "div-x", duration: 1, error: "division by zero" },
        { key: "inc-y", deps: ["div-x"], duration: 1 },
        { key: "inc-z", deps: ["inc-y"], duration: 1 },
        { key: "inc-w", duration: 1 },
      ],
    });
    // Once their dependents have erred, failed intermediates nobody wants are released
    // (Dask's _propagate_erred recommends the same); the wanted inc-z keeps the error.
    expect(result.tasks["div-x"]).toMatchObject({ state: "released", executions: 1 });
    expect(result.tasks["inc-y"]).toMatchObject({ state: "released", executions: 0 });
    expect(result.tasks["inc-z"]).toMatchObject({ state: "erred", executions: 0 });
    expect(result.tasks["inc-w"]).toMatchObject({ state: "memory", executions: 1 });
    for (const key of ["inc-y", "inc-z"]) {
      expect(transitions(result.log, { actor: "scheduler", id: key, to: "erred" })[0]!.why).toEqual({ blame: "div-x" });
    }
    expect(transitions(result.log, { actor: "scheduler", id: "div-x", to: "erred" })).toHaveLength(1);
  });

  it("test_submit_dependency_of_erred_task: a later graph built on it errs too", () => {
    const result = simulate({
      workers: [{ name: "a" }],
      tasks: [
        { key: "x", duration: 1, error: "division by zero" },
        { key: "y", deps: ["x"], duration: 1, submitAt: 5 },
      ],
    });
    expect(result.tasks.y).toMatchObject({ state: "erred", executions: 0 });
  });
});

describe("a worker killed mid-run", () => {
  it("test_failed_worker_without_warning: its tasks are rescheduled and everything finishes", () => {
    const result = simulate({
      workers: [{ name: "a" }, { name: "b" }],
      tasks: independentTasks("slowinc", 10, { duration: 1 }),
      actions: [{ at: 2.5, do: "kill-worker", worker: "a" }],
    });
    const tasks = Object.values(result.tasks);
    expect(tasks.every((t) => t.state === "memory" && t.worker === "b")).toBe(true);
    // a had finished slowinc-0 and -2 (their results died with it, and the client wants
    // them) and was running slowinc-4: those three ran again on b, nothing else did.
    const twice = Object.entries(result.tasks).filter(([, t]) => t.executions === 2).map(([key]) => key);
    expect(twice).toEqual(["slowinc-0", "slowinc-2", "slowinc-4"]);
    expect(tasks.filter((t) => t.executions === 1)).toHaveLength(7);
    expect(result.log.some((r) => r.actor === "worker.a" && r.kind === "stop" && r.reason === "killed")).toBe(true);
  });

  it("results lost with it are recomputed when something still needs them", () => {
    const result = simulate({
      workers: [{ name: "a" }, { name: "b" }],
      tasks: [
        { key: "x", duration: 1, workers: ["a"], allowOtherWorkers: true },
        // y waits on b until x is done, then must fetch it; a dies before that.
        { key: "slow", duration: 10, workers: ["b"] },
        { key: "y", deps: ["x", "slow"], duration: 1, workers: ["b"] },
      ],
      actions: [{ at: 5, do: "kill-worker", worker: "a" }],
    });
    expect(result.tasks.x).toMatchObject({ executions: 2, worker: "b" });
    expect(result.tasks.y).toMatchObject({ state: "memory", worker: "b", executions: 1 });
  });

  it("a result recomputed on the worker that was fetching it when its holder died", () => {
    // Found by tests/sim-properties.test.ts: a asks d for x; d dies mid-transfer; the
    // scheduler then asks a to compute x while the transfer is still pending. When the
    // transfer fails, a must compute x, not forget it (the run used to stall here).
    const result = simulate({
      network: { latency: 0 },
      workers: [{ name: "d" }, { name: "a" }],
      tasks: [
        { key: "x", duration: 1, nbytes: 5e7, workers: ["d"], allowOtherWorkers: true },
        { key: "y", deps: ["x"], duration: 1, workers: ["a"], allowOtherWorkers: true },
      ],
      actions: killedToldAtOnce(1.2, "d"),
    });
    expect(result.tasks.x).toMatchObject({ worker: "a", executions: 2, start: 1.5, end: 2.5 });
    expect(result.tasks.y).toMatchObject({ state: "memory", worker: "a", start: 2.5, end: 3.5 });
    expect(transitions(result.log, { actor: "worker.a", id: "x" }).map((r) => r.event)).toEqual([
      "FETCH", "GATHER", "FREE", "COMPUTE_AGAIN", "FETCH_FAILED", "READY", "EXECUTE", "DONE", "FREE",
    ]);
  });

  it("a task whose workers keep dying fails as KilledWorker past allowedFailures", () => {
    const result = simulate({
      config: { allowedFailures: 0 },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: [{ key: "crash", duration: 10, workers: ["a"], allowOtherWorkers: true }],
      actions: [{ at: 1, do: "kill-worker", worker: "a" }],
    });
    expect(result.tasks.crash).toMatchObject({ state: "erred", executions: 1, worker: "" });
    const erred = transitions(result.log, { actor: "scheduler", id: "crash", to: "erred" })[0]!;
    expect(erred.why).toMatchObject({ rule: "killed-worker", worker: "a", suspicious: 1 });
  });

  it("with every worker dead, the run ends and reports what could not finish", () => {
    const tasks: SimTaskSpec[] = independentTasks("wait", 3, { duration: 10 });
    const result = simulate({
      config: { workerSaturation: Infinity },
      workers: [{ name: "a" }],
      tasks,
      actions: [{ at: 1, do: "kill-worker", worker: "a" }],
    });
    expect(Object.values(result.tasks).map((t) => t.state)).toEqual(["no-worker", "no-worker", "no-worker"]);
  });
});
