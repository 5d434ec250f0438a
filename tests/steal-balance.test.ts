/**
 * Dask's test_balance table (distributed/tests/test_steal.py): tasks pinned loosely to
 * workers, blocked (here: 100 s long), then balancing passes; the tasks each worker has
 * processing afterwards, by the size of their dependency in seconds of transfer.
 * See docs/dask-tests-ported.md.
 */
import { describe, expect, it } from "vitest";
import type { SimAction, SimDataSpec, SimTaskSpec } from "../sim.js";
import { simulateDask as simulate } from "./sim-helpers.js";
import { snapshot, stealLines } from "./steal-helpers.js";

const BANDWIDTH = 100e6;
/** Dask's config for the table: every prefix "0".."9" is estimated at 1 s. */
const DURATIONS = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [String(i), 1]));

/**
 * Dask's `assert_balanced` setup: per worker, per entry t, a task keyed `<int(t)>-<i>`
 * pinned there (allow_other_workers) with priority -i, depending on t * bandwidth bytes
 * scattered to that worker (no dependency for t = 0); tasks block, so each worker starts
 * its first task and holds the rest. Ten explicit passes follow, as Dask's `balance()`
 * loop, on top of the simulated scheduler's own on-demand pass after the graph arrives.
 */
function balanced(inp: number[][]) {
  const workers = inp.map((_, w) => ({ name: `w${w}` }));
  const data: SimDataSpec[] = [];
  const tasks: SimTaskSpec[] = [];
  let i = 0;
  inp.forEach((ts, w) => {
    for (const t of [...ts].sort((a, b) => b - a)) {
      const deps: string[] = [];
      if (t > 0) {
        data.push({ key: `dat-${i}`, nbytes: Math.round(t * BANDWIDTH), on: [`w${w}`] });
        deps.push(`dat-${i}`);
      }
      tasks.push({ key: `${Math.trunc(t)}-${i}`, deps, duration: 100, workers: [`w${w}`], allowOtherWorkers: true, priority: -i });
      i++;
    }
  });
  const actions: SimAction[] = Array.from({ length: 10 }, (_, k) => ({ at: 0.05 * (k + 1), do: "balance" }));
  const seen = new Map<number, number[][]>();
  const levels = (at: number) =>
    snapshot(at, (view) => view.scheduler.running.map((ws) => [...ws.processing].map((ts) => Number(ts.prefix.name)).sort((a, b) => b - a)), seen);
  const result = simulate(
    { workers, data, tasks, actions, config: { defaultTaskDurations: DURATIONS, bandwidth: BANDWIDTH } },
    { probes: [levels(0.04), levels(0.9)] },
  );
  return { result, afterFirstPass: seen.get(0.04)!, afterTenPasses: seen.get(0.9)! };
}

const desc = (rows: number[][]) => rows.map((r) => [...r]).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? 1 : -1));

// [Dask id, input, Dask's expected, natsched's exact per-worker result where it is a
// different arrangement of the same multiset (Dask compares them sorted), steals made].
const TABLE: [string, number[][], number[][], number[][] | null, number][] = [
  ["don't move unnecessarily", [[1], []], [[1], []], null, 0],
  ["balance", [[0, 0], []], [[0], [0]], null, 1],
  ["balance even if results in even", [[0.1, 0.1], []], [[0], [0]], null, 1],
  ["don't over balance", [[0, 0, 0], []], [[0, 0], [0]], null, 1],
  ["move from larger", [[0, 0], [0, 0, 0], []], [[0, 0], [0, 0], [0]], null, 1],
  ["move to smaller", [[0, 0, 0], [0], []], [[0, 0], [0], [0]], null, 1],
  ["choose easier first", [[0, 1], []], [[1], [0]], null, 1],
  ["spread evenly", [[0, 0, 0, 0], [], []], [[0, 0], [0], [0]], null, 2],
  ["move easier", [[1, 0, 2, 0], [], []], [[2, 1], [0], [0]], null, 2],
  ["be willing to move costly items", [[1, 1, 1], []], [[1, 1], [1]], null, 1],
  ["but don't move too many", [[1, 1, 1, 1], []], [[1, 1, 1], [1]], null, 1],
  ["no one clearly saturated", [[0, 0], [0, 0], [0, 0], []], [[0, 0], [0, 0], [0], [0]], [[0], [0, 0], [0, 0], [0]], 1],
  [
    "balance multiple saturated workers",
    [[4, 2, 2, 2, 2, 1, 1], [4, 2, 1, 1], [], [], []],
    [[4, 2, 2, 2], [4, 2, 1, 1], [2], [1], [1]],
    [[4, 2, 2, 2], [4, 2, 1, 1], [1], [1], [2]],
    3,
  ],
];

