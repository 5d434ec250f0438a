/**
 * Co-assignment of neighbouring root tasks when queuing is off, ported from
 * dask/distributed's test_decide_worker_coschedule_order_neighbors
 * (distributed/tests/test_scheduler.py; see docs/dask-tests-ported.md).
 */
import { describe, expect, it } from "vitest";
import type { SimResult, SimTaskSpec, SimWorkerSpec } from "../sim.js";
import { mean, median, simulateDask as simulate } from "./sim-helpers.js";

const RANDOM = "random-7f3c9ab1e2d4465f8a0b1c2d3e4f5a6b";
const SUM = "sum-0a1b2c3d4e5f60718293a4b5c6d7e8f9";
const AGGREGATE = "sum-aggregate-0a1b2c3d4e5f60718293a4b5c6d7e8f9";
const N = 10;

const randomKey = (i: number, j: number) => `('${RANDOM}', ${i}, ${j})`;

/**
 * A 10 x 10 chunked random array whose chunks share `ndeps` trivial dependencies, and
 * its sum along axis 1 (`x.sum(axis=1, split_every=20)`), persisted together.
 */
function graph(ndeps: number): SimTaskSpec[] {
  const objects = Array.from({ length: ndeps }, (_, k) => `object-${k}`);
  const tasks: SimTaskSpec[] = objects.map((key) => ({ key, duration: 0.001, nbytes: 16 }));
  for (let i = 0; i < N; i++) {
    for (let j = 0; j < N; j++) {
      tasks.push({ key: randomKey(i, j), deps: objects, duration: 0.1, nbytes: 800 });
      tasks.push({ key: `('${SUM}', ${i}, ${j})`, deps: [randomKey(i, j)], duration: 0.01, nbytes: 80 });
    }
    const partials = Array.from({ length: N }, (_, j) => `('${SUM}', ${i}, ${j})`);
    tasks.push({ key: `('${AGGREGATE}', ${i})`, deps: partials, duration: 0.01, nbytes: 80 });
  }
  return tasks;
}

function rowFractions(result: SimResult, workers: SimWorkerSpec[]) {
  const splits: string[] = [];
  const primary: number[] = [];
  const secondary: number[] = [];
  const holders: number[] = [];
  for (let i = 0; i < N; i++) {
    const keys = Array.from({ length: N }, (_, j) => randomKey(i, j));
    const fractions = workers.map((w) => keys.filter((k) => result.tasks[k]!.worker === w.name).length / N).sort((a, b) => a - b);
    primary.push(fractions.at(-1)!);
    secondary.push(fractions.at(-2)!);
    holders.push(fractions.filter((f) => f > 0).length);
    splits.push(fractions.filter((f) => f > 0).reverse().map((f) => Math.round(f * N)).join("/"));
  }
  return { primary, secondary, holders, splits };
}

describe.each([0, 1, 4])("test_decide_worker_coschedule_order_neighbors (ndeps=%i)", (ndeps) => {
  // Exact on the virtual clock: how each row's ten chunks split across workers.
  it.each([
    ["5 x 1 thread", [1, 1, 1, 1, 1], Array<string>(10).fill("10")],
    ["3, 2 and 1 threads", [3, 2, 1], [...Array<string>(8).fill("10"), "7/3", "10"]],
  ])("%s: each chunk-row of the array stays on one worker", (_label, nthreads, exactRows) => {
    const workers = nthreads.map((n, i) => ({ name: `w${i}`, nthreads: n }));
    const result = simulate({ config: { workerSaturation: Infinity, workStealing: false }, workers, tasks: graph(ndeps) });
    expect(Object.values(result.tasks).every((t) => t.executions === 1)).toBe(true);

    const { primary, secondary, holders, splits } = rowFractions(result, workers);
    expect(splits).toEqual(exactRows);
    for (const count of holders) expect(count).toBeLessThanOrEqual(2);
    expect(mean(primary)).toBeGreaterThanOrEqual(0.9);
    expect(median(primary)).toBe(1);
    expect(mean(secondary)).toBeLessThanOrEqual(0.1);
    expect(median(secondary)).toBe(0);

    // Root-ish tasks are never moved; only their trivial dependencies and a few partial sums are.
    expect(result.transfers.filter((t) => t.key.includes(RANDOM))).toEqual([]);
    const batches = new Set(result.transfers.filter((t) => !t.key.startsWith("object-")).map((t) => `${t.from}>${t.to}@${t.start}`));
    expect(batches.size).toBeLessThanOrEqual(3);
  });
});
