/**
 * Work stealing over random simulator scenarios (fast-check), with imbalance built in
 * (tasks pinned loosely to one worker, known and unknown durations, big and small inputs,
 * workers dying and coming back, extra balance passes): no task runs twice unless a
 * worker died; every task ends where it should; the in-flight corrections always match
 * the requests in flight and are zero when none is; the log replays.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { WorkerRec } from "../machines/scheduler/state.js";
import { checkSequences } from "../log/sequences.js";
import type { Scenario, SimAction, SimTaskSpec, SimView } from "../sim.js";
import { replayLog, transitions, simulateDask as simulate } from "./sim-helpers.js";
import { executionsByWorker } from "./steal-helpers.js";

const WORKERS = ["a", "b", "c", "d"];

function scenarioArb(withKills: boolean): fc.Arbitrary<Scenario> {
  return fc
    .record({
      seed: fc.nat(),
      workerSaturation: fc.constantFrom(1.1, Infinity),
      interval: fc.constantFrom(0.01, 0.1, 1),
      latency: fc.constantFrom(0, 0.001, 0.02),
      known: fc.constantFrom(["inc", "load", "sum"], ["inc", "load"], ["inc"], []),
      hot: fc.constantFrom(...WORKERS),
      workers: fc.uniqueArray(fc.record({ name: fc.constantFrom(...WORKERS), nthreads: fc.integer({ min: 1, max: 3 }), joinAt: fc.constantFrom(0, 0, 0, 0.3) }), {
        minLength: 2,
        maxLength: 4,
        selector: (w) => w.name,
      }),
      tasks: fc.array(
        fc.record({
          prefix: fc.constantFrom("inc", "inc", "load", "sum", "fresh"),
          duration: fc.constantFrom(0, 0.01, 0.1, 0.5, 0.5, 2, 2),
          nbytes: fc.constantFrom(8, 8, 1e4, 1e6, 5e7),
          depPicks: fc.array(fc.nat(), { maxLength: 3 }),
          // Most tasks pinned loosely to one "hot" worker: the imbalance stealing is for.
          pin: fc.constantFrom("hot", "hot", "hot", "none", "other"),
          other: fc.constantFrom(...WORKERS),
          hard: fc.constantFrom(false, false, false, true),
          submitAt: fc.constantFrom(0, 0, 0, 0.5, 1.5),
          fails: fc.constantFrom(...Array(14).fill(false), true),
        }),
        { minLength: 4, maxLength: 40 },
      ),
      data: fc.option(fc.record({ nbytes: fc.constantFrom(8, 1e6, 5e7), on: fc.constantFrom(...WORKERS) }), { nil: null }),
      balances: fc.array(fc.constantFrom(0.001, 0.05, 0.4, 1.2), { maxLength: 3 }),
      kills: withKills
        ? fc.array(fc.record({ at: fc.constantFrom(0.02, 0.3, 1, 2.5), worker: fc.constantFrom(...WORKERS), comesBack: fc.boolean() }), { minLength: 1, maxLength: 2 })
        : fc.constant([]),
    })
    .map(({ seed, workerSaturation, interval, latency, known, hot, workers, tasks, data: rawData, balances, kills }) => {
      const present = new Set(workers.map((w) => w.name));
      const atStart = new Set(workers.filter((w) => w.joinAt === 0).map((w) => w.name));
      const data = rawData !== null && atStart.has(rawData.on) ? [{ key: "data-0", nbytes: rawData.nbytes, on: [rawData.on] }] : [];
      const specs: SimTaskSpec[] = [];
      tasks.forEach((t, i) => {
        const candidates = [...data.map((d) => d.key), ...specs.filter((s) => (s.submitAt ?? 0) <= t.submitAt).map((s) => s.key)];
        const deps = [...new Set(t.depPicks.filter(() => candidates.length > 0).map((p) => candidates[p % candidates.length]!))];
        const pin = t.pin === "hot" ? hot : t.pin === "other" ? t.other : null;
        const pinned = pin !== null && present.has(pin);
        specs.push({
          key: `${t.prefix}-${i}`,
          duration: t.duration,
          nbytes: t.nbytes,
          submitAt: t.submitAt,
          ...(deps.length > 0 ? { deps } : {}),
          ...(t.fails ? { error: "boom" } : {}),
          ...(pinned ? { workers: [pin], allowOtherWorkers: !t.hard } : {}),
        });
      });
      const actions: SimAction[] = balances.map((at) => ({ at, do: "balance" }));
      const alive = new Map<string, number>(workers.map((w) => [w.name, w.joinAt]));
      for (const k of kills) {
        const joinAt = alive.get(k.worker);
        if (joinAt === undefined || joinAt > k.at) continue;
        alive.delete(k.worker);
        actions.push({ at: k.at, do: "kill-worker", worker: k.worker });
        if (k.comesBack) {
          actions.push({ at: k.at + 0.5, do: "add-worker", worker: { name: k.worker } });
          alive.set(k.worker, k.at + 0.5);
        }
      }
      return {
        seed,
        config: {
          workerSaturation,
          workStealingInterval: interval,
          allowedFailures: 100,
          defaultTaskDurations: Object.fromEntries(known.map((p) => [p, 0.1])),
        },
        network: { latency },
        workers,
        data,
        tasks: specs,
        actions,
      } satisfies Scenario;
    });
}

/** Probe times: often early (where most steals are), then sparser, then after the end. */
const PROBE_TIMES = [...Array.from({ length: 40 }, (_, i) => i * 0.01), ...Array.from({ length: 30 }, (_, i) => 0.4 + i * 0.2), 1e6];