describe("test_balance", () => {
  it.each(TABLE)("%s", (_id, inp, expected, exact, nSteals) => {
    const { result, afterFirstPass, afterTenPasses } = balanced(inp);
    // Dask's check: the same multiset of per-worker loads.
    expect(desc(afterFirstPass)).toEqual(desc(expected));
    // Here exactly, worker by worker, and ten more passes change nothing.
    expect(afterFirstPass).toEqual(exact ?? expected);
    expect(afterTenPasses).toEqual(afterFirstPass);
    const early = result.steals.filter((s) => s.requested < 0.9);
    expect(early).toHaveLength(nSteals);
    expect(early.every((s) => s.outcome === "confirmed" && s.requested === 0)).toBe(true);
    for (const task of Object.values(result.tasks)) expect(task.executions).toBe(1);
  });

  it("the steals of 'balance multiple saturated workers', one by one: best levels first, newest first, thief where it starts soonest", () => {
    const { result } = balanced([[4, 2, 2, 2, 2, 1, 1], [4, 2, 1, 1], [], [], []]);
    expect(stealLines(result).slice(0, 3)).toEqual(["1-6: w0 -> w2 (L6) confirmed", "1-5: w0 -> w3 (L6) confirmed", "2-4: w0 -> w4 (L7) confirmed"]);
  });
});

/**
 * Dask's `_run_balance_test` family: dependencies of `multiplier` seconds of transfer
 * scattered (with replicas) to workers, tasks `<deps>-<i>` pinned loosely, blocked, then
 * balancing passes until none is in flight. The prefixes are estimated at 1 s (configured
 * per prefix; Dask sets unknown-task-duration to 1 s). Dask's test balances at once, before
 * any heartbeat reports the blocked tasks running long; `heartbeats: false` spaces the
 * workers' heartbeats (worker-metrics) out of the probed window to do the same, `true`
 * keeps the default 0.5 s, so that long runs raise the estimates as they would in Dask.
 */
function balanceTest(dependencies: Record<string, number>, dependencyPlacement: string[][], taskPlacement: string[][][], heartbeats = false) {
  const workers = taskPlacement.map((_, w) => ({ name: `w${w}` }));
  const data = Object.entries(dependencies).map(([key, multiplier]) => ({
    key,
    nbytes: multiplier * BANDWIDTH,
    on: dependencyPlacement.flatMap((keys, w) => (keys.includes(key) ? [`w${w}`] : [])),
  }));
  const tasks: SimTaskSpec[] = [];
  const prefixes = new Set<string>();
  taskPlacement.forEach((placed, w) => {
    for (const deps of placed) {
      const prefix = [...deps].sort().join("");
      prefixes.add(prefix);
      tasks.push({ key: `${prefix}-${tasks.length}`, deps, duration: 100, workers: [`w${w}`], allowOtherWorkers: true, priority: -tasks.length });
    }
  });
  const counts = new Map<number, number[]>();
  const count = (at: number) => snapshot(at, (view) => view.scheduler.running.map((ws) => ws.processing.size), counts);
  const actions: SimAction[] = Array.from({ length: 20 }, (_, k) => ({ at: 0.04 * (k + 1), do: "balance" }));
  const result = simulate(
    {
      workers,
      data,
      tasks,
      actions,
      config: { defaultTaskDurations: Object.fromEntries([...prefixes].map((p) => [p, 1])), bandwidth: BANDWIDTH, ...(heartbeats ? {} : { heartbeatInterval: 60 }) },
    },
    { probes: [count(0.9), count(5)] },
  );
  return { result, afterPasses: counts.get(0.9)!, later: counts.get(5)! };
}

