/**
 * natsched's guard on costly steals (config costlyStealEvidence, machines/scheduler/stealing.ts
 * enoughEvidence): a task whose inputs cost more to move than to compute is stolen only once
 * its prefix's duration rests on max(1, level - 6) measured durations. Durations are injected
 * per task on the simulator, so an inflated first measurement is reproduced exactly.
 */
import { describe, expect, it } from "vitest";
import type { Scenario, SimResult } from "../sim.js";
import { simulateDask as simulate } from "./sim-helpers.js";

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const MB = 1e6;

/** 200 tasks reading one 200 MB array held by a (and four tiny arrays, so the group is not root-ish). */
function badSteal(durations: (i: number) => number, config: Scenario["config"] = {}): SimResult {
  return simulate({
    config: { workStealingInterval: 0.01, ...config },
    workers: ["a", "b", "c", "d"].map((name) => ({ name })),
    data: range(5).map((i) => ({ key: `big-${i}`, nbytes: i === 0 ? 200 * MB : 8, on: ["a"] })),
    tasks: range(200).map((i) => ({ key: `fast-${i}`, deps: ["big-0"], duration: durations(i), workers: ["a"], allowOtherWorkers: true })),
  });
}

/** 40 tasks of `duration` reading a 200 MB array held by a. */
function slowWithBigInput(duration: number, config: Scenario["config"] = {}): SimResult {
  return simulate({
    config: { workStealingInterval: 0.01, ...config },
    workers: ["a", "b"].map((name) => ({ name })),
    data: range(5).map((i) => ({ key: `big-${i}`, nbytes: i === 0 ? 200 * MB : 8, on: ["a"] })),
    tasks: range(40).map((i) => ({ key: `slow-${i}`, deps: ["big-0"], duration, workers: ["a"], allowOtherWorkers: true })),
  });
}

/** End times of the tasks a ran, in order. */
function endsOn(result: SimResult, worker: string): number[] {
  return Object.values(result.tasks)
    .filter((t) => t.worker === worker)
    .map((t) => t.end)
    .sort((x, y) => x - y);
}

describe("an inflated first measurement (W4's 1 ms tasks measured at 13 ms)", () => {
  const inflated = (i: number) => (i < 3 ? 0.013 : 0.001);

  it("moves nothing: the level-13 steal waits for 7 measurements, and by then the average says 1 ms", () => {
    const result = badSteal(inflated);
    expect(result.transfers).toEqual([]);
    expect(result.steals).toEqual([]);
    expect(endsOn(result, "a")).toHaveLength(200);
  });

  // With Dask's rule the 0.5 s unknown-task guess already moves the array at once; a 1 ms
  // guess leaves the first measurement as the only reason to move it.
  const daskRule = { costlyStealEvidence: false, unknownTaskDuration: 0.001 };

  it("with costlyStealEvidence off (Dask's rule), the first sample alone copies the 200 MB to every idle worker", () => {
    const result = badSteal(inflated, daskRule);
    const firstEnd = endsOn(result, "a")[0]!;
    expect(result.steals.length).toBeGreaterThan(0);
    expect(Math.min(...result.steals.map((s) => s.requested))).toBeGreaterThanOrEqual(firstEnd);
    expect(new Set(result.transfers.filter((t) => t.key === "big-0").map((t) => t.to))).toEqual(new Set(["b", "c", "d"]));
  });

  it("with honest 1 ms measurements neither rule moves anything", () => {
    expect(badSteal(() => 0.001).transfers).toEqual([]);
    expect(badSteal(() => 0.001, daskRule).transfers).toEqual([]);
  });

  it("Dask's rule on the 0.5 s guess moves the array before anything is measured; the guard does not", () => {
    const dask = badSteal(() => 0.001, { costlyStealEvidence: false });
    expect(Math.min(...dask.steals.map((s) => s.requested))).toBeLessThan(endsOn(dask, "a")[0]!);
    expect(dask.transfers.length).toBeGreaterThan(0);
    expect(badSteal(() => 0.001).steals).toEqual([]);
  });
});

describe("work that is really slow still moves, after enough measurements", () => {
  it("100 ms tasks with a 200 MB input (cost about 21x, level 10) are stolen after the 4th measurement", () => {
    const result = slowWithBigInput(0.1);
    const onA = endsOn(result, "a");
    expect(result.steals.length).toBeGreaterThan(0);
    expect(result.steals.every((s) => s.level === 10)).toBe(true);
    const firstRequest = Math.min(...result.steals.map((s) => s.requested));
    expect(firstRequest).toBeGreaterThanOrEqual(onA[3]!);
    expect(firstRequest).toBeLessThan(onA[4]!);
    expect(endsOn(result, "b").length).toBeGreaterThan(0);
  });

  it("Dask's rule steals the same tasks after the first measurement", () => {
    // A 1 ms guess, so that the guess itself does not steal (it would at 0.5 s).
    const result = slowWithBigInput(0.1, { costlyStealEvidence: false, unknownTaskDuration: 0.001 });
    const onA = endsOn(result, "a");
    const firstRequest = Math.min(...result.steals.map((s) => s.requested));
    expect(firstRequest).toBeGreaterThanOrEqual(onA[0]!);
    expect(firstRequest).toBeLessThan(onA[1]!);
  });

  it("a configured duration counts as measured: stolen before any task finishes", () => {
    const result = slowWithBigInput(0.1, { defaultTaskDurations: { slow: 0.1 } });
    expect(result.steals.length).toBeGreaterThan(0);
    expect(Math.min(...result.steals.map((s) => s.requested))).toBeLessThan(endsOn(result, "a")[0]!);
  });

  it("inputs cheaper to move than the compute are stolen on the unknown-task guess, as in Dask", () => {
    const result = simulate({
      config: { workStealingInterval: 0.01 },
      workers: ["a", "b"].map((name) => ({ name })),
      data: range(5).map((i) => ({ key: `small-${i}`, nbytes: 8, on: ["a"] })),
      tasks: range(20).map((i) => ({ key: `slow-${i}`, deps: ["small-0"], duration: 0.2, workers: ["a"], allowOtherWorkers: true })),
    });
    expect(result.steals.length).toBeGreaterThan(0);
    expect(Math.min(...result.steals.map((s) => s.requested))).toBeLessThan(endsOn(result, "a")[0]!);
  });
});
