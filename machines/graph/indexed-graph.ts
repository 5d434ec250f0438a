/**
 * A task graph as integer indices in compressed adjacency arrays, so the graph
 * algorithms run on typed arrays instead of string-keyed maps.
 *
 * Node `i` is the i-th key of the input map. Its dependencies are
 * `dependencies[dependencyStart[i] .. dependencyStart[i + 1])`, without duplicates, in
 * the order first listed; its dependents are `dependents[dependentStart[i] ..
 * dependentStart[i + 1])`, in increasing index. A dependency that is not a key of the
 * map is external (e.g. already on the scheduler) and left out.
 */
export interface IndexedGraph {
  readonly keys: readonly string[];
  /** Key to index; a fresh map, the caller may take it over. */
  readonly indexOf: Map<string, number>;
  readonly dependencyStart: Int32Array;
  readonly dependencies: Int32Array;
  readonly dependentStart: Int32Array;
  readonly dependents: Int32Array;
}

export function indexGraph(
  tasks: ReadonlyMap<string, readonly string[]>,
  onExternal?: (key: string, dependency: string) => void,
): IndexedGraph {
  const keys = [...tasks.keys()];
  const n = keys.length;
  const indexOf = new Map<string, number>();
  for (let i = 0; i < n; i++) indexOf.set(keys[i]!, i);

  let listed = 0;
  for (const deps of tasks.values()) listed += deps.length;
  const dependencyStart = new Int32Array(n + 1);
  const dependencyBuffer = new Int32Array(listed);
  const dependentCount = new Int32Array(n);
  // lastListedBy[j] === i once node i has listed j: drops repeated dependencies.
  const lastListedBy = new Int32Array(n).fill(-1);
  let edges = 0;
  let i = 0;
  for (const deps of tasks.values()) {
    dependencyStart[i] = edges;
    for (const dep of deps) {
      const j = indexOf.get(dep);
      if (j === undefined) {
        onExternal?.(keys[i]!, dep);
        continue;
      }
      if (lastListedBy[j] === i) continue;
      lastListedBy[j] = i;
      dependencyBuffer[edges++] = j;
      dependentCount[j]!++;
    }
    i++;
  }
  dependencyStart[n] = edges;
  const dependencies = dependencyBuffer.slice(0, edges);

  const dependentStart = new Int32Array(n + 1);
  for (let j = 0; j < n; j++) dependentStart[j + 1] = dependentStart[j]! + dependentCount[j]!;
  const dependents = new Int32Array(edges);
  const fill = dependentStart.slice(0, n);
  for (let node = 0; node < n; node++) {
    for (let e = dependencyStart[node]!; e < dependencyStart[node + 1]!; e++) {
      const dep = dependencies[e]!;
      dependents[fill[dep]!++] = node;
    }
  }
  return { keys, indexOf, dependencyStart, dependencies, dependentStart, dependents };
}
