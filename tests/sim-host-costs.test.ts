/** The simulator's host costs (scenario `hostCosts`, sim/host-costs.ts): each adds what it says, where it says. */
import { describe, expect, it } from "vitest";
import { simulate } from "../sim/simulator.js";
import type { Scenario } from "../sim/scenario.js";
import type { InputRecord, LogRecord } from "../log/types.js";

const LATENCY = 0.001;

/** One worker, one thread: a chain a -> b, and c independent. */
const base: Scenario = {
  config: { workStealing: false },
  network: { latency: LATENCY },
  workers: [{ name: "w" }],
  tasks: [
    { key: "a", duration: 0.1 },
    { key: "b", deps: ["a"], duration: 0.1 },
    { key: "c", duration: 0.1 },
  ],
};

const withCosts = (hostCosts: Scenario["hostCosts"]): Scenario => ({ ...structuredClone(base), hostCosts });
const inputs = (log: LogRecord[], actor: string, op: string) => log.filter((r): r is InputRecord => r.kind === "input" && r.actor === actor && r.event.op === op);

describe("simulator host costs", () => {
  it("none given, or all 0, is the plain model: the same log", () => {
    const plain = simulate(base);
    const zero = simulate(withCosts({ schedulerDelay: 0, workerDelay: 0, taskStart: 0, graphIntake: 0, warmUp: 0 }));
    expect(zero.log).toEqual(plain.log);
    // c runs while the scheduler hears of a and sends b.
    expect(plain.makespan).toBeCloseTo(LATENCY + 3 * 0.1, 9);
  });

  it("taskStart holds the thread before each task's duration", () => {
    const result = simulate(withCosts({ taskStart: 0.01 }));
    expect(result.makespan).toBeCloseTo(simulate(base).makespan + 3 * 0.01, 9);
    for (const done of inputs(result.log, "worker.w", "execute-done")) expect(Number(done.event.stop) - Number(done.event.start)).toBeCloseTo(0.1, 9);
  });

  it("workerDelay and schedulerDelay add to every message to that role", () => {
    const plain = simulate(base);
    const toWorker = simulate(withCosts({ workerDelay: 0.02 }));
    const toScheduler = simulate(withCosts({ schedulerDelay: 0.03 }));
    // The first compute-task waits in the worker's host; so does every one after it.
    const first = (r: typeof plain) => inputs(r.log, "worker.w", "compute-task")[0]!.t;
    expect(first(toWorker) - first(plain)).toBeCloseTo(0.02, 9);
    // The scheduler hears of a later, so b (which needs a) is sent later; without c to run
    // meanwhile, the run ends that much later.
    const finished = (r: typeof plain, key: string) => inputs(r.log, "scheduler", "task-finished").find((i) => i.event.key === key)!.t;
    expect(finished(toScheduler, "a") - finished(plain, "a")).toBeCloseTo(0.03, 9);
    const chain = (hostCosts: Scenario["hostCosts"]) => simulate({ ...withCosts(hostCosts), tasks: base.tasks.slice(0, 2) }).makespan;
    expect(chain({ schedulerDelay: 0.03 }) - chain({})).toBeCloseTo(0.03, 9);
    expect(chain({})).toBeCloseTo(3 * LATENCY + 2 * 0.1, 9);
  });

  it("graphIntake and warmUp keep the scheduler busy with a graph: its mail leaves after, mail to it waits", () => {
    const result = simulate(withCosts({ graphIntake: 0.01, warmUp: 0.2 }));
    // Three new tasks and the first graph's warm-up: 0.23 s before anything leaves.
    expect(inputs(result.log, "worker.w", "compute-task")[0]!.t).toBeCloseTo(0.23 + LATENCY, 9);
    // A second graph later pays no warm-up, and only for its new task (it resends a's spec).
    const later = simulate({ ...withCosts({ graphIntake: 0.01, warmUp: 0.2 }), tasks: [...base.tasks, { key: "d", deps: ["a"], duration: 0.1, submitAt: 0.5 }] });
    const d = inputs(later.log, "worker.w", "compute-task").find((i) => i.event.key === "d")!;
    const graph = inputs(later.log, "scheduler", "update-graph")[1]!;
    expect(graph.event.tasks as unknown[]).toHaveLength(2);
    expect(d.t).toBeGreaterThanOrEqual(graph.t + 0.01 + LATENCY - 1e-9);
    expect(d.t).toBeLessThan(graph.t + 0.2);
  });

  it("stealAnswer holds a victim's mail after it takes steal requests: its answers leave that much later", () => {
    // Eight tasks pinned (loosely) to a, b idle: a stealing pass sends steal requests to a.
    const scenario: Scenario = {
      network: { latency: LATENCY },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: Array.from({ length: 8 }, (_, i) => ({ key: `t-${i}`, duration: 0.5, workers: ["a"], allowOtherWorkers: true })),
    };
    const answerDelays = (hostCosts: Scenario["hostCosts"]) => {
      const log = simulate({ ...structuredClone(scenario), hostCosts }).log;
      const asked = new Map(inputs(log, "worker.a", "steal-request").map((i) => [i.event.key, i.t]));
      return inputs(log, "scheduler", "steal-response").map((i) => i.t - asked.get(i.event.key)!);
    };
    const plain = answerDelays({});
    const held = answerDelays({ stealAnswer: 0.05 });
    expect(plain.length).toBeGreaterThan(0);
    expect(held).toHaveLength(plain.length);
    expect(Math.min(...plain)).toBeCloseTo(LATENCY, 9);
    expect(Math.min(...held)).toBeCloseTo(0.05 + LATENCY, 9);
  });

  it("rejects a negative or unknown cost with the field's path", () => {
    expect(() => simulate(withCosts({ taskStart: -1 }))).toThrow(/hostCosts\.taskStart/);
    expect(() => simulate(withCosts({ gc: 1 } as never))).toThrow(/hostCosts\.gc: unknown field/);
  });
});
