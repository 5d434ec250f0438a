/**
 * The simulator as a host: virtual clock, network model, determinism, its log, scenario
 * checking and reporting. The Dask ports are in the other tests/sim-*.test.ts files.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { NatschedError } from "../machines/errors.js";
import { checkSequences } from "../log/sequences.js";
import { formatSimResult, simulate, simulateFile, type Scenario } from "../sim.js";
import { independentTasks, replayLog, transitions } from "./sim-helpers.js";

/** Transfers, a kill, a re-added worker, scattered data, two submissions. */
const busy: Scenario = {
  seed: 7,
  workers: [{ name: "a", nthreads: 2 }, { name: "b" }, { name: "c", joinAt: 3 }],
  data: [{ key: "dataset", nbytes: 5e6, on: ["a"] }],
  tasks: [
    ...independentTasks("load", 12, { duration: 1, deps: ["dataset"], nbytes: 2e6 }),
    ...Array.from({ length: 6 }, (_, i) => ({ key: `pair-${i}`, deps: [`load-${2 * i}`, `load-${2 * i + 1}`], duration: 0.5 })),
    { key: "total", deps: Array.from({ length: 6 }, (_, i) => `pair-${i}`), duration: 2, submitAt: 0 },
    ...independentTasks("late", 5, { duration: 0.25, submitAt: 4 }),
  ],
  actions: [
    { at: 2.2, do: "kill-worker", worker: "b" },
    { at: 5, do: "add-worker", worker: { name: "b", nthreads: 2 } },
  ],
};

describe("determinism", () => {
  it("the same scenario gives the same result and the same log", () => {
    const first = simulate(busy);
    const second = simulate(structuredClone(busy));
    expect(second).toEqual(first);
    expect(JSON.stringify(second.log)).toBe(JSON.stringify(first.log));
    expect(first.transfers.length).toBeGreaterThan(0);
    expect(Object.values(first.tasks).every((t) => t.state === "memory" || t.state === "released")).toBe(true);
  });

  it("the seed only picks worker incarnation ids: decisions do not depend on it", () => {
    const one = simulate({ ...busy, seed: 1 });
    const two = simulate({ ...busy, seed: 2 });
    expect(two.tasks).toEqual(one.tasks);
    expect(two.transfers).toEqual(one.transfers);
    const ids = (r: typeof one) => r.log.flatMap((rec) => (rec.kind === "start" && rec.role === "worker" ? [rec.init.id] : []));
    expect(ids(one)).not.toEqual(ids(two));
    expect(ids(one)).toHaveLength(4); // a, b, c, and b's second incarnation
  });
});

describe("the log", () => {
  it("numbers every actor's records without gaps, a restarted worker continuing its sequence", () => {
    const { log } = simulate(busy);
    expect(checkSequences(log)).toEqual([]);
    expect(log.filter((r) => r.actor === "worker.b" && r.kind === "start")).toHaveLength(2);
    expect(log.find((r) => r.actor === "worker.b" && r.kind === "stop")).toMatchObject({ reason: "killed", t: 2.2 });
  });

  it("re-feeding the recorded inputs to fresh cores reproduces every transition", () => {
    const { log } = simulate(busy);
    const { actors, mismatches } = replayLog(log);
    expect(actors).toEqual(["scheduler", "worker.a", "worker.b", "worker.c"]);
    expect(mismatches).toEqual([]);
    // ...and the comparison does catch a difference.
    const tampered = log.map((r) => (r.kind === "transition" && r.actor === "worker.c" && r.to === "memory" ? { ...r, to: "error" } : r));
    expect(replayLog(tampered as typeof log).mismatches).toHaveLength(1);
  });

  it("stamps records with the virtual time, and inputs precede what they cause", () => {
    const { log } = simulate({ network: { latency: 0.25 }, workers: [{ name: "a" }], tasks: [{ key: "x", duration: 2 }] });
    const compute = log.find((r) => r.kind === "input" && r.event.op === "compute-task")!;
    expect(compute).toMatchObject({ actor: "worker.a", t: 0.25 });
    const finished = log.find((r) => r.kind === "input" && r.event.op === "task-finished")!;
    expect(finished).toMatchObject({ actor: "scheduler", t: 2.5 });
    expect(transitions(log, { actor: "scheduler", id: "x", event: "FINISH" })[0]!.t).toBe(2.5);
  });
});

