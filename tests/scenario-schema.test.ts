/**
 * docs/scenario.schema.json against the simulator: the example scenario and scenarios the
 * tests run validate against it, and scenarios the simulator rejects for a field the schema
 * can describe are rejected by the schema too.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { simulate } from "../sim.js";
import { SchemaSet } from "./support/json-schema.js";
import { REPO_ROOT } from "./support/natsched-process.js";

const schemas = new SchemaSet();
schemas.add(JSON.parse(readFileSync(join(REPO_ROOT, "docs", "scenario.schema.json"), "utf8")));
const ID = "https://natsched.dev/schemas/scenario.schema.json";
const check = (scenario: unknown) => schemas.validate(ID, scenario);

const good = {
  seed: 7,
  config: { workStealing: false, workerSaturation: "inf", defaultTaskDurations: { inc: "10ms" } },
  network: { bandwidth: 1e8, latency: 0.001 },
  hostCosts: { schedulerDelay: 0.0002, workerDelay: 0.0001, taskStart: 0.00005, graphIntake: 0.00001 },
  workers: [{ name: "a", nthreads: 2, host: "h1", resources: { GPU: 1 } }, { name: "b", joinAt: 0.5 }],
  data: [{ key: "x", nbytes: 1000, on: ["a"] }],
  tasks: [
    { key: "inc-1", deps: ["x"], duration: 0.2, nbytes: 8, priority: 1, wanted: true },
    { key: "inc-2", duration: 0.1, workers: ["b"], allowOtherWorkers: true, submitAt: 0.1, resources: { GPU: 1 }, client: "c1" },
  ],
  actions: [
    { at: 0.05, do: "balance" },
    { at: 0.3, do: "add-worker", worker: { name: "c" } },
    { at: 0.35, do: "restart-scheduler" },
    { at: 0.4, do: "submit", client: "c2", keys: ["inc-1"] },
    { at: 0.5, do: "release", client: "c2", keys: ["inc-1"] },
    { at: 0.6, do: "client-leave", client: "c2" },
    { at: 0.7, do: "submit", keys: ["inc-2"] },
    { at: 0.8, do: "lose-worker", worker: "b", back: 0.1 },
    { at: 0.9, do: "scatter", client: "c3", keys: ["x"], on: ["a"] },
    { at: 1, do: "retire-worker", worker: "c", timeout: 5 },
  ],
};

describe("docs/scenario.schema.json", () => {
  it("accepts the example scenario, which the simulator runs", () => {
    const example = JSON.parse(readFileSync(join(REPO_ROOT, "examples", "scenario.json"), "utf8"));
    expect(check(example).errors).toEqual([]);
    expect(simulate(example).makespan).toBeGreaterThan(0);
  });

  it("accepts a clean scheduler stop and a new run, which the simulator runs", () => {
    const stopped = { ...structuredClone(good), data: [], tasks: [{ key: "inc-1", duration: 0.2 }], actions: [{ at: 0.05, do: "stop-scheduler" }, { at: 0.1, do: "start-scheduler" }] };
    expect(check(stopped).errors).toEqual([]);
    expect(simulate(stopped as never).tasks["inc-1"]!.state).toBe("memory");
  });

  it("accepts a scenario using every field, which the simulator runs", () => {
    expect(check(good).errors).toEqual([]);
    expect(Object.values(simulate(structuredClone(good) as never).tasks).every((t) => t.state === "memory")).toBe(true);
  });

  it.each([
    ["a negative duration", { tasks: [{ key: "t", duration: -1 }] }],
    ["a task without a key", { tasks: [{ duration: 1 }] }],
    ["zero threads", { workers: [{ name: "a", nthreads: 0 }] }],
    ["an unknown top-level field", { stragglers: true }],
    ["an unknown action", { actions: [{ at: 1, do: "explode" }] }],
    ["a zero bandwidth", { network: { bandwidth: 0 } }],
    ["a negative host delay", { hostCosts: { workerDelay: -0.001 } }],
    ["an unknown host cost", { hostCosts: { gcPause: 0.01 } }],
    ["a release naming no key", { actions: [{ at: 1, do: "release", keys: [] }] }],
    ["a client name with a dot", { actions: [{ at: 1, do: "client-leave", client: "c.1" }] }],
    ["a submit without keys", { actions: [{ at: 1, do: "submit", client: "c1" }] }],
    ["a negative retirement timeout", { actions: [{ at: 1, do: "retire-worker", worker: "a", timeout: -1 }] }],
    ["a lose-worker without back", { actions: [{ at: 1, do: "lose-worker", worker: "a" }] }],
    ["a scatter onto no worker", { actions: [{ at: 1, do: "scatter", keys: ["x"], on: [] }] }],
    ["a stop-scheduler with a worker", { actions: [{ at: 1, do: "stop-scheduler", worker: "a" }] }],
  ])("rejects %s, as the simulator does", (_what, change) => {
    const bad = { ...structuredClone(good), ...change };
    expect(check(bad).errors.length).toBeGreaterThan(0);
    expect(() => simulate(bad as never)).toThrow();
  });
});
