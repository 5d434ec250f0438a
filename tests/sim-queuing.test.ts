/**
 * Scheduler-side queuing of root-ish tasks, ported from dask/distributed's
 * distributed/tests/test_scheduler.py (see docs/dask-tests-ported.md).
 */
import { describe, expect, it } from "vitest";
import { isRootish } from "../machines/scheduler/placement.js";
import type { SimTaskSpec, SimView } from "../sim.js";
import { independentTasks, killedToldAtOnce, transitions, simulateDask as simulate } from "./sim-helpers.js";

/** Runs the scenario and returns what `look` saw at virtual time `at`. */
function probeAt<T>(at: number, look: (view: SimView) => T, run: (probe: { at: number; probe: (view: SimView) => void }) => void): T {
  let seen: T | undefined;
  let ran = false;
  run({ at, probe: (view) => ((seen = look(view)), (ran = true)) });
  expect(ran).toBe(true);
  return seen as T;
}

function queuedKeys(view: SimView): string[] {
  const q = view.scheduler.queued;
  return q.peekN(q.size).map((ts) => ts.key);
}

function processingCounts(view: SimView): Record<string, number> {
  return Object.fromEntries([...view.scheduler.workers.values()].map((ws) => [ws.name, ws.processing.size]));
}

describe("test_saturation_factor: root tasks sent to workers of 2 and 1 threads", () => {
  const table: [number | string, [number, number]][] = [
    [2.5, [5, 3]],
    [2.0, [4, 2]],
    [1.1, [3, 2]],
    [1.0, [2, 1]],
    [0.1, [1, 1]],
    // Dask only asserts a > b here ("nondeterministic without queuing"); the simulator
    // is deterministic: a takes floor(10 / 3 * 2) = 6, b floor(10 / 3 * 1) = 3, and the
    // tenth goes to a, which ties b on the objective and joined first.
    ["inf", [7, 3]],
  ];
  it.each(table)("worker-saturation %s -> %j", (saturation, [onA, onB]) => {
    const counts = probeAt(
      1,
      (view) => [view.workers.get("a")!.tasks.size, view.workers.get("b")!.tasks.size],
      (probe) =>
        simulate(
          {
            config: { workerSaturation: saturation as number },
            workers: [
              { name: "a", nthreads: 2 },
              { name: "b", nthreads: 1 },
            ],
            tasks: independentTasks("wait", 10, { duration: 100 }),
          },
          { probes: [probe] },
        ),
    );
    expect(counts).toEqual([onA, onB]);
  });
});