describe("Dask's _run_balance_test cases", () => {
  it.each([
    ["test_balance_willing_to_move_costly_items", { a: 1, b: 1, c: 1 }, [["a", "b", "c"], []], [[["a"], ["b"], ["c"]], []], [2, 1]],
    ["test_balance_but_dont_move_too_many", { a: 1, b: 1, c: 1, d: 1 }, [["a", "b", "c", "d"], []], [[["a"], ["b"], ["c"], ["d"]], []], [3, 1]],
    ["test_balance_even_with_replica", { a: 1 }, [["a"], ["a"]], [[["a"], ["a"]], []], [1, 1]],
    ["test_balance_to_replica", { a: 1 }, [["a"], ["a"], []], [[["a"], ["a"], ["a"]], [], []], [2, 1, 0]],
    ["test_balance_to_larger_dependency", { a: 2, b: 1 }, [["a", "b"], ["a"], ["b"]], [[["a", "b"], ["a", "b"], ["a", "b"]], [], []], [2, 1, 0]],
  ] as const)("%s: %j", (_name, deps, depPlacement, taskPlacement, expected) => {
    const { result, afterPasses, later } = balanceTest(deps, depPlacement as unknown as string[][], taskPlacement as unknown as string[][][]);
    expect(afterPasses).toEqual(expected);
    expect(later).toEqual(expected);
    // Within the probed window (the heartbeats, spaced out to 60 s, change the estimates later).
    expect(result.steals.filter((st) => st.requested < 5).map((st) => st.outcome)).toEqual(["confirmed"]);
  });

  it("test_balance_to_replica: the task goes to the worker holding a replica of its dependency, nothing is moved", () => {
    const { result } = balanceTest({ a: 1 }, [["a"], ["a"], []], [[["a"], ["a"], ["a"]], [], []]);
    expect(stealLines(result).slice(0, 1)).toEqual(["a-2: w0 -> w1 (L6) confirmed"]);
    expect(result.steals.filter((st) => st.requested < 5)).toHaveLength(1);
    expect(result.transfers.filter((tr) => tr.start < 5)).toEqual([]);
  });

  it("test_balance_move_to_busier_with_dependency: [4, 2, 1] after the first passes, [3, 2, 2] once w2 holds a (Dask: [3, 3, 1])", () => {
    const { result, afterPasses, later } = balanceTest({ a: 2, b: 1 }, [["a"], ["a", "b"], []], [[["a"], ["a"], ["a"], ["a"], ["a"], ["a"]], [["b"]], []]);
    expect(afterPasses).toEqual([4, 2, 1]);
    expect(later).toEqual([3, 2, 2]);
    expect(stealLines(result).slice(0, 3)).toEqual(["a-5: w0 -> w1 (L7) confirmed", "a-4: w0 -> w2 (L7) confirmed", "a-3: w0 -> w2 (L7) confirmed"]);
    // The third steal waits for a to reach w2 (2 s of transfer): only then is w2 idle again.
    expect(result.steals[2]!.requested).toBeGreaterThan(2);
  });

  it("test_balance_when_moving_dependency: [6, 1], then [5, 2] once w1 holds a (Dask: [4, 3])", () => {
    const { result, afterPasses, later } = balanceTest({ a: 1 }, [["a"], []], [[["a"], ["a"], ["a"], ["a"], ["a"], ["a"], ["a"]], []]);
    expect(afterPasses).toEqual([6, 1]);
    expect(later).toEqual([5, 2]);
    expect(result.steals[1]!.requested).toBeGreaterThan(1);
  });

  it("test_balance_when_moving_dependency with heartbeats: the tasks end split as in Dask, [4, 3]", () => {
    // The blocked tasks run long; the heartbeats report it, the prefix's estimate grows to
    // twice the longest run, and one more steal pays.
    const { result } = balanceTest({ a: 1 }, [["a"], []], [[["a"], ["a"], ["a"], ["a"], ["a"], ["a"], ["a"]], []], true);
    expect(Object.values(ranPerWorker(result)).sort()).toEqual([3, 4]);
    expect(result.steals.every((st) => st.outcome === "confirmed")).toBe(true);
  });
});

function ranPerWorker(result: { tasks: Record<string, { worker: string }> }): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of Object.values(result.tasks)) out[t.worker] = (out[t.worker] ?? 0) + 1;
  return out;
}
