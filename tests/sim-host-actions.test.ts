/**
 * The simulator's host actions besides a worker's death: retire-worker, lose-worker,
 * scatter, and a clean scheduler stop followed by a new run (stop-scheduler,
 * start-scheduler), each as the real hosts do it (docs/simulator.md), and the scenario
 * checks that go with them.
 */
import { describe, expect, it } from "vitest";
import { replay } from "../replay/index.js";
import { simulate, type Scenario } from "../sim.js";
import { transitions } from "./sim-helpers.js";
import type { MachineName } from "../machines/reasons.js";

const edges = (log: ReturnType<typeof simulate>["log"], actor: string, machine: MachineName) =>
  transitions(log, { actor, machine }).map((r) => `${r.id}: ${r.event} ${r.from}->${r.to}`);

describe("retire-worker", () => {
  it("the worker asks to retire, its data is handed over, it closes when told, and nothing is lost", () => {
    const result = simulate({
      workers: [{ name: "a" }, { name: "b" }],
      tasks: [{ key: "x-0", duration: 0.1, workers: ["a"] }, { key: "y-0", duration: 0.1, deps: ["x-0"], submitAt: 2 }],
      actions: [{ at: 1, do: "retire-worker", worker: "a" }],
    });
    expect(edges(result.log, "scheduler", "worker")).toEqual([
      "a: START starting->running",
      "b: START starting->running",
      "a: CLOSE running->closing",
      "a: CLOSED closing->closed",
    ]);
    expect(edges(result.log, "worker.a", "worker")).toEqual(["a: START starting->running", "a: CLOSE running->closing"]);
    expect(result.log.find((r) => r.kind === "stop" && r.actor === "worker.a")).toMatchObject({ reason: "removed" });
    // x-0 was copied to b before a left: y-0 reads it there, nothing is computed twice.
    expect(result.transfers.map((t) => `${t.key} ${t.from}->${t.to}`)).toEqual(["x-0 a->b"]);
    expect(result.tasks["x-0"]!.executions).toBe(1);
    expect(result.tasks["y-0"]).toMatchObject({ worker: "b", state: "memory" });
  });

  it("with no wait, at the worker's own start: its core closes before its registration is answered", () => {
    const result = simulate({
      network: { latency: 0.01 },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: [{ key: "x-0", duration: 0.1 }],
      actions: [{ at: 0, do: "retire-worker", worker: "a", timeout: 0 }],
    });
    expect(edges(result.log, "worker.a", "worker")).toEqual(["a: CLOSE starting->closing"]);
    // Its retire-worker and unregister-worker follow each other: the scheduler retires it, then lets it go.
    expect(edges(result.log, "scheduler", "worker").filter((e) => e.startsWith("a:"))).toEqual(["a: START starting->running", "a: CLOSE running->closing", "a: CLOSED closing->closed"]);
    expect(result.tasks["x-0"]).toMatchObject({ worker: "b", state: "memory" });
  });
});

