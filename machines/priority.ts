/**
 * Dask's task priority: (-user priority, generation, graph order), compared
 * lexicographically, smaller first. The generation counts submissions, so earlier
 * computations run first (coarse FIFO); the graph order makes each graph depth-first.
 */
export type Priority = readonly [number, number, number];

export function priorityLess(a: Priority, b: Priority): boolean {
  if (a[0] !== b[0]) return a[0] < b[0];
  if (a[1] !== b[1]) return a[1] < b[1];
  return a[2] < b[2];
}
