/**
 * Liveness under fairness: where each task must end, from the scenario alone. Mail is
 * always delivered in the simulator (faults delay it, never drop it), so a task that some
 * surviving worker may run, and whose inputs cannot be lost for good, must finish.
 */
import { planScenario } from "../sim/validate-scenario.js";
import type { Scenario, SimTaskSpec, SimWorkerSpec } from "../sim.js";
import { survivors } from "./dst-case.js";
import { failsForGood, taskDeps } from "./reference.js";

/**
 * The keys some client still holds a future for when the run ends, with the clients: the
 * scenario's graphs and submit actions add to what a client wants, its release, cancel (the
 * keys and every task depending on them) and client-leave actions take away, in the order
 * the simulator runs them (by time; at one time, graphs before actions, actions in list order).
 */
export function wantedAtEnd(scenario: Scenario): Map<string, Set<string>> {
  const events = planScenario(scenario).timeline.map((event, order) => ({ event, order }));
  events.sort((a, b) => a.event.at - b.event.at || a.order - b.order);
  const wants = new Map<string, Set<string>>();
  const dependents = new Map<string, string[]>();
  for (const t of scenario.tasks) {
    for (const dep of taskDeps(t)) {
      let list = dependents.get(dep);
      if (list === undefined) dependents.set(dep, (list = []));
      list.push(t.key);
    }
  }
  for (const { event } of events) {
    if (event.kind === "submit") {
      for (const key of event.submission.wants) {
        let clients = wants.get(key);
        if (clients === undefined) wants.set(key, (clients = new Set()));
        clients.add(event.submission.client);
      }
    } else if (event.kind === "release") {
      for (const key of event.keys) wants.get(key)?.delete(event.client);
    } else if (event.kind === "cancel") {
      const seen = new Set<string>();
      const stack = [...event.keys];
      while (stack.length > 0) {
        const key = stack.pop()!;
        if (seen.has(key)) continue;
        seen.add(key);
        wants.get(key)?.delete(event.client);
        stack.push(...(dependents.get(key) ?? []));
      }
    } else if (event.kind === "client-leave") {
      for (const clients of wants.values()) clients.delete(event.client);
    }
  }
  for (const [key, clients] of wants) if (clients.size === 0) wants.delete(key);
  return wants;
}

/**
 * The final states each task may have, or null when nothing can be expected (no worker
 * survives). A key some client still wants must be in memory (erred if it must fail);
 * any other may also have been released or forgotten. Tasks that may be stuck for good are
 * left out: a strict restriction no survivor meets, scattered inputs whose holders were
 * killed, or such a task upstream.
 */
export function expectedEnd(scenario: Scenario): Map<string, Set<string>> | null {
  const alive = survivors(scenario);
  if (alive.length === 0) return null;
  // Scattered data cannot be recomputed: data on a worker that was killed, retired (its
  // handover may not finish) or lost (the scheduler gives the data up at once) may be gone.
  const killed = new Set((scenario.actions ?? []).flatMap((a) => (a.do === "kill-worker" || a.do === "retire-worker" || a.do === "lose-worker" ? [a.worker] : [])));
  // A new run (start-scheduler) knows no scattered data: what needs it fails then.
  const newRun = (scenario.actions ?? []).some((a) => a.do === "start-scheduler");
  const lostForGood = new Set((scenario.data ?? []).filter((d) => newRun || d.on.some((w) => killed.has(w))).map((d) => d.key));
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
    else if (failsForGood(spec) || deps.some((d) => doomed.has(d))) doomed.add(key);
  };
  for (const t of scenario.tasks) visit(t.key);

  const wanted = wantedAtEnd(scenario);
  const out = new Map<string, Set<string>>();
  for (const t of scenario.tasks) {
    if (stuck.has(t.key)) continue;
    // After a new run, a key whose future settled erred before it is not submitted again
    // (its client keeps the outcome), so the new run may not know it: `futures` checks it.
    const output = wanted.has(t.key) && !newRun;
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