describe("the model", () => {
  it("messages take `latency`; a task runs its actual duration", () => {
    const result = simulate({ network: { latency: 0.5 }, workers: [{ name: "a" }], tasks: [{ key: "x", duration: 3, submitAt: 1 }] });
    expect(result.tasks.x).toEqual({ worker: "a", start: 1.5, end: 4.5, state: "memory", executions: 1 });
    expect(result.makespan).toBe(4.5);
  });

  it("a transfer takes latency + bytes / bandwidth", () => {
    const result = simulate({
      network: { latency: 0.25, bandwidth: 1e6 },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: [
        { key: "x", duration: 1, nbytes: 2e6, workers: ["a"] },
        { key: "y", deps: ["x"], duration: 1, workers: ["b"] },
      ],
    });
    // x: 0.25 -> 1.25 on a; the scheduler hears at 1.5 and tells b, which asks a at 1.75.
    expect(result.transfers).toEqual([{ key: "x", from: "a", to: "b", nbytes: 2e6, start: 1.75, end: 1.75 + 0.25 + 2 }]);
    expect(result.tasks.y!.start).toBe(4);
  });

  it("transfers do not share bandwidth: two at once each take their own time", () => {
    const result = simulate({
      network: { latency: 0, bandwidth: 1e6 },
      workers: [{ name: "a" }, { name: "b" }, { name: "c" }],
      tasks: [
        { key: "x", duration: 1, nbytes: 1e6, workers: ["a"] },
        { key: "y", deps: ["x"], duration: 1, workers: ["b"] },
        { key: "z", deps: ["x"], duration: 1, workers: ["c"] },
      ],
    });
    expect(result.transfers.map((t) => [t.to, t.start, t.end])).toEqual([
      ["b", 1, 2],
      ["c", 1, 2],
    ]);
  });

  it("outputs default to 1024 bytes", () => {
    const { log } = simulate({ workers: [{ name: "a" }], tasks: [{ key: "x", duration: 1 }] });
    const finished = log.find((r) => r.kind === "input" && r.event.op === "task-finished");
    expect(finished).toMatchObject({ event: { nbytes: 1024 } });
  });

  it("the scheduler estimates durations; it is never told the actual ones", () => {
    const estimates = (scenario: Scenario) =>
      simulate(scenario).log.flatMap((r) => (r.kind === "input" && r.event.op === "compute-task" ? [[r.event.key, r.event.duration]] : []));
    const tasks = [
      { key: "inc-1", duration: 7 },
      { key: "inc-2", duration: 7, submitAt: 10 },
    ];
    // Unknown prefix: the unknown-task-duration (0.5 s), then what it measured.
    expect(estimates({ workers: [{ name: "a" }], tasks })).toEqual([
      ["inc-1", 0.5],
      ["inc-2", 7],
    ]);
    expect(estimates({ config: { defaultTaskDurations: { inc: 3 } }, workers: [{ name: "a" }], tasks: tasks.slice(0, 1) })).toEqual([["inc-1", 3]]);
  });

  it("a worker that joins later gets work from then on", () => {
    const result = simulate({
      workers: [{ name: "a" }, { name: "late", joinAt: 1 }],
      tasks: independentTasks("slowinc", 6, { duration: 2 }),
    });
    const late = Object.values(result.tasks).filter((t) => t.worker === "late");
    expect(late.length).toBeGreaterThan(0);
    expect(late.every((t) => t.start >= 1)).toBe(true);
  });

  it("a run with no workers at all ends, reporting where the tasks wait", () => {
    const queued = simulate({ workers: [], tasks: independentTasks("x", 3) });
    expect(Object.values(queued.tasks).map((t) => t.state)).toEqual(["queued", "queued", "queued"]);
    const unqueued = simulate({ config: { workerSaturation: "inf" as unknown as number }, workers: [], tasks: independentTasks("x", 3) });
    expect(Object.values(unqueued.tasks).map((t) => t.state)).toEqual(["no-worker", "no-worker", "no-worker"]);
    expect(unqueued.makespan).toBe(0);
  });
});

