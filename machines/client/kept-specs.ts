import type { TaskSpec } from "../protocol.js";

/**
 * The specs of the tasks a client submitted, each kept while a future of the client holds
 * its key or a kept spec depends on it: what the client resubmits when the scheduler starts
 * a new run without its state (resubmit.ts).
 */
export class KeptSpecs {
  private readonly specs = new Map<string, TaskSpec>();
  /** How many kept specs depend on a key (only keys some kept spec depends on are here). */
  private readonly dependents = new Map<string, number>();

  /** `held`: whether a future of the client holds a key. */
  constructor(private readonly held: (key: string) => boolean) {}

  get(key: string): TaskSpec | undefined {
    return this.specs.get(key);
  }

  has(key: string): boolean {
    return this.specs.has(key);
  }

  keys(): IterableIterator<string> {
    return this.specs.keys();
  }

  get size(): number {
    return this.specs.size;
  }

  /** The kept specs by key, read-only. */
  view(): ReadonlyMap<string, TaskSpec> {
    return this.specs;
  }

  /** Keep the specs of a submission; one no future and no kept spec needs is dropped at once. */
  keep(tasks: readonly TaskSpec[]): void {
    const added: TaskSpec[] = [];
    for (const spec of tasks) {
      if (this.specs.has(spec.key)) continue;
      this.specs.set(spec.key, spec);
      added.push(spec);
    }
    for (const spec of added) {
      if (spec.deps.length === 0) continue;
      for (const dep of spec.deps.length === 1 ? spec.deps : new Set(spec.deps)) {
        if (this.specs.has(dep)) this.dependents.set(dep, (this.dependents.get(dep) ?? 0) + 1);
      }
    }
    for (const spec of added) this.forget(spec.key);
  }

  /** Drop `key`'s spec if no future holds it and no kept spec needs it, and so on down its dependencies. */
  forget(key: string): void {
    // The usual call (a submission's key, which its future holds) ends here, without a stack.
    if (this.held(key)) return;
    const stack = [key];
    while (stack.length > 0) {
      const k = stack.pop()!;
      if (this.held(k) || this.dependents.has(k)) continue;
      const kept = this.specs.get(k);
      if (kept === undefined) continue;
      this.specs.delete(k);
      for (const dep of kept.deps.length < 2 ? kept.deps : new Set(kept.deps)) {
        const n = this.dependents.get(dep);
        if (n === undefined) continue;
        if (n > 1) this.dependents.set(dep, n - 1);
        else this.dependents.delete(dep);
        stack.push(dep);
      }
    }
  }

  clear(): void {
    this.specs.clear();
    this.dependents.clear();
  }
}
