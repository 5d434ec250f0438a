/**
 * The traversal of `dask.order.order` (dask 2022.12), over task indices.
 *
 * A depth-first search descends along dependencies from a start task (the inner stack)
 * and, after each task, continues with the dependent that best serves a small goal:
 * lowest partition key, the one freeing the most memory. Better goals found on the way
 * shelve the current search (inner stacks); other dependents wait, grouped by
 * partition key, in `nextNodes` (better than the task that revealed them) or
 * `laterNodes`. "Singles" are ready dependents whose run may free their parent; they
 * are run as a detour before the search goes deeper (`laterSingles` once no search is
 * pending). Names and structure follow Dask's code so the two can be read side by side.
 *
 * Where Dask leaves collections unsorted to save time (over 1000 pending dependencies,
 * 100 siblings, 10000 start tasks) their order follows Python's per-process string
 * hashing; here they are always sorted by the keys Dask uses for small ones.
 */
import type { IndexedGraph } from "./indexed-graph.js";
import type { GraphMetrics } from "./order-metrics.js";
import type { IndexComparator, OrderKeys } from "./order-keys.js";

function descending(compare: IndexComparator): IndexComparator {
  return (a, b) => compare(b, a);
}

function minimum(items: readonly number[], compare: IndexComparator): number {
  let best = items[0]!;
  for (let i = 1; i < items.length; i++) if (compare(items[i]!, best) < 0) best = items[i]!;
  return best;
}

/** Groups of tasks by partition key; within a key, in the order they were found. */
type Pools = Map<number, number[][]>;

function addToPools(pools: Pools, key: number, items: number[]): void {
  const lists = pools.get(key);
  if (lists === undefined) pools.set(key, [items]);
  else lists.push(items);
}

export class OrderTraversal {
  private readonly n: number;
  readonly priority: Int32Array;
  private nextPriority = 0;
  /** Dependents not yet ordered, per task (Dask's `set_difference(dependents[x], result)`). */
  private readonly pendingDependents: Int32Array;
  /** On some inner stack already, so not to be queued again as a dependent. */
  private readonly seen: Uint8Array;
  /** Dask drops the skipped final task from the dependents of tasks right below it. */
  private readonly finalTaskDetached: Uint8Array;
  private readonly finalTask: number;
  private readonly dependenciesFirstLast: IndexComparator;
  private readonly dependentsFirstLast: IndexComparator;

  // The current task (Dask's `item`); it outlives its iteration, as in Dask.
  private item = -1;
  private innerStack: number[];
  private readonly innerStacks: number[][] = [];
  private nextNodes: Pools = new Map();
  private laterNodes: Pools = new Map();
  private readonly outerStack: number[][] = [];
  private readonly singles = new Map<number, number>(); // ready dependent -> the task it may free
  private laterSingles: number[] = [];
  private readonly startTasks: number[] = [];
  private sortedStartTasks: number[] | undefined;
  // For unions without duplicates: task x is in the current union when unionMark[x] === unionStamp.
  private readonly unionMark: Int32Array;
  private unionStamp = 0;

  constructor(
    private readonly graph: IndexedGraph,
    private readonly metrics: GraphMetrics,
    private readonly partitionKey: Float64Array,
    /** Dependencies not yet ordered, per task; shared with `keys`, which reads it. */
    private readonly numNeeded: Int32Array,
    private readonly keys: OrderKeys,
  ) {
    const n = graph.keys.length;
    const { dependencyStart, dependentStart } = graph;
    this.n = n;
    this.priority = new Int32Array(n).fill(-1);
    this.pendingDependents = new Int32Array(n);
    this.seen = new Uint8Array(n);
    this.finalTaskDetached = new Uint8Array(n);
    this.unionMark = new Int32Array(n);
    this.dependenciesFirstLast = descending(keys.dependencies);
    this.dependentsFirstLast = descending(keys.dependents);

    let finalCount = 0;
    let lastFinal = -1;
    for (let x = 0; x < n; x++) {
      this.pendingDependents[x] = dependentStart[x + 1]! - dependentStart[x]!;
      if (this.pendingDependents[x] === 0) {
        finalCount++;
        lastFinal = x;
      }
      if (dependencyStart[x] === dependencyStart[x + 1]) this.startTasks.push(x);
    }
    // A single final task that depends on everything (say a `store`) would pull the
    // whole graph into one search and fall back to key order among its inputs
    // (dask#6745); Dask skips it and lets it finish when its last input does.
    this.finalTask = finalCount === 1 && n > 1 ? lastFinal : -1;
    if (this.finalTask >= 0) this.seen[this.finalTask] = 1;
    this.innerStack = [minimum(this.startTasks, keys.initialStack)];
  }