/** Checks the in-flight corrections against the requests in flight; returns what went wrong. */
function correctionProblems(view: SimView): string[] {
  const stealing = view.scheduler.stealing!;
  const { occupancy, tasks } = stealing.inFlightCorrections();
  const problems: string[] = [];
  if (stealing.inFlight.size === 0) {
    for (const [ws, v] of occupancy) if (v !== 0) problems.push(`t=${view.now}: nothing in flight, occupancy correction ${v} on ${ws.name}`);
    for (const [ws, v] of tasks) if (v !== 0) problems.push(`t=${view.now}: nothing in flight, task correction ${v} on ${ws.name}`);
    return problems;
  }
  const expectOcc = new Map<WorkerRec, number>();
  const expectTasks = new Map<WorkerRec, number>();
  for (const info of stealing.inFlight.values()) {
    expectOcc.set(info.victim, (expectOcc.get(info.victim) ?? 0) - info.victimDuration);
    expectOcc.set(info.thief, (expectOcc.get(info.thief) ?? 0) + info.thiefDuration);
    expectTasks.set(info.victim, (expectTasks.get(info.victim) ?? 0) - 1);
    expectTasks.set(info.thief, (expectTasks.get(info.thief) ?? 0) + 1);
  }
  for (const ws of new Set([...occupancy.keys(), ...expectOcc.keys()])) {
    if (Math.abs((occupancy.get(ws) ?? 0) - (expectOcc.get(ws) ?? 0)) > 1e-9) problems.push(`t=${view.now}: occupancy correction on ${ws.name} off`);
  }
  for (const ws of new Set([...tasks.keys(), ...expectTasks.keys()])) {
    if ((tasks.get(ws) ?? 0) !== (expectTasks.get(ws) ?? 0)) problems.push(`t=${view.now}: task correction on ${ws.name} off`);
  }
  for (const ts of stealing.inFlight.keys()) if (ts.state !== "processing.stealing") problems.push(`t=${view.now}: ${ts.key} in flight but ${ts.state}`);
  return problems;
}

function run(scenario: Scenario) {
  const problems: string[] = [];
  let leftInFlight = -1;
  const probes = PROBE_TIMES.map((at) => ({
    at,
    probe: (view: SimView) => {
      problems.push(...correctionProblems(view));
      if (at === 1e6) leftInFlight = view.scheduler.stealing!.inFlight.size;
    },
  }));
  return { result: simulate(scenario, { probes }), problems, leftInFlight: () => leftInFlight };
}

/** Tasks that fail, or depend (transitively) on one that does. */
function doomed(tasks: SimTaskSpec[]): Set<string> {
  const out = new Set<string>();
  for (const t of tasks) if (t.error !== undefined || (t.deps ?? []).some((d) => out.has(d))) out.add(t.key);
  return out;
}

describe("work stealing properties", () => {
  it("without worker failures: every task runs at most once, outputs end in memory or erred, corrections match, the log replays", () => {
    fc.assert(
      fc.property(scenarioArb(false), (scenario) => {
        const { result, problems, leftInFlight } = run(scenario);
        expect(problems).toEqual([]);
        expect(leftInFlight()).toBe(0);
        const perKey = new Map<string, number>();
        for (const keys of executionsByWorker(result.log).values()) for (const [key, n] of keys) perKey.set(key, (perKey.get(key) ?? 0) + n);
        const bad = doomed(scenario.tasks);
        const dependedOn = new Set(scenario.tasks.flatMap((t) => t.deps ?? []));
        const reachable = new Set(scenario.workers.map((w) => w.name));
        for (const t of scenario.tasks) {
          const r = result.tasks[t.key]!;
          expect(r.executions, t.key).toBeLessThanOrEqual(1);
          expect(perKey.get(t.key) ?? 0, t.key).toBe(r.executions);
          // A task hard-pinned to a worker that never joins waits in no-worker (and so do its dependents).
          const stuck = t.workers !== undefined && t.allowOtherWorkers === false && !reachable.has(t.workers[0]!);
          if (stuck || (t.deps ?? []).some((d) => result.tasks[d]?.state === "no-worker" || result.tasks[d]?.state === "waiting")) continue;
          const allowed = dependedOn.has(t.key) ? ["memory", "released", "forgotten", "erred"] : ["memory", "erred"];
          expect(allowed, `${t.key} ended ${r.state}`).toContain(r.state);
          if (!dependedOn.has(t.key)) expect(r.state, t.key).toBe(bad.has(t.key) ? "erred" : "memory");
        }
        expect(checkSequences(result.log)).toEqual([]);
        expect(replayLog(result.log).mismatches).toEqual([]);
      }),
      { numRuns: 60 },
    );
  });

  it("with workers dying: a task runs again only after a worker died; corrections match; the log replays; the run is deterministic", () => {
    fc.assert(
      fc.property(scenarioArb(true), (scenario) => {
        const { result, problems, leftInFlight } = run(scenario);
        expect(problems).toEqual([]);
        expect(leftInFlight()).toBe(0);
        const firstKill = Math.min(...(scenario.actions ?? []).filter((a) => a.do === "kill-worker").map((a) => a.at));
        const starts = new Map<string, number[]>();
        for (const r of transitions(result.log, { machine: "wtask", event: "EXECUTE" })) starts.set(r.id, [...(starts.get(r.id) ?? []), r.t]);
        for (const [key, times] of starts) {
          expect(times.length, key).toBe(result.tasks[key]!.executions);
          if (times.length > 1) expect(times[1], `${key} ran ${times.length} times`).toBeGreaterThanOrEqual(firstKill);
        }
        expect(replayLog(result.log).mismatches).toEqual([]);
        expect(simulate(structuredClone(scenario))).toEqual(result);
      }),
      { numRuns: 40 },
    );
  });
});
