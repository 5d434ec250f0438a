/**
 * Liveness under fairness: where each task must end, from the scenario alone. Mail is
 * always delivered in the simulator (faults delay it, never drop it), so a task that some
 * surviving worker may run, and whose inputs cannot be lost for good, must finish.
 */
import type { Scenario, SimTaskSpec, SimWorkerSpec } from "../sim.js";
import { survivors } from "./dst-case.js";
import { taskDeps } from "./reference.js";

/**
 * The final states each task may have, or null when nothing can be expected (no worker
 * survives). Tasks that may be stuck for good are left out: a strict restriction no
 * survivor meets, scattered inputs whose holders were killed, or such a task upstream.
 */
export function expectedEnd(scenario: Scenario): Map<string, Set<string>> | null {
  const alive = survivors(scenario);
  if (alive.length === 0) return null;
  const killed = new Set((scenario.actions ?? []).flatMap((a) => (a.do === "kill-worker" ? [a.worker] : [])));
  const lostForGood = new Set((scenario.data ?? []).filter((d) => d.on.some((w) => killed.has(w))).map((d) => d.key));
  const specs = new Map(scenario.tasks.map((t) => [t.key, t] as const));
  const stuck = new Set<string>();
  const doomed = new Set<string>();
  const visited = new Set<string>();
  const visit = (key: string): void => {
    if (visited.has(key)) return;
    visited.add(key);
    const spec = specs.get(key);
    if (spec === undefined) {
      if (lostForGood.has(key)) stuck.add(key);
      return;
    }
    const deps = taskDeps(spec);
    for (const dep of deps) visit(dep);
    if (!runnableOnSome(spec, alive) || deps.some((d) => stuck.has(d))) stuck.add(key);
    else if (spec.error !== undefined || deps.some((d) => doomed.has(d))) doomed.add(key);
  };
  for (const t of scenario.tasks) visit(t.key);

  const dependedOn = new Set(scenario.tasks.flatMap((t) => taskDeps(t)));
  const out = new Map<string, Set<string>>();
  for (const t of scenario.tasks) {
    if (stuck.has(t.key)) continue;
    const output = !dependedOn.has(t.key);
    if (doomed.has(t.key)) out.set(t.key, new Set(output ? ["erred"] : ["erred", "released", "forgotten"]));
    else out.set(t.key, new Set(output ? ["memory"] : ["memory", "released", "forgotten"]));
  }
  return out;
}

/** Whether some surviving worker may run the task (restrictions are preferences if allowOtherWorkers). */
function runnableOnSome(spec: SimTaskSpec, alive: SimWorkerSpec[]): boolean {
  const restricted = spec.workers !== undefined || spec.hosts !== undefined || spec.resources !== undefined;
  if (!restricted || spec.allowOtherWorkers === true) return true;
  return alive.some(
    (w) =>
      (spec.workers === undefined || spec.workers.includes(w.name)) &&
      (spec.hosts === undefined || spec.hosts.includes(w.host ?? "localhost")) &&
      Object.entries(spec.resources ?? {}).every(([name, amount]) => (w.resources?.[name] ?? 0) >= amount),
  );
}
