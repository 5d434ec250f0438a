/**
 * Checks a submitted graph before the scheduler accepts it. O(V + E), no recursion.
 *
 * Throws GraphError for an empty or non-string key and for a task listing itself as a
 * dependency, UnknownDependencyError for a dependency that is neither in the graph nor
 * `known` (already on the scheduler), and CycleError with the cycle's path. Problems
 * are reported in the graph's iteration order; cycles only once the rest is sound.
 */
import { CycleError, GraphError, UnknownDependencyError } from "../errors.js";
import { findCycle } from "./find-cycle.js";
import { indexGraph } from "./indexed-graph.js";

function checkKey(key: unknown, what: string, owner?: string): void {
  if (typeof key === "string" && key !== "") return;
  const where = owner === undefined ? "" : ` of task ${owner}`;
  const keys = owner === undefined ? [] : [owner];
  throw new GraphError(`${what}${where} must be a non-empty string, got ${JSON.stringify(key) ?? String(key)}`, "GRAPH", keys);
}

export function validateGraph(
  tasks: ReadonlyMap<string, readonly string[]>,
  known: (key: string) => boolean,
): void {
  let internalEdges = 0;
  for (const [key, deps] of tasks) {
    checkKey(key, "task key");
    if (!Array.isArray(deps)) throw new GraphError(`dependencies of task ${key} must be an array`, "GRAPH", [key]);
    for (const dep of deps) {
      checkKey(dep, "dependency key", key);
      if (dep === key) throw new GraphError(`task ${key} depends on itself`, "GRAPH", [key]);
      if (tasks.has(dep)) internalEdges++;
      else if (!known(dep)) throw new UnknownDependencyError(key, dep);
    }
  }
  if (internalEdges === 0) return; // a cycle needs an edge between the graph's own tasks
  const cycle = findCycle(indexGraph(tasks));
  if (cycle !== undefined) throw new CycleError(cycle);
}
