/**
 * A task's `runs`: the seconds of its first runs, in turn, over the whole simulation; later
 * runs take its `duration` (what-if replays a recorded key's runs this way, so that a
 * recomputation the recording did not make takes a typical run).
 */
import { describe, expect, it } from "vitest";
import { BadOptionError } from "../machines/errors.js";
import { simulate } from "../sim.js";
import { killedToldAtOnce } from "./sim-helpers.js";

describe("a task's runs", () => {
  it("its only run takes the first of its runs, not its duration", () => {
    const result = simulate({ workers: [{ name: "a" }], tasks: [{ key: "x", duration: 5, runs: [2] }] });
    expect(result.tasks.x).toMatchObject({ state: "memory", executions: 1 });
    expect(result.makespan).toBeCloseTo(2, 2);
  });

  it("a run past the list, a recomputation after its holder died, takes its duration", () => {
    // x runs on a (its only worker at first) in 1 s; y starts there, and a dies at 1.5 with y
    // running and x's result: both run again on b, each in its duration (a run started counts).
    const result = simulate({
      workers: [{ name: "a" }, { name: "b", joinAt: 1.5 }],
      tasks: [
        { key: "x", duration: 3, runs: [1], workers: ["a"], allowOtherWorkers: true },
        { key: "y", deps: ["x"], duration: 1, runs: [0.5], workers: ["a"], allowOtherWorkers: true },
      ],
      actions: killedToldAtOnce(1.5, "a"),
    });
    expect(result.tasks.x).toMatchObject({ state: "released", executions: 2 });
    expect(result.tasks.y).toMatchObject({ state: "memory", executions: 2, worker: "b" });
    // x again from 1.5 (3 s, not 1), then y (1 s, not 0.5).
    expect(result.tasks.x!.end).toBeCloseTo(1.5 + 3, 2);
    expect(result.makespan).toBeCloseTo(1.5 + 3 + 1, 2);
  });

  it("bad runs are a clear typed error", () => {
    expect(() => simulate({ workers: [{ name: "a" }], tasks: [{ key: "x", duration: 1, runs: [-1] }] })).toThrow(BadOptionError);
    expect(() => simulate({ workers: [{ name: "a" }], tasks: [{ key: "x", duration: 1, runs: "1" as unknown as number[] }] })).toThrow(/tasks\[0\]\.runs/);
  });
});
