/**
 * Static task priorities: a port of `dask.order.order` as of dask 2022.12.
 *
 * The result numbers every task in the order a single worker would best run them:
 * 0 first. The traversal works towards small goals with big steps: it starts from the
 * task whose connected part of the graph is the largest and tallest, descends depth
 * first along dependencies (preferring the work that unlocks the most), and after each
 * task climbs to the dependent that frees the most memory, finishing a branch before
 * starting another. Keys break remaining ties as Dask's tuple keys would
 * (`key-order.ts`). The traversal itself is in `order-traversal.ts`.
 *
 * `deps` maps each task to its dependencies; dependencies that are not keys of the
 * map are taken as already computed. Throws CycleError if the graph has a cycle.
 * O((V + E) log V) for the sorting of siblings, no recursion. Where Dask's result
 * depends on Python's string hashing (very large sibling sets), ours is sorted, so the
 * priorities depend only on the graph and its keys, never on the order of the map.
 */
import { CycleError } from "../errors.js";
import { findCycle } from "./find-cycle.js";
import { IndexedKeyComparator } from "./indexed-key-comparator.js";
import { type IndexedGraph, indexGraph } from "./indexed-graph.js";
import { dependencyTotals, graphMetrics } from "./order-metrics.js";
import { orderKeys } from "./order-keys.js";
import { OrderTraversal } from "./order-traversal.js";

export function order(deps: ReadonlyMap<string, readonly string[]>): Map<string, number> {
  const graph = indexGraph(deps);
  const priorities = orderIndexed(graph);
  // Overwriting the index map's values is cheaper than filling a new map.
  const result = graph.indexOf;
  for (let i = 0; i < graph.keys.length; i++) result.set(graph.keys[i]!, priorities[i]!);
  return result;
}

/** Priorities by task index. */
export function orderIndexed(graph: IndexedGraph): Int32Array {
  return graph.dependencies.length === 0 ? keyOrder(graph) : traverse(graph);
}

/**
 * Tasks none of which depends on another (a `map`): the traversal would start a search at
 * each in turn, and all tie on every metric, so Dask's order is the keys' order. Sorting
 * them costs a fraction of what the traversal does.
 */
function keyOrder(graph: IndexedGraph): Int32Array {
  const n = graph.keys.length;
  const byKey = new IndexedKeyComparator(graph.keys);
  const sorted = Array.from({ length: n }, (_, i) => i).sort((a, b) => byKey.compare(a, b));
  const priority = new Int32Array(n);
  for (let rank = 0; rank < n; rank++) priority[sorted[rank]!] = rank;
  return priority;
}

/** Priorities by task index, by Dask's traversal (any graph; `orderIndexed` takes a shortcut where it may). */
export function traverse(graph: IndexedGraph): Int32Array {
  const n = graph.keys.length;
  const { numDependencies, totalDependencies, reached } = dependencyTotals(graph);
  const metrics = graphMetrics(graph, totalDependencies);
  if (reached < n || metrics.reached < n) throw new CycleError(findCycle(graph) ?? []);
  if (n === 0) return new Int32Array(0);

  // How good a task is as the next goal: lower is better (Dask's `partition_keys`).
  const partitionKey = new Float64Array(n);
  for (let x = 0; x < n; x++) {
    partitionKey[x] =
      (metrics.minDependencies[x]! - totalDependencies[x]! + 1) * (metrics.totalDependents[x]! - metrics.minHeight[x]!);
  }
  const numNeeded = numDependencies.slice();
  const keys = orderKeys(graph, metrics, totalDependencies, numDependencies, numNeeded);
  return new OrderTraversal(graph, metrics, partitionKey, numNeeded, keys).run();
}
