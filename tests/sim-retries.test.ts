/**
 * The simulator's retries (a task's `failures` and `retries`) and fire-and-forget action:
 * the scheduler runs a failing task again, a task fired and forgotten runs after its client
 * released it, and the scenario checks for both.
 */
import { describe, expect, it } from "vitest";
import { simulate } from "../sim.js";
import { thrown } from "./errors-helpers.js";

const one = [{ name: "w0" }];

describe("simulator: retries and fire-and-forget", () => {
  it("a task failing on its first two runs, with retries 2, runs three times; its dependent waits for it and ends in memory", () => {
    const result = simulate({
      workers: one,
      tasks: [
        { key: "a", duration: 1, error: "flaky", failures: 2, retries: 2 },
        { key: "b", duration: 1, deps: ["a"] },
      ],
    });
    // Not an output: released once b has it.
    expect(result.tasks.a).toMatchObject({ state: "released", executions: 3 });
    expect(result.futures["sim-client"]!.b).toMatchObject({ state: "memory" });
    const retries = result.log.filter((r) => r.kind === "transition" && r.actor === "scheduler" && r.id === "a" && r.event === "RELEASE" && r.from === "processing.assigned");
    expect(retries.map((r) => r.kind === "transition" && r.why)).toEqual([
      { rule: "retry", worker: "w0", try: 1, left: 1, message: "flaky" },
      { rule: "retry", worker: "w0", try: 2, left: 0, message: "flaky" },
    ]);
  });

  it("retries exhausted: erred after retries + 1 runs", () => {
    const result = simulate({ workers: one, tasks: [{ key: "a", duration: 1, error: "always", retries: 1 }] });
    expect(result.tasks.a).toMatchObject({ state: "erred", executions: 2 });
    expect(result.futures["sim-client"]!.a).toMatchObject({ state: "erred", error: "SimulatedError" });
  });

  it("a task fired and forgotten and released at once runs with its dependency, then is forgotten", () => {
    const result = simulate({
      workers: one,
      tasks: [
        { key: "a", duration: 1, submitAt: 1 },
        { key: "b", duration: 1, deps: ["a"], submitAt: 1 },
      ],
      actions: [
        { at: 1, do: "fire-and-forget", keys: ["b"] },
        { at: 1, do: "release", keys: ["b"] },
      ],
    });
    expect(result.tasks.b).toMatchObject({ state: "forgotten", executions: 1 });
    expect(result.tasks.a).toMatchObject({ state: "forgotten", executions: 1 });
    expect(result.log.some((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "fire-and-forget")).toBe(true);
  });

  it("failures without error, or not a whole number, is a BAD_OPTION", () => {
    expect(thrown(() => simulate({ workers: one, tasks: [{ key: "a", duration: 1, failures: 1 }] }))).toMatchObject({ code: "BAD_OPTION" });
    expect(thrown(() => simulate({ workers: one, tasks: [{ key: "a", duration: 1, error: "x", retries: 1.5 }] }))).toMatchObject({ code: "BAD_OPTION" });
  });
});