  run(): Int32Array {
    for (;;) {
      this.search();
      if (this.nextPriority === this.n) return this.priority;

      if (this.nextNodes.size > 0) {
        // Lowest keys end up on top of the outer stack; within a key, first found on top.
        for (const key of [...this.nextNodes.keys()].sort((a, b) => b - a)) {
          const lists = this.nextNodes.get(key)!;
          for (let i = lists.length - 1; i >= 0; i--) this.outerStack.push(lists[i]!);
        }
        this.nextNodes = new Map();
      }
      while (this.outerStack.length > 0) {
        const deps = this.outerStack.pop()!.filter((x) => !this.isDone(x));
        if (deps.length === 0) continue;
        if (deps.length > 1) deps.sort(this.dependentsFirstLast);
        this.pushEachAsStack(deps);
        break;
      }
      if (this.innerStacks.length > 0) continue;
      if (this.laterNodes.size > 0) {
        // "Later" has come: the deferred dependents become the next ones.
        [this.nextNodes, this.laterNodes] = [this.laterNodes, this.nextNodes];
        continue;
      }
      // This connected part of the graph is done; start the next one.
      this.item = this.nextStartTask();
      this.innerStack.push(this.item);
    }
  }

  /** Dask's inner `while True`: runs until no search, single or later single is left. */
  private search(): void {
    for (;;) {
      let deps: number[] = [];
      let continueSearch = false; // Dask's `add_to_inner_stack`
      let processSingles: boolean;
      if (this.innerStack.length > 0) {
        const item = (this.item = this.innerStack.pop()!);
        if (this.isDone(item)) continue;
        if (this.numNeeded[item]! > 0) {
          if (item !== this.finalTask) {
            this.innerStack.push(item);
            this.pushPendingDependencies(item);
          }
          if (this.singles.size === 0) continue;
          processSingles = true;
        } else {
          const done = this.complete(item);
          if (done.rest.length === 0) continue;
          deps = done.rest;
          continueSearch = !done.finishedFinalTasks;
          processSingles = false;
        }
      } else if (this.innerStacks.length > 0) {
        this.innerStack = this.innerStacks.pop()!;
        continue;
      } else if (this.singles.size > 0) {
        processSingles = true;
      } else if (this.laterSingles.length > 0) {
        deps = this.runLaterSingles();
        if (deps.length === 0) continue;
        processSingles = true;
      } else {
        return;
      }

      if (processSingles && this.singles.size > 0) {
        deps = this.runSingles(this.innerStack.length > 0 || this.innerStacks.length > 0);
        if (deps.length === 0) continue;
        continueSearch = false;
      }
      this.placeDependents(deps, continueSearch, processSingles);
    }
  }

  private isDone(x: number): boolean {
    return this.priority[x]! >= 0;
  }

  private isFinal(x: number): boolean {
    return this.graph.dependentStart[x] === this.graph.dependentStart[x + 1];
  }

  private assign(task: number): void {
    this.priority[task] = this.nextPriority++;
    const { dependencyStart, dependencies } = this.graph;
    for (let e = dependencyStart[task]!; e < dependencyStart[task + 1]!; e++) this.pendingDependents[dependencies[e]!]!--;
  }