describe("lose-worker", () => {
  it("the scheduler removes a live worker, refuses what it sends, and takes what it holds when it registers again", () => {
    const result = simulate({
      workers: [{ name: "a" }, { name: "b" }],
      tasks: [{ key: "x-0", duration: 1, workers: ["a"], allowOtherWorkers: true }],
      actions: [{ at: 0.5, do: "lose-worker", worker: "a", back: 2 }],
    });
    // x-0 runs again on b; a finishes its own run, which the scheduler refuses, and
    // registers again holding x-0: a replica by then.
    expect(result.refused).toBeGreaterThan(0);
    const registrations = result.log.filter((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "register-worker" && r.event.name === "a");
    expect(registrations.map((r) => (r.kind === "input" ? r.event.holding : undefined))).toEqual([undefined, [{ key: "x-0", nbytes: 1024 }]]);
    expect(result.tasks["x-0"]).toMatchObject({ state: "memory", executions: 2 });
    expect(edges(result.log, "scheduler", "worker").filter((e) => e.startsWith("a:"))).toEqual(["a: START starting->running", "a: CLOSED running->closed", "a: START starting->running"]);
  });

  it("a result it holds settles a task still to compute (DATA)", () => {
    const result = simulate({
      workers: [{ name: "a" }, { name: "b" }],
      tasks: [{ key: "x-0", duration: 1, workers: ["a"], allowOtherWorkers: true }, { key: "z-0", duration: 5, workers: ["b"] }],
      actions: [{ at: 0.5, do: "lose-worker", worker: "a", back: 1 }],
    });
    // x-0 is placed on b behind z-0, so a's result (at 1) comes back first, at 1.5.
    expect(transitions(result.log, { actor: "scheduler", machine: "task", id: "x-0", event: "DATA" }).map((r) => `${r.from}->${r.to}`)).toEqual(["processing.assigned->memory"]);
    expect(result.tasks["x-0"]).toMatchObject({ worker: "a", executions: 1 });
  });
});

describe("scatter", () => {
  it("a client scattering data the scheduler holds shares it where it is, and holds a settled future", () => {
    const result = simulate({
      workers: [{ name: "a" }, { name: "b" }],
      data: [{ key: "d", nbytes: 100, on: ["a"] }],
      tasks: [{ key: "x-0", duration: 0.1, deps: ["d"] }],
      actions: [{ at: 1, do: "scatter", client: "c1", keys: ["d"], on: ["b"] }],
    });
    expect(transitions(result.log, { actor: "scheduler", machine: "task", id: "d" }).map((r) => `${r.event} ${r.from}->${r.to}`)).toEqual(["DATA released->memory", "DATA memory->memory"]);
    expect(result.futures.c1).toEqual({ d: { state: "memory", wantedAt: 1, settledAt: 1.001 } });
  });
});

describe("stop-scheduler and start-scheduler", () => {
  const scenario: Scenario = {
    workers: [{ name: "a" }, { name: "b" }],
    data: [{ key: "d", nbytes: 8, on: ["a"] }],
    tasks: [
      { key: "x-0", duration: 1 },
      { key: "x-1", duration: 1, deps: ["d"] },
      { key: "y-0", duration: 0.5, deps: ["x-0"] },
    ],
    actions: [
      { at: 0.5, do: "stop-scheduler" },
      { at: 0.7, do: "start-scheduler" },
    ],
  };

  it("a clean stop, then a new run: workers register again, clients resubmit, scattered data fails; the log replays", async () => {
    const result = simulate(structuredClone(scenario));
    expect(edges(result.log, "scheduler", "scheduler")).toEqual([
      "scheduler: START starting->running",
      "scheduler: CLOSE running->closing",
      "scheduler: CLOSED closing->closed",
      "scheduler: START starting->running",
    ]);
    expect(result.log.filter((r) => r.actor === "scheduler" && (r.kind === "start" || r.kind === "stop")).map((r) => `${r.kind} ${r.t}`)).toEqual(["start 0", "stop 0.5", "start 0.7"]);
    // Each worker entered the new run before it registered again.
    expect(result.log.filter((r) => r.kind === "input" && r.event.op === "new-run").map((r) => r.actor)).toEqual(["worker.a", "worker.b"]);
    expect(result.futures["sim-client"]).toMatchObject({
      "y-0": { state: "memory" },
      "x-1": { state: "erred", error: "SchedulerRestartedError" },
    });
    expect(result.tasks["y-0"]!.state).toBe("memory");
    // The simulation ends with the new run's actors running: an open log, accepted.
    const replayed = await replay(result.log, { diffState: false, openOk: true });
    expect(replayed.ok).toBe(true);
  });

  it("nothing else may happen while the scheduler is down, and a start needs a stop", () => {
    const during = structuredClone(scenario);
    during.actions!.push({ at: 0.6, do: "kill-worker", worker: "b" });
    expect(() => simulate(during)).toThrow(/the scheduler is stopped from t=0.5 to t=0.7/);
    const twice = structuredClone(scenario);
    twice.actions!.push({ at: 1, do: "start-scheduler" });
    expect(() => simulate(twice)).toThrow(/start-scheduler at t=1: the scheduler is running/);
  });
});

describe("scenario checks", () => {
  const base = { workers: [{ name: "a" }, { name: "b" }], data: [{ key: "d", nbytes: 8, on: ["a"] }], tasks: [{ key: "x-0", duration: 1 }] };
  it.each([
    ["a retired worker acting again", [{ at: 1, do: "retire-worker", worker: "a" }, { at: 2, do: "kill-worker", worker: "a" }], /a was retired at t=2/],
    ["a retired name reused", [{ at: 1, do: "retire-worker", worker: "a" }, { at: 2, do: "add-worker", worker: { name: "a" } }], /was retired: its name is not used again/],
    ["a lost worker lost again before it is back", [{ at: 1, do: "lose-worker", worker: "a", back: 2 }, { at: 2, do: "lose-worker", worker: "a", back: 1 }], /a is lost until t=3/],
    ["a lose-worker without back", [{ at: 1, do: "lose-worker", worker: "a" }], /back/],
    ["a scatter of a task key", [{ at: 1, do: "scatter", keys: ["x-0"], on: ["a"] }], /not data of this scenario/],
    ["a scatter onto no worker of the scenario", [{ at: 1, do: "scatter", keys: ["d"], on: ["zz"] }], /zz is not a worker of this scenario/],
  ])("refuses %s", (_what, actions, message) => {
    expect(() => simulate({ ...structuredClone(base), actions } as never)).toThrow(message);
  });
});