describe("root-ish detection (Scheduler.is_rootish)", () => {
  // Two workers of one thread: a group is large when it has more than 4 tasks.
  const workers = [{ name: "a" }, { name: "b" }];
  function rootish(tasks: SimTaskSpec[], key: string, data: { key: string; nbytes: number; on: string[] }[] = []): boolean {
    return probeAt(
      0,
      (view) => isRootish(view.scheduler, view.scheduler.tasks.get(key)!),
      (probe) => simulate({ workers, data, tasks }, { probes: [probe] }),
    );
  }
  const roots = (n: number, extra: Partial<SimTaskSpec> = {}) => independentTasks("root", n, { duration: 10, ...extra });

  it("a group of more than twice the cluster's threads is root-ish", () => {
    expect(rootish(roots(5), "root-0")).toBe(true);
  });
  it("a group of at most twice the cluster's threads is not", () => {
    expect(rootish(roots(4), "root-0")).toBe(false);
  });
  it("a few shared trivial dependencies do not stop it (from_zarr-like)", () => {
    const data = [{ key: "zarr", nbytes: 10, on: ["a"] }];
    expect(rootish(roots(5, { deps: ["zarr"] }), "root-0", data)).toBe(true);
  });
  it("four dependency groups of one task each: still root-ish", () => {
    const deps = ["d1", "d2", "d3", "d4"];
    const data = deps.map((key) => ({ key, nbytes: 10, on: ["a"] }));
    expect(rootish(roots(5, { deps }), "root-0", data)).toBe(true);
  });
  it("five dependency groups: not root-ish", () => {
    const deps = ["d1", "d2", "d3", "d4", "d5"];
    const data = deps.map((key) => ({ key, nbytes: 10, on: ["a"] }));
    expect(rootish(roots(5, { deps }), "root-0", data)).toBe(false);
  });
  it("five tasks across its dependency groups: not root-ish", () => {
    const data = Array.from({ length: 5 }, (_, i) => ({ key: `dep-${i}`, nbytes: 10, on: ["a"] }));
    expect(rootish(roots(5, { deps: ["dep-0", "dep-1", "dep-2", "dep-3", "dep-4"] }), "root-0", data)).toBe(false);
  });
  it("a group that feeds itself counts itself among its dependency groups (Dask's TaskState.add_dependency)", () => {
    // x-1 .. x-9 each depend on the previous x: one dependency group (x), of 10 tasks, >= 5.
    const chain: SimTaskSpec[] = Array.from({ length: 10 }, (_, i) => ({ key: `x-${i}`, duration: 1, ...(i > 0 ? { deps: [`x-${i - 1}`] } : {}) }));
    expect(rootish(chain, "x-0")).toBe(false);
    expect(rootish(chain, "x-5")).toBe(false);
  });
  it("a restricted task never is", () => {
    expect(rootish(roots(5, { workers: ["a", "b"] }), "root-0")).toBe(false);
    expect(rootish(roots(5, { resources: { GPU: 1 } }), "root-0")).toBe(false);
  });
  it("with queuing on, root-ish tasks beyond the free slots are queued, others are not", () => {
    const queuedOf = (n: number) =>
      transitions(simulate({ workers, tasks: independentTasks("root", n, { duration: 10 }) }).log, { event: "QUEUE" }).length;
    expect(queuedOf(5)).toBe(1); // two slots each (ceil(1.1 * 1) = 2): four sent, one queued
    expect(queuedOf(4)).toBe(0);
  });
});

describe("test_queued_remove_add_worker", () => {
  it("queued tasks follow the slots as workers leave and join", () => {
    const seen: number[] = [];
    const result = simulate(
      {
        config: { workerSaturation: 1.0 },
        workers: [
          { name: "a", nthreads: 2 },
          { name: "b", nthreads: 2 },
        ],
        tasks: independentTasks("wait", 10, { duration: 100 }),
        actions: [
          ...killedToldAtOnce(1, "a"),
          { at: 2, do: "add-worker", worker: { name: "w", nthreads: 2 } },
        ],
      },
      { probes: [0.5, 1.5, 2.5].map((at) => ({ at, probe: (view) => seen.push(view.scheduler.queued.size) })) },
    );
    expect(seen).toEqual([6, 8, 6]);
    expect(Object.values(result.tasks).every((t) => t.state === "memory")).toBe(true);
  });
});

describe("test_ready_remove_worker / test_remove_worker_from_scheduler", () => {
  // gen_cluster's default cluster: workers of 1 and 2 threads.
  const workers = [
    { name: "a", nthreads: 1 },
    { name: "b", nthreads: 2 },
  ];
  function run(workerSaturation: number) {
    const before = { processing: {} as Record<string, number>, queued: 0 };
    const after = { processing: {} as Record<string, number>, queued: 0 };
    simulate(
      {
        config: { workerSaturation },
        workers,
        tasks: independentTasks("wait", 20, { duration: 100 }),
        actions: killedToldAtOnce(1, "a"),
      },
      {
        probes: [
          { at: 0.5, probe: (view) => Object.assign(before, { processing: processingCounts(view), queued: view.scheduler.queued.size }) },
          { at: 1.5, probe: (view) => Object.assign(after, { processing: processingCounts(view), queued: view.scheduler.queued.size }) },
        ],
      },
    );
    return { before, after };
  }

  it("worker-saturation 1.0: each worker processes as many as its threads, the rest queue", () => {
    const { before, after } = run(1.0);
    expect(before).toEqual({ processing: { a: 1, b: 2 }, queued: 17 });
    expect(after).toEqual({ processing: { b: 2 }, queued: 18 });
  });

  it("worker-saturation inf: every task is on a worker, more than its threads", () => {
    const { before, after } = run(Infinity);
    expect(before.queued).toBe(0);
    expect(before.processing.a! + before.processing.b!).toBe(20);
    expect(before.processing.a!).toBeGreaterThan(1);
    expect(before.processing.b!).toBeGreaterThan(2);
    expect(after).toEqual({ processing: { b: 20 }, queued: 0 });
  });
});

