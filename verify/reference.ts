/**
 * The value every key of a scenario must end up with: a deterministic function of the key
 * and its inputs' values, evaluated directly on the graph (no scheduler). The DST checker
 * computes the same function from what each worker actually held when it ran a task, so a
 * task run with a wrong, stale or missing input shows up as a value mismatch.
 */
import type { Scenario } from "../sim.js";

/** 64 bits of FNV-1a (two 32-bit lanes), as 16 hex digits. */
function fnv64(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x01000193 ^ 0x2f) >>> 0;
  }
  return a.toString(16).padStart(8, "0") + b.toString(16).padStart(8, "0");
}

/** A task's value from its key and its dependencies' values, in dependency order. */
export function taskValue(key: string, inputs: readonly string[]): string {
  return fnv64(`${key}(${inputs.join(",")})`);
}

/** The value of scattered data. */
export function dataValue(key: string): string {
  return fnv64(`data:${key}`);
}

/**
 * Every key's reference value. Tasks that fail for good (their `error`, past their retries
 * unless flaky), or depend on one that does, have none.
 */
export function referenceValues(scenario: Scenario): Map<string, string> {
  const values = new Map<string, string>();
  for (const d of scenario.data ?? []) values.set(d.key, dataValue(d.key));
  const specs = new Map(scenario.tasks.map((t) => [t.key, t] as const));
  const failed = new Set<string>();
  const visit = (key: string): void => {
    if (values.has(key) || failed.has(key)) return;
    const spec = specs.get(key);
    if (spec === undefined) return;
    // Marked first: the scenario is validated acyclic, this only guards the recursion.
    failed.add(key);
    const deps = taskDeps(spec);
    for (const dep of deps) visit(dep);
    if (failsForGood(spec) || deps.some((d) => !values.has(d))) return;
    failed.delete(key);
    values.set(key, taskValue(key, deps.map((d) => values.get(d)!)));
  };
  for (const t of scenario.tasks) visit(t.key);
  return values;
}

/**
 * A task whose runs keep failing past its retries: one with an `error`, unless it is flaky
 * (`failures`, its first runs only) and retried at least as often as it fails.
 */
export function failsForGood(spec: { error?: string; failures?: number; retries?: number }): boolean {
  if (spec.error === undefined) return false;
  return spec.failures === undefined || spec.failures > (spec.retries ?? 0);
}

/** A task's dependencies as the simulator sees them: duplicates dropped, first mention kept. */
export function taskDeps(spec: { deps?: string[] }): string[] {
  return [...new Set(spec.deps ?? [])];
}