describe("scenario checking", () => {
  const base: Scenario = { workers: [{ name: "a" }], tasks: [{ key: "x", duration: 1 }] };
  const cases: [string, unknown, string, RegExp][] = [
    ["an unknown top-level field", { ...base, worker: [] }, "BAD_OPTION", /scenario\.worker: unknown field; did you mean "workers"\?/],
    ["an unknown task field", { ...base, tasks: [{ key: "x", duraton: 1 }] }, "BAD_OPTION", /tasks\[0\]\.duraton: unknown field; did you mean "duration"/],
    ["a missing duration", { ...base, tasks: [{ key: "x" }] }, "BAD_OPTION", /tasks\[0\]\.duration: must be a finite number >= 0, got undefined/],
    ["a negative duration", { ...base, tasks: [{ key: "x", duration: -1 }] }, "BAD_OPTION", /tasks\[0\]\.duration/],
    ["a fractional nbytes", { ...base, tasks: [{ key: "x", duration: 1, nbytes: 1.5 }] }, "BAD_OPTION", /tasks\[0\]\.nbytes: must be a whole number >= 0/],
    ["zero threads", { ...base, workers: [{ name: "a", nthreads: 0 }] }, "BAD_OPTION", /workers\[0\]\.nthreads/],
    ["a duplicate worker", { ...base, workers: [{ name: "a" }, { name: "a" }] }, "BAD_OPTION", /workers\[1\]\.name: duplicate worker name a/],
    ["a bad latency", { ...base, network: { latency: -0.1 } }, "BAD_OPTION", /network\.latency/],
    ["a bad bandwidth", { ...base, network: { bandwidth: 0 } }, "BAD_OPTION", /network\.bandwidth: must be a finite number > 0/],
    ["a bad config value", { ...base, config: { workerSaturation: -1 } }, "CONFIG", /config workerSaturation/],
    ["an unknown config key", { ...base, config: { workerSaturaton: 1 } }, "CONFIG", /workerSaturaton/],
    ["a duplicate key", { ...base, tasks: [{ key: "x", duration: 1 }, { key: "x", duration: 1 }] }, "GRAPH", /task x is defined twice \(tasks\[1\]\)/],
    ["a missing dependency", { ...base, tasks: [{ key: "x", duration: 1, deps: ["nope"] }] }, "UNKNOWN_DEPENDENCY", /task x depends on unknown key nope/],
    [
      "a cycle",
      { ...base, tasks: [{ key: "x", duration: 1, deps: ["y"] }, { key: "y", duration: 1, deps: ["x"] }] },
      "CYCLE",
      /cycle in graph: (x -> y -> x|y -> x -> y)/,
    ],
    [
      "a dependency submitted later",
      { ...base, tasks: [{ key: "x", duration: 1, deps: ["y"] }, { key: "y", duration: 1, submitAt: 1 }] },
      "GRAPH",
      /task x \(submitAt 0\) depends on y, which is submitted later/,
    ],
    ["data on an unknown worker", { ...base, data: [{ key: "d", nbytes: 1, on: ["zz"] }] }, "BAD_OPTION", /data\[0\]\.on\[0\]: no worker named zz/],
    ["data named like a task", { ...base, data: [{ key: "x", nbytes: 1, on: ["a"] }] }, "GRAPH", /x is both a task and data/],
    ["killing an unknown worker", { ...base, actions: [{ at: 1, do: "kill-worker", worker: "zz" }] }, "BAD_OPTION", /actions\[0\]\.worker: zz is not a worker of this scenario/],
    [
      "killing a worker twice",
      { ...base, actions: [{ at: 1, do: "kill-worker", worker: "a" }, { at: 2, do: "kill-worker", worker: "a" }] },
      "BAD_OPTION",
      /actions\[1\]\.worker: a is not running at t=2/,
    ],
    ["adding a running worker", { ...base, actions: [{ at: 1, do: "add-worker", worker: { name: "a" } }] }, "BAD_OPTION", /actions\[0\]\.worker\.name: worker a is already running/],
    ["an unknown action", { ...base, actions: [{ at: 1, do: "explode" }] }, "BAD_OPTION", /actions\[0\]\.do: must be one of "balance", "kill-worker", "add-worker"/],
    ["a stealing pass at a negative time", { ...base, actions: [{ at: -1, do: "balance" }] }, "BAD_OPTION", /actions\[0\]\.at: must be a finite number >= 0, got -1/],
    ["a stealing pass naming a worker", { ...base, actions: [{ at: 1, do: "balance", worker: "a" }] }, "BAD_OPTION", /actions\[0\]\.worker: unknown field/],
  ];
  it.each(cases)("%s is a typed error naming the field", (_what, scenario, code, message) => {
    let caught: unknown;
    try {
      simulate(scenario as Scenario);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(NatschedError);
    expect((caught as NatschedError).code).toBe(code);
    expect((caught as Error).message).toMatch(message);
  });

  it("probes are checked too", () => {
    expect(() => simulate(base, { probes: [{ at: -1, probe: () => {} }] })).toThrow(/probes\[0\]\.at/);
  });

  it("restricting a task to a worker that does not exist is allowed (it waits in no-worker)", () => {
    expect(simulate({ ...base, tasks: [{ key: "x", duration: 1, workers: ["ghost"] }] }).tasks.x!.state).toBe("no-worker");
  });
});

describe("files and reports", () => {
  it("simulateFile reads JSON and YAML scenarios; formatSimResult summarizes a run", async () => {
    const dir = mkdtempSync(join(tmpdir(), "natsched-sim-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const json = join(dir, "scenario.json");
    const yaml = join(dir, "scenario.yaml");
    writeFileSync(json, JSON.stringify(busy));
    writeFileSync(yaml, "workers:\n  - name: a\ntasks:\n  - { key: x, duration: 1 }\n  - { key: y, duration: 1, workers: [nobody] }\n");
    expect(await simulateFile(json)).toEqual(simulate(busy));
    const report = formatSimResult(await simulateFile(yaml));
    expect(report).toContain("makespan   1.001 s (virtual)");
    expect(report).toContain("tasks      2 (memory 1, no-worker 1); 1 executions");
    expect(report).toMatch(/not done {3}1\n {2}y {2}no-worker/);
    await expect(simulateFile(join(dir, "missing.json"))).rejects.toThrow(/cannot read .*missing\.json \(ENOENT\)/);
    writeFileSync(join(dir, "bad.json"), "{");
    await expect(simulateFile(join(dir, "bad.json"))).rejects.toMatchObject({ code: "BAD_OPTION" });
  });
});