  /**
   * Orders `task` and any final task it completes, and counts it done for its other
   * dependents, which it returns (Dask's `result[item] = i` and what follows).
   */
  private complete(task: number): { rest: number[]; finishedFinalTasks: boolean } {
    this.assign(task);
    const { dependentStart, dependents } = this.graph;
    let rest: number[] = [];
    for (let e = dependentStart[task]!; e < dependentStart[task + 1]!; e++) rest.push(dependents[e]!);
    let finishedFinalTasks = false;
    if (this.metrics.minHeight[task] === 1) {
      // Leave no final task dangling that this one completes.
      const finishing = rest.filter((dep) => this.isFinal(dep) && this.numNeeded[dep] === 1);
      if (finishing.length > 0) {
        if (finishing.length > 1) finishing.sort(this.keys.finishNow);
        for (const dep of finishing) this.assign(dep);
        rest = rest.filter((dep) => !this.isDone(dep));
        finishedFinalTasks = true;
      } else if (this.finalTask >= 0) {
        this.numNeeded[this.finalTask]!--;
        rest = rest.filter((dep) => dep !== this.finalTask);
        this.finalTaskDetached[task] = 1;
      }
    }
    for (const dep of rest) this.numNeeded[dep]!--;
    return { rest, finishedFinalTasks };
  }

  /** Pushes the dependencies of `item` not yet ordered, the one to do first on top. */
  private pushPendingDependencies(item: number): void {
    const { dependencyStart, dependencies } = this.graph;
    const pending: number[] = [];
    for (let e = dependencyStart[item]!; e < dependencyStart[item + 1]!; e++) {
      if (!this.isDone(dependencies[e]!)) pending.push(dependencies[e]!);
    }
    if (pending.length > 1) pending.sort(this.dependenciesFirstLast);
    for (const dep of pending) {
      this.innerStack.push(dep);
      this.seen[dep] = 1;
    }
  }

  private pushEachAsStack(tasks: readonly number[]): void {
    for (const x of tasks) {
      this.innerStacks.push([x]);
      this.seen[x] = 1;
    }
  }

  /** Dependents of `parent` not yet ordered, as Dask counts them. */
  private dependentsLeft(parent: number): number {
    const detached = this.finalTaskDetached[parent] === 1 && !this.isDone(this.finalTask);
    return this.pendingDependents[parent]! - (detached ? 1 : 0);
  }

  private startUnion(): void {
    this.unionStamp++;
  }

  private addToUnion(union: number[], tasks: readonly number[]): void {
    for (const x of tasks) {
      if (this.unionMark[x] === this.unionStamp) continue;
      this.unionMark[x] = this.unionStamp;
      union.push(x);
    }
  }

  /** Runs every later single with the chain of ready single dependents behind it. */
  private runLaterSingles(): number[] {
    const deps: number[] = [];
    this.startUnion();
    for (let single of this.laterSingles) {
      if (this.isDone(single)) continue;
      for (;;) {
        const { rest } = this.complete(single);
        if (rest.length === 1 && this.numNeeded[rest[0]!] === 0) {
          single = rest[0]!;
          continue;
        }
        this.addToUnion(deps, rest);
        break;
      }
    }
    this.laterSingles = [];
    return deps.filter((x) => !this.isDone(x));
  }

