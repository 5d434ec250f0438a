/**
 * Finds a dependency cycle with an iterative depth-first search, O(V + E), safe for
 * chains of any length. The cycle reads along dependencies and ends where it starts:
 * `["a", "b", "a"]` means a depends on b, which depends on a.
 */
import type { IndexedGraph } from "./indexed-graph.js";

const UNVISITED = 0;
const ON_PATH = 1;
const DONE = 2;

export function findCycle(graph: IndexedGraph): string[] | undefined {
  const { keys, dependencyStart, dependencies } = graph;
  const n = keys.length;
  const state = new Uint8Array(n);
  // The current path: path[0..depth) are nodes, nextEdge[d] the next edge to try at depth d.
  const path = new Int32Array(n);
  const nextEdge = new Int32Array(n);
  const depthOf = new Int32Array(n);

  for (let start = 0; start < n; start++) {
    if (state[start] !== UNVISITED) continue;
    path[0] = start;
    nextEdge[0] = dependencyStart[start]!;
    depthOf[start] = 0;
    state[start] = ON_PATH;
    let depth = 1;
    while (depth > 0) {
      const node = path[depth - 1]!;
      const edge = nextEdge[depth - 1]!;
      if (edge === dependencyStart[node + 1]) {
        state[node] = DONE;
        depth--;
        continue;
      }
      nextEdge[depth - 1] = edge + 1;
      const dep = dependencies[edge]!;
      if (state[dep] === ON_PATH) {
        const cycle: string[] = [];
        for (let d = depthOf[dep]!; d < depth; d++) cycle.push(keys[path[d]!]!);
        cycle.push(keys[dep]!);
        return cycle;
      }
      if (state[dep] === DONE) continue;
      state[dep] = ON_PATH;
      depthOf[dep] = depth;
      path[depth] = dep;
      nextEdge[depth] = dependencyStart[dep]!;
      depth++;
    }
  }
  return undefined;
}
