/**
 * Task priorities: user priority, first-come-first-served across submissions, depth-first
 * within a graph. Ported from dask/distributed's test_scheduler.py and test_priorities.py
 * (see docs/dask-tests-ported.md).
 */
import { describe, expect, it } from "vitest";
import type { SimTaskSpec, SimWorkerSpec } from "../sim.js";
import { simulateDask as simulate } from "./sim-helpers.js";

describe("test_fifo_submission", () => {
  it("tasks submitted one after another finish in submission order", () => {
    const tasks: SimTaskSpec[] = Array.from({ length: 20 }, (_, i) => ({
      key: `inc-${String(i).padStart(2, "0")}`,
      duration: 0.1,
      submitAt: i * 0.02,
    }));
    const result = simulate({ workers: [{ name: "w", nthreads: 2 }], tasks });
    // Dask's assertion: by the time the last one is done, the eleventh is.
    expect(result.tasks["inc-10"]!.end).toBeLessThan(result.tasks["inc-19"]!.end);
    // On the virtual clock the whole schedule is exact: strictly first come, first
    // served, two at a time, each starting one latency (1 ms) after it could.
    tasks.forEach((t, i) => {
      expect(result.tasks[t.key]!.start).toBeCloseTo(0.001 + 0.1 * Math.floor(i / 2) + 0.02 * (i % 2), 9);
    });
  });
});

/**
 * test_priorities.py's block_worker: one worker of one thread is busy ("queue on worker")
 * or absent ("queue on scheduler") while low (priority -1), clog and high (priority 1)
 * are submitted one after another; then high must run first and low last.
 */
describe.each([
  ["queue on worker", [{ name: "a" }], [{ key: "block_worker", duration: 10 }]],
  ["queue on scheduler", [{ name: "a", joinAt: 10 }], []],
] as [string, SimWorkerSpec[], SimTaskSpec[]][])("test_priorities (%s)", (_variant, workers, blocker) => {
  it("test_submit: user priority wins over submission order", () => {
    const result = simulate({
      workers,
      tasks: [
        ...blocker,
        { key: "low", duration: 1, priority: -1, submitAt: 1 },
        { key: "clog", duration: 100, submitAt: 2 },
        { key: "high", duration: 1, priority: 1, submitAt: 3 },
      ],
    });
    const { low, clog, high } = result.tasks;
    expect(high!.start).toBeLessThan(clog!.start);
    expect(low!.start).toBeGreaterThanOrEqual(clog!.end);
    expect([low!.state, clog!.state, high!.state]).toEqual(["memory", "memory", "memory"]);
  });

  it("test_map: a batch of high-priority tasks runs before a batch of low ones", () => {
    const batch = (prefix: string, priority: number, submitAt: number): SimTaskSpec[] =>
      [1, 2, 3].map((i) => ({ key: `${prefix}${i}`, duration: 1, priority, submitAt }));
    const result = simulate({
      workers,
      tasks: [...blocker, ...batch("l", -1, 1), { key: "clog", duration: 100, submitAt: 2 }, ...batch("h", 1, 3)],
    });
    const startOf = (key: string) => result.tasks[key]!.start;
    const lastHigh = Math.max(startOf("h1"), startOf("h2"), startOf("h3"));
    expect(lastHigh).toBeLessThan(startOf("clog"));
    for (const low of ["l1", "l2", "l3"]) expect(startOf(low)).toBeGreaterThanOrEqual(result.tasks.clog!.end);
  });
});

describe("test_last_in_first_out", () => {
  // Dask submits x, y, z one by one within fifo_timeout, so they share a generation; here
  // every submission is its own generation, so the chains are submitted as one graph.
  it("a worker finishes chains depth-first before starting every root", () => {
    const tasks: SimTaskSpec[] = [];
    for (let i = 0; i < 5; i++) {
      tasks.push({ key: `x${i}`, duration: 0.05 });
      tasks.push({ key: `y${i}`, deps: [`x${i}`], duration: 0.05 });
      tasks.push({ key: `z${i}`, deps: [`y${i}`], duration: 0.05 });
    }
    const result = simulate({ workers: [{ name: "a" }], tasks });
    const firstZ = Math.min(...[0, 1, 2, 3, 4].map((i) => result.tasks[`z${i}`]!.end));
    const xsDoneBefore = [0, 1, 2, 3, 4].filter((i) => result.tasks[`x${i}`]!.end <= firstZ).length;
    expect(xsDoneBefore).toBeLessThan(5);
    // Exactly: depth-first, two chains at a time, because worker-saturation 1.1 gives the
    // one thread two slots and the second root is already on the worker when the first ends.
    const order = tasks.map((t) => t.key).sort((a, b) => result.tasks[a]!.start - result.tasks[b]!.start);
    expect(order.join(" ")).toBe("x0 x1 y0 y1 z0 z1 x2 x3 y2 y3 z2 z3 x4 y4 z4");
  });
});

/**
 * One submission holding tasks of several user priorities: the ones that can run at once
 * start in priority order, whatever order the graph lists them in (Dask's update_graph
 * makes them runnable sorted by priority). Both with queuing and without it.
 */
describe.each([
  ["queuing on", {}],
  ["queuing off", { workerSaturation: Infinity }],
] as const)("priorities within one submission (%s)", (_variant, config) => {
  it("runs the highest user priority first", () => {
    const tasks: SimTaskSpec[] = [0, 1, 2, 3, 4].map((i) => ({ key: `t-${i}`, duration: 1, priority: i }));
    const result = simulate({ workers: [{ name: "a" }], config: { workStealing: false, ...config }, tasks });
    const order = Object.entries(result.tasks)
      .sort((x, y) => x[1].start - y[1].start)
      .map(([key]) => key);
    expect(order).toEqual(["t-4", "t-3", "t-2", "t-1", "t-0"]);
    expect(result.tasks["t-4"]!.start).toBeCloseTo(0.001, 9);
  });

  it("orders equal user priorities by the graph's static order", () => {
    const tasks: SimTaskSpec[] = [
      { key: "low-x", duration: 1, priority: -1 },
      { key: "a-0", duration: 1 },
      { key: "a-1", duration: 1 },
      { key: "high-x", duration: 1, priority: 5 },
    ];
    const result = simulate({ workers: [{ name: "a" }], config: { workStealing: false, ...config }, tasks });
    const order = Object.entries(result.tasks).sort((x, y) => x[1].start - y[1].start).map(([key]) => key);
    expect(order[0]).toBe("high-x");
    expect(order.at(-1)).toBe("low-x");
  });
});