  /**
   * Runs the singles that free their parent now (all of them when no search is pending;
   * the others become later singles), following chains of ready single dependents.
   */
  private runSingles(searchPending: boolean): number[] {
    const deps: number[] = [];
    this.startUnion();
    for (const [first, parent] of this.singles) {
      if (this.isDone(first)) continue;
      if (searchPending && this.dependentsLeft(parent) > 1) {
        this.laterSingles.push(first);
        continue;
      }
      let single = first;
      for (;;) {
        let { rest } = this.complete(single);
        if (rest.length === 0) break;
        let someSeen = false;
        if (searchPending) {
          const seenOnes = rest.filter((dep) => this.seen[dep] === 1);
          if (seenOnes.length === rest.length) {
            if (seenOnes.length === 1 && this.numNeeded[seenOnes[0]!] === 0) {
              single = seenOnes[0]!;
              continue;
            }
            break;
          }
          if (seenOnes.length > 0) {
            rest = rest.filter((dep) => this.seen[dep] === 0);
            someSeen = true;
          }
        }
        if (rest.length === 1 && this.numNeeded[rest[0]!] === 0) {
          if (!someSeen) {
            single = rest[0]!;
            continue;
          }
          this.laterSingles.push(rest[0]!);
          break;
        }
        this.addToUnion(deps, rest);
        break;
      }
    }
    this.singles.clear();
    return deps.filter((x) => !this.isDone(x));
  }

  /** Decides where the dependents `deps` of the current item go next. */
  private placeDependents(deps: number[], continueSearch: boolean, processSingles: boolean): void {
    let seenCount = 0;
    let someSeen = -1;
    for (const dep of deps) {
      if (this.seen[dep] === 0) continue;
      seenCount++;
      someSeen = dep;
    }
    if (seenCount > 0) {
      if (seenCount === deps.length) {
        if (seenCount === 1 && this.numNeeded[someSeen] === 0) this.singles.set(someSeen, this.item);
        return;
      }
      continueSearch = false;
      deps = deps.filter((dep) => this.seen[dep] === 0);
    }
    if (deps.length === 1) this.placeOne(deps[0]!, continueSearch);
    else if (deps.length === 2) this.placeTwo(deps[0]!, deps[1]!, continueSearch, processSingles);
    else this.placeMany(deps, continueSearch);
  }

  private switchTo(dep: number): void {
    this.innerStacks.push(this.innerStack);
    this.innerStack = [dep];
    this.seen[dep] = 1;
  }

  private placeOne(dep: number, continueSearch: boolean): void {
    const key = this.partitionKey[dep]!;
    if (this.innerStack.length === 0) {
      if (continueSearch) {
        this.innerStack = [dep];
        this.seen[dep] = 1;
        return;
      }
    } else if (key < this.partitionKey[this.innerStack[0]!]!) {
      // A better goal than the current search: shelve it and go for this one.
      this.switchTo(dep);
      return;
    }
    // Not taken now; if ready, run it soon anyway, as running it may free its parent.
    if (this.numNeeded[dep] === 0) this.singles.set(dep, this.item);
    else addToPools(key < this.partitionKey[this.item]! ? this.nextNodes : this.laterNodes, key, [dep]);
  }

  /** Two dependents: Dask special-cases them so that the second may become a single. */
  private placeTwo(first: number, second: number, continueSearch: boolean, processSingles: boolean): void {
    let dep = first;
    let dep2 = second;
    let key = this.partitionKey[dep]!;
    let key2 = this.partitionKey[dep2]!;
    if (key2 < key || (key === key2 && this.keys.dependents(dep2, dep) < 0)) {
      [dep, dep2] = [dep2, dep];
      [key, key2] = [key2, key];
    }
    const itemKey = this.partitionKey[this.item]!;
    const deferSecondIfReady = (): boolean => {
      if (this.numNeeded[dep2] !== 0) return false;
      if (processSingles) this.laterSingles.push(dep2);
      else this.singles.set(dep2, this.item);
      return true;
    };
    const deferBoth = (): void => {
      addToPools(key < itemKey ? this.nextNodes : this.laterNodes, key, [dep]);
      addToPools(key2 < itemKey ? this.nextNodes : this.laterNodes, key2, [dep2]);
    };

    if (this.innerStack.length > 0) {
      const currentGoalKey = this.partitionKey[this.innerStack[0]!]!;
      if (key2 < currentGoalKey) {
        this.innerStacks.push(this.innerStack, [dep2]);
        this.innerStack = [dep];
        this.seen[dep] = this.seen[dep2] = 1;
        deferSecondIfReady();
      } else if (key < currentGoalKey) {
        this.switchTo(dep);
        if (!deferSecondIfReady()) addToPools(key2 < itemKey ? this.nextNodes : this.laterNodes, key2, [dep2]);
      } else {
        deferBoth();
      }
      return;
    }
    if (!continueSearch) {
      deferBoth();
      return;
    }
    // Dask shelves the (empty) current stack here too; it counts as pending work.
    if (this.numNeeded[dep2] === 0) {
      this.switchTo(dep);
      this.singles.set(dep2, this.item);
    } else if (key === key2 && 5 * itemKey > 22 * key) {
      this.innerStacks.push(this.innerStack, [dep2]);
      this.innerStack = [dep];
      this.seen[dep] = this.seen[dep2] = 1;
    } else {
      this.switchTo(dep);
      addToPools(key2 < itemKey ? this.nextNodes : this.laterNodes, key2, [dep2]);
    }
  }

