/**
 * Dask's task priority: (-user priority, generation, graph order), compared
 * lexicographically, smaller first. The generation counts submissions, so earlier
 * computations run first (coarse FIFO); the graph order makes each graph depth-first.
 */
export type Priority = readonly [number, number, number];

/** Negative if `a` runs first, positive if `b` does, 0 if equal (a sort comparator). */
export function priorityCompare(a: Priority, b: Priority): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  if (a[1] !== b[1]) return a[1] < b[1] ? -1 : 1;
  return a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0;
}

export function priorityLess(a: Priority, b: Priority): boolean {
  return priorityCompare(a, b) < 0;
}

/** Anything with a priority (the scheduler's task records). */
export interface Prioritized {
  readonly priority: Priority;
}

function byPriority(a: Prioritized, b: Prioritized): number {
  return priorityCompare(a.priority, b.priority);
}

/**
 * Sorts by priority, in place, exactly as the stable `items.sort(byPriority)` would. Two
 * shortcuts for a submitted graph: items already in order (one pass says so), and items of
 * one user priority and generation whose graph orders are distinct integers filling a range
 * (a graph's own ordering), placed by their order in one pass instead of O(n log n)
 * comparisons.
 */
export function sortByPriority<T extends Prioritized>(items: T[]): void {
  const n = items.length;
  let sorted = true;
  for (let i = 1; i < n; i++) {
    if (priorityCompare(items[i - 1]!.priority, items[i]!.priority) > 0) {
      sorted = false;
      break;
    }
  }
  if (sorted) return;
  if (placeByGraphOrder(items)) return;
  items.sort(byPriority);
}

function placeByGraphOrder<T extends Prioritized>(items: T[]): boolean {
  const n = items.length;
  const [p0, p1] = items[0]!.priority;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const p = items[i]!.priority;
    if (p[0] !== p0 || p[1] !== p1 || !Number.isInteger(p[2])) return false;
    if (p[2] < min) min = p[2];
    if (p[2] > max) max = p[2];
  }
  if (max - min + 1 !== n) return false;
  const placed = new Array<T | undefined>(n).fill(undefined);
  for (let i = 0; i < n; i++) {
    const at = items[i]!.priority[2] - min;
    if (placed[at] !== undefined) return false; // a repeated order: leave it to the stable sort
    placed[at] = items[i]!;
  }
  for (let i = 0; i < n; i++) items[i] = placed[i]!;
  return true;
}