describe("test_no_workers / test_add_worker", () => {
  it.each([
    [1.0, "queued"],
    [Infinity, "no-worker"],
  ])("worker-saturation %s: a task waits as %s until a worker joins", (workerSaturation, waitingState) => {
    let state: string | undefined;
    const result = simulate(
      {
        config: { workerSaturation },
        workers: [{ name: "late", joinAt: 5 }],
        tasks: [{ key: "inc-1", duration: 1 }],
      },
      { probes: [{ at: 1, probe: (view) => (state = view.scheduler.taskState("inc-1")) }] },
    );
    expect(state).toBe(waitingState);
    expect(result.tasks["inc-1"]).toMatchObject({ state: "memory", worker: "late", executions: 1 });
    expect(result.tasks["inc-1"]!.start).toBeGreaterThan(5);
  });
});

describe("test_queued_release_multiple_workers", () => {
  it("a later submission queues behind an earlier one", () => {
    const threshold = 3 * 2 + 1;
    const first = independentTasks("first", threshold, { duration: 100 });
    const second = independentTasks("second", threshold, { duration: 100, submitAt: 1 });
    const queued = probeAt(2, queuedKeys, (probe) =>
      simulate(
        { config: { workerSaturation: 1.0 }, workers: [{ name: "a" }, { name: "b" }, { name: "c" }], tasks: [...first, ...second] },
        { probes: [probe] },
      ),
    );
    expect(queued).toEqual([...first.slice(3), ...second].map((t) => t.key));
  });
});

describe("test_graph_execution_width", () => {
  it("no worker holds more root results than it has threads", () => {
    const n = 32;
    const tasks: SimTaskSpec[] = [];
    for (let i = 0; i < n; i++) {
      tasks.push({ key: `inc-${i}`, duration: 0.01 });
      tasks.push({ key: `pass1-${i}`, deps: [`inc-${i}`], duration: 0.01 });
      tasks.push({ key: `pass2-${i}`, deps: [`pass1-${i}`], duration: 0.01 });
      tasks.push({ key: `done-${i}`, deps: [`pass2-${i}`], duration: 0.01 });
    }
    const result = simulate({
      config: { workerSaturation: 1.0 },
      workers: Array.from({ length: 4 }, (_, i) => ({ name: `w${i}`, nthreads: 2 })),
      tasks,
    });
    const roots = new Set(tasks.filter((t) => t.key.startsWith("inc-")).map((t) => t.key));
    const held = new Map<string, number>();
    const most = new Map<string, number>();
    for (const r of transitions(result.log, { machine: "wtask" })) {
      if (!roots.has(r.id)) continue;
      const delta = r.to === "memory" ? 1 : r.from === "memory" ? -1 : 0;
      const now = (held.get(r.actor) ?? 0) + delta;
      held.set(r.actor, now);
      most.set(r.actor, Math.max(most.get(r.actor) ?? 0, now));
    }
    expect([...most.keys()].sort()).toEqual(["worker.w0", "worker.w1", "worker.w2", "worker.w3"]);
    for (const count of most.values()) expect(count).toBeLessThanOrEqual(2);
    expect(Object.values(result.tasks).filter((t) => t.state === "memory")).toHaveLength(n);
  });
});
