/**
 * The per-task measures `dask.order` steers by (`ndependencies` and `graph_metrics` in
 * dask 2022.12), computed in two linear passes over an IndexedGraph.
 *
 * "Total" counts follow Dask: a task's total is 1 plus the sum of its neighbours'
 * totals, so shared subgraphs count once per path. On wide, deep lattices that grows
 * exponentially; Python has big ints, here the sums saturate at 2^53 - 1 instead.
 *
 * A task on a cycle is never reached; `reached` below the task count means a cycle.
 */
import type { IndexedGraph } from "./indexed-graph.js";

const SATURATED = Number.MAX_SAFE_INTEGER;

export interface DependencyTotals {
  /** Number of direct dependencies of each task. */
  readonly numDependencies: Int32Array;
  /** 1 + the totals of the task's dependencies (1 for a task without dependencies). */
  readonly totalDependencies: Float64Array;
  readonly reached: number;
}

/** Dask's `ndependencies`: walks up from the tasks without dependencies. */
export function dependencyTotals(graph: IndexedGraph): DependencyTotals {
  const { dependencyStart, dependencies, dependentStart, dependents } = graph;
  const n = graph.keys.length;
  const numDependencies = new Int32Array(n);
  const waitingOn = new Int32Array(n);
  const totalDependencies = new Float64Array(n);
  const ready: number[] = [];
  for (let x = 0; x < n; x++) {
    numDependencies[x] = dependencyStart[x + 1]! - dependencyStart[x]!;
    waitingOn[x] = numDependencies[x]!;
    if (waitingOn[x] === 0) ready.push(x);
  }
  let reached = 0;
  while (ready.length > 0) {
    const x = ready.pop()!;
    reached++;
    let total = 1;
    for (let e = dependencyStart[x]!; e < dependencyStart[x + 1]!; e++) {
      total = Math.min(total + totalDependencies[dependencies[e]!]!, SATURATED);
    }
    totalDependencies[x] = total;
    for (let e = dependentStart[x]!; e < dependentStart[x + 1]!; e++) {
      const parent = dependents[e]!;
      if (--waitingOn[parent]! === 0) ready.push(parent);
    }
  }
  return { numDependencies, totalDependencies, reached };
}

export interface GraphMetrics {
  /** 1 + the totals of the task's dependents (1 for a task nothing depends on). */
  readonly totalDependents: Float64Array;
  /** Smallest / largest `totalDependencies` of the final tasks this task leads to. */
  readonly minDependencies: Float64Array;
  readonly maxDependencies: Float64Array;
  /** Shortest / longest path, in edges, from this task to a final task. */
  readonly minHeight: Int32Array;
  readonly maxHeight: Int32Array;
  readonly reached: number;
}

/** Dask's `graph_metrics`: walks down from the tasks nothing depends on. */
export function graphMetrics(graph: IndexedGraph, totalDependencies: Float64Array): GraphMetrics {
  const { dependencyStart, dependencies, dependentStart, dependents } = graph;
  const n = graph.keys.length;
  const totalDependents = new Float64Array(n);
  const minDependencies = new Float64Array(n);
  const maxDependencies = new Float64Array(n);
  const minHeight = new Int32Array(n);
  const maxHeight = new Int32Array(n);
  const waitingOn = new Int32Array(n);
  const ready: number[] = [];
  for (let x = 0; x < n; x++) {
    waitingOn[x] = dependentStart[x + 1]! - dependentStart[x]!;
    if (waitingOn[x] === 0) ready.push(x);
  }
  let reached = 0;
  while (ready.length > 0) {
    const x = ready.pop()!;
    reached++;
    const first = dependentStart[x]!;
    const end = dependentStart[x + 1]!;
    if (first === end) {
      totalDependents[x] = 1;
      minDependencies[x] = maxDependencies[x] = totalDependencies[x]!;
    } else {
      let total = 1;
      let minDeps = Infinity;
      let maxDeps = -Infinity;
      let minH = Infinity;
      let maxH = -Infinity;
      for (let e = first; e < end; e++) {
        const parent = dependents[e]!;
        total = Math.min(total + totalDependents[parent]!, SATURATED);
        minDeps = Math.min(minDeps, minDependencies[parent]!);
        maxDeps = Math.max(maxDeps, maxDependencies[parent]!);
        minH = Math.min(minH, minHeight[parent]!);
        maxH = Math.max(maxH, maxHeight[parent]!);
      }
      totalDependents[x] = total;
      minDependencies[x] = minDeps;
      maxDependencies[x] = maxDeps;
      minHeight[x] = minH + 1;
      maxHeight[x] = maxH + 1;
    }
    for (let e = dependencyStart[x]!; e < dependencyStart[x + 1]!; e++) {
      const child = dependencies[e]!;
      if (--waitingOn[child]! === 0) ready.push(child);
    }
  }
  return { totalDependents, minDependencies, maxDependencies, minHeight, maxHeight, reached };
}