  /** Three or more dependents, grouped by partition key. */
  private placeMany(deps: readonly number[], continueSearch: boolean): void {
    const pools = new Map<number, number[]>();
    for (const dep of deps) {
      const key = this.partitionKey[dep]!;
      const pool = pools.get(key);
      if (pool === undefined) pools.set(key, [dep]);
      else pool.push(dep);
    }
    const itemKey = this.partitionKey[this.item]!;
    const deferPool = (key: number, pool: number[]) => addToPools(key < itemKey ? this.nextNodes : this.laterNodes, key, pool);

    if (this.innerStack.length > 0) {
      const currentGoalKey = this.partitionKey[this.innerStack[0]!]!;
      const betterKeys: number[] = [];
      for (const [key, pool] of pools) {
        if (key < currentGoalKey) betterKeys.push(key);
        else deferPool(key, pool);
      }
      if (betterKeys.length === 0) return;
      this.innerStacks.push(this.innerStack);
      betterKeys.sort((a, b) => b - a); // best key last, so its tasks end up on top
      for (const key of betterKeys) {
        const pool = pools.get(key)!;
        if (pool.length > 1) pool.sort(this.dependentsFirstLast);
        this.pushEachAsStack(pool);
      }
      this.innerStack = this.innerStacks.pop()!;
      return;
    }

    if (continueSearch) {
      let minKey = Infinity;
      for (const key of pools.keys()) minKey = Math.min(minKey, key);
      const minPool = pools.get(minKey)!;
      pools.delete(minKey);
      if (minPool.length === 1) {
        this.innerStack = minPool;
        this.seen[minPool[0]!] = 1;
      } else if (10 * itemKey > 11 * minPool.length * minPool.length * minKey) {
        // Dask's heuristic for "confident enough to take the whole pool now".
        minPool.sort(this.dependentsFirstLast);
        this.pushEachAsStack(minPool);
        this.innerStack = this.innerStacks.pop()!;
      } else {
        // The best one now; the rest (it included, skipped once done) later.
        const best = minimum(minPool, this.keys.dependents);
        this.innerStack = [best];
        this.seen[best] = 1;
        addToPools(this.nextNodes, minKey, minPool);
      }
    }
    for (const [key, pool] of pools) deferPool(key, pool);
  }

  /** Start tasks by `initialStack` key. Dask sorts them only once a second one is needed. */
  private nextStartTask(): number {
    this.sortedStartTasks ??= this.startTasks.filter((x) => !this.isDone(x)).sort(descending(this.keys.initialStack));
    let task = this.sortedStartTasks.pop();
    while (task !== undefined && this.isDone(task)) task = this.sortedStartTasks.pop();
    if (task === undefined) throw new Error("order: ran out of start tasks before ordering every task");
    return task;
  }
}
