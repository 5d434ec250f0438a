/**
 * The four sort keys of `dask.order.order` (dask 2022.12) as comparators over task
 * indices: negative when `a` sorts first. Each compares Dask's key tuple field by field
 * and ends with the task key itself (Dask's `StrComparable`), so no two tasks tie.
 */
import type { IndexedGraph } from "./indexed-graph.js";
import { IndexedKeyComparator } from "./indexed-key-comparator.js";
import type { GraphMetrics } from "./order-metrics.js";

export type IndexComparator = (a: number, b: number) => number;

export interface OrderKeys {
  /** Which task without dependencies to start a connected part of the graph from. */
  readonly initialStack: IndexComparator;
  /** Which pending dependency to descend into first (Dask sorts these descending and pops). */
  readonly dependencies: IndexComparator;
  /** Which ready dependent to continue with (memory first: frees the most, adds the least). */
  readonly dependents: IndexComparator;
  /** In which order to finish final tasks that just became ready. */
  readonly finishNow: IndexComparator;
}

export function orderKeys(
  graph: IndexedGraph,
  metrics: GraphMetrics,
  totalDependencies: Float64Array,
  numDependencies: Int32Array,
  /** Dependencies not yet ordered; changes as the traversal goes. */
  numNeeded: Int32Array,
): OrderKeys {
  const { dependentStart } = graph;
  const { totalDependents, minDependencies, maxDependencies, minHeight, maxHeight } = metrics;
  const byKey = new IndexedKeyComparator(graph.keys);
  const numDependents = (x: number): number => dependentStart[x + 1]! - dependentStart[x]!;
  // Positive when a task holds more in memory than it frees once run.
  const memoryCost = (x: number): number => numDependents(x) - numDependencies[x]! + numNeeded[x]!;

  const initialStack: IndexComparator = (a, b) =>
    // At a high level work towards a large goal, preferring tall and narrow ...
    maxDependencies[b]! - maxDependencies[a]! ||
    numDependents(a) - maxHeight[a]! - (numDependents(b) - maxHeight[b]!) ||
    // ... tactically finish small connected jobs first ...
    minDependencies[a]! - minDependencies[b]! ||
    numDependents(a) - minHeight[a]! - (numDependents(b) - minHeight[b]!) ||
    // ... take a big step, stay memory efficient.
    totalDependents[b]! - totalDependents[a]! ||
    numDependents(a) - numDependents(b) ||
    byKey.compare(a, b);

  const dependencies: IndexComparator = (a, b) =>
    maxDependencies[b]! - maxDependencies[a]! ||
    // Going down along dependencies, so short and narrow rather than tall and narrow.
    numDependents(a) + maxHeight[a]! - (numDependents(b) + maxHeight[b]!) ||
    minDependencies[a]! - minDependencies[b]! ||
    numDependents(a) + minHeight[a]! - (numDependents(b) + minHeight[b]!) ||
    totalDependencies[b]! - totalDependencies[a]! ||
    memoryCost(a) - memoryCost(b) ||
    numDependents(a) - numDependents(b) ||
    totalDependents[a]! - totalDependents[b]! ||
    byKey.compare(a, b);

  const dependents: IndexComparator = (a, b) =>
    memoryCost(a) - memoryCost(b) || minHeight[b]! - minHeight[a]! || byKey.compare(a, b);

  const finishNow: IndexComparator = (a, b) => numDependencies[b]! - numDependencies[a]! || byKey.compare(a, b);

  return { initialStack, dependencies, dependents, finishNow };
}
