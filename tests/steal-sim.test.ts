/**
 * How the simulated scheduler runs work stealing: as SchedulerActor does, a pass every
 * workStealingInterval of virtual time while anything is processing, an on-demand pass
 * after a message when the core wants one (at most every 20 ms), `balance` actions, and
 * `result.steals` read off the scheduler's transitions.
 */
import { describe, expect, it } from "vitest";
import { ON_DEMAND_GAP } from "../actors/host/steal-passes.js";
import type { InputRecord, LogRecord } from "../log/types.js";
import { formatSimResult, type Scenario, type SimTaskSpec } from "../sim.js";
import { replayLog, transitions, simulateDask as simulate } from "./sim-helpers.js";
import { readReason } from "../machines/reasons.js";

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Times of the balance passes the scheduler was fed. */
function passes(log: LogRecord[]): number[] {
  return log.filter((r): r is InputRecord => r.kind === "input" && r.actor === "scheduler" && r.event.op === "balance").map((r) => r.t);
}

/** Tasks a must run (hard restriction) while b idles: the core wants a pass the whole time but can steal nothing. */
const stuckOnA = (n: number, duration: number): SimTaskSpec[] => range(n).map((i) => ({ key: `f-${i}`, duration, workers: ["a"] }));

describe("periodic passes", () => {
  it("fall every workStealingInterval of virtual time while a task is processing, and stop when the run goes idle", () => {
    const result = simulate({
      config: { workStealingInterval: 0.25, defaultTaskDurations: { f: 1 } },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: stuckOnA(3, 1),
    });
    // 0: on demand, after the graph. Then the timer, until a has no backlog left (one task
    // for one thread from t=2): the on-demand ones after each task-finished (1.002, 2.002)
    // are within 20 ms of a periodic one, so they are skipped.
    expect(passes(result.log)).toEqual([0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2]);
    expect(result.makespan).toBe(3.001);
    expect(result.steals).toEqual([]);
  });

  it("the interval takes Dask's duration strings (test_parse_stealing_interval)", () => {
    const scenario: Scenario = { config: { workStealingInterval: "500ms" as unknown as number, defaultTaskDurations: { f: 1 } }, workers: [{ name: "a" }, { name: "b" }], tasks: stuckOnA(3, 1) };
    expect(passes(simulate(scenario).log)).toEqual([0, 0.5, 1, 1.5, 2]);
  });

  it("an idle cluster gets no pass, so a run with nothing to do ends at once", () => {
    const result = simulate({ workers: [{ name: "a" }, { name: "b" }], tasks: [] });
    expect(passes(result.log)).toEqual([]);
    expect(result.log.at(-1)!.t).toBe(0.001); // the workers hearing they are registered
  });
});

describe("on-demand passes", () => {
  it("follow messages when the core wants one, at most every 20 ms", () => {
    // Short tasks on a: a task-finished every ~6 ms, the timer far away (10 s).
    const result = simulate({
      config: { workStealingInterval: 10, defaultTaskDurations: { f: 0.005 } },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: stuckOnA(20, 0.005),
    });
    const times = passes(result.log);
    expect(times.length).toBeGreaterThan(3);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(ON_DEMAND_GAP);
    const finishes = result.log.filter((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "task-finished").length;
    expect(times.length).toBeLessThan(finishes);
  });
});

describe("workStealing: false", () => {
  it("no pass is made and nothing is stolen; a balance action is recorded but does nothing", () => {
    const tasks = range(10).map((i) => ({ key: `f-${i}`, duration: 1, workers: ["a"], allowOtherWorkers: true }));
    const base: Scenario = { config: { defaultTaskDurations: { f: 1 } }, workers: [{ name: "a" }, { name: "b" }], tasks, actions: [{ at: 0.5, do: "balance" }] };
    const on = simulate(base);
    const off = simulate({ ...base, config: { ...base.config, workStealing: false } });
    expect(on.steals.length).toBeGreaterThan(0);
    expect(off.steals).toEqual([]);
    expect(passes(off.log)).toEqual([0.5]);
    expect(transitions(off.log, { event: "STEAL" })).toEqual([]);
    expect(Object.values(off.tasks).every((t) => t.worker === "a")).toBe(true);
    expect(off.makespan).toBe(10.001);
    expect(on.makespan).toBeLessThan(6);
  });
});

describe("result.steals", () => {
  const scenario: Scenario = {
    config: { defaultTaskDurations: { f: 1 } },
    network: { latency: 0.01 },
    workers: [{ name: "a" }, { name: "b" }, { name: "c" }],
    tasks: range(9).map((i) => ({ key: `f-${i}`, duration: 1, workers: ["a"], allowOtherWorkers: true })),
  };

  it("one entry per STEAL transition: key, victim, thief, level, request id, when asked and when decided, outcome", () => {
    const result = simulate(scenario);
    const requests = transitions(result.log, { actor: "scheduler", event: "STEAL" });
    const requestIds = requests.map((r) => {
      const reason = readReason(r);
      return reason.kind === "steal-request" ? reason.why.requestId : reason.kind;
    });
    expect(result.steals.map((s) => s.requestId)).toEqual(requestIds);
    expect(result.steals[0]).toEqual({ key: "f-8", victim: "a", thief: "b", level: 0, requestId: "steal-0", requested: 0, decided: 0.02, outcome: "confirmed" });
    for (const steal of result.steals) {
      const [decision] = transitions(result.log, { actor: "scheduler", id: steal.key }).filter((r) => r.from === "processing.stealing" && r.t === steal.decided);
      expect(decision!.event).toBe(steal.outcome === "confirmed" ? "STEAL_CONFIRM" : steal.outcome === "rejected" ? "STEAL_REJECT" : steal.abortedBy);
    }
  });

  it("is deterministic and its log replays, balance inputs included", () => {
    const result = simulate(scenario);
    expect(simulate(structuredClone(scenario))).toEqual(result);
    expect(passes(result.log).length).toBeGreaterThan(0);
    expect(replayLog(result.log).mismatches).toEqual([]);
  });

  it("formatSimResult counts them by outcome", () => {
    const result = simulate(scenario);
    const n = result.steals.length;
    const confirmed = result.steals.filter((s) => s.outcome === "confirmed").length;
    expect(confirmed).toBe(n);
    expect(formatSimResult(result)).toContain(`steals     ${n} (confirmed ${n})`);
    expect(formatSimResult(simulate({ ...scenario, config: { workStealing: false } }))).toContain("steals     0\n");
  });
});

describe("balance actions", () => {
  it("run a pass at the given time, in the order of the scenario's actions", () => {
    const result = simulate({
      config: { workStealingInterval: 100, defaultTaskDurations: { f: 1 } },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: stuckOnA(3, 1),
      actions: [{ at: 0.3, do: "balance" }, { at: 0.3001, do: "balance" }],
    });
    // Then an on-demand pass after each message from a worker while one is due (a balance
    // action is not the host's own pass: it does not hold the next on-demand one back): a's
    // heartbeats with its metrics every 0.5 s; the task-finished at 1.002 falls within the
    // on-demand gap of the pass at 1.001.
    expect(passes(result.log).map((t) => Number(t.toFixed(6)))).toEqual([0, 0.3, 0.3001, 0.501, 1.001, 1.501, 2.001]);
  });
});
