/**
 * The simulator's clients: several of them, sharing keys, releasing them, submitting them
 * again and leaving; their futures in the result; and the scenario checks for it.
 */
import { describe, expect, it } from "vitest";
import { formatSimResult, simulate, type Scenario } from "../sim.js";
import { resolveConfig } from "../machines/config.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import { thrown } from "./errors-helpers.js";

const one = [{ name: "w0" }];

describe("simulator: clients", () => {
  it("an old scenario's client holds a settled future for each output of its graphs", () => {
    const result = simulate({
      workers: one,
      tasks: [
        { key: "a", duration: 1 },
        { key: "b", duration: 1, deps: ["a"] },
        { key: "bad", duration: 0.5, error: "boom" },
      ],
    });
    const futures = result.futures["sim-client"]!;
    expect(Object.keys(futures).sort()).toEqual(["b", "bad"]);
    expect(futures.b).toMatchObject({ state: "memory", wantedAt: 0 });
    expect(futures.bad).toMatchObject({ state: "erred", wantedAt: 0, error: "SimulatedError" });
    // Settled when the report arrived: after the task ended (b's inputs ran first).
    expect(futures.b!.settledAt).toBeGreaterThan(2);
    expect(futures.bad!.settledAt).toBeGreaterThan(0.5);
  });

  it("a key two clients share stays until both have let it go; a client that leaves keeps no future", () => {
    const result = simulate({
      workers: one,
      tasks: [{ key: "a", duration: 1 }],
      actions: [
        { at: 0.5, do: "submit", client: "c1", keys: ["a"] },
        { at: 2, do: "release", keys: ["a"] },
      ],
    });
    expect(result.tasks.a!.state).toBe("memory");
    expect(Object.keys(result.futures)).toEqual(["c1"]);
    const gone = simulate({
      workers: one,
      tasks: [{ key: "a", duration: 1 }],
      actions: [
        { at: 0.5, do: "submit", client: "c1", keys: ["a"] },
        { at: 2, do: "release", keys: ["a"] },
        { at: 3, do: "client-leave", client: "c1" },
      ],
    });
    expect(gone.tasks.a!.state).toBe("forgotten");
    expect(gone.futures).toEqual({});
  });

  it("a failing key released and submitted again fails again, for another client too (issue 20)", () => {
    const scenario: Scenario = {
      workers: one,
      tasks: [{ key: "bad", duration: 0.5, error: "boom" }],
      actions: [
        { at: 1, do: "release", keys: ["bad"] },
        { at: 2, do: "submit", client: "c1", keys: ["bad"] },
        { at: 3, do: "client-leave", client: "c1" },
        { at: 4, do: "submit", keys: ["bad"] },
      ],
    };
    const result = simulate(scenario);
    expect(result.tasks.bad).toMatchObject({ state: "erred", executions: 3 });
    expect(result.futures).toEqual({ "sim-client": { bad: { state: "erred", wantedAt: 4, settledAt: expect.any(Number), error: "SimulatedError" } } });
    expect(result.futures["sim-client"]!.bad!.settledAt).toBeGreaterThan(4.5);
  });

  it("a cancel settles the client's futures of the key's dependents at once, frees the running task, leaves another client's key, and a resubmission computes", () => {
    const scenario: Scenario = {
      workers: one,
      tasks: [
        { key: "a", duration: 2 },
        { key: "b", duration: 1, deps: ["a"] },
        { key: "c", duration: 1 },
      ],
      actions: [
        { at: 0.5, do: "submit", client: "c1", keys: ["c"] },
        { at: 1, do: "cancel", keys: ["a", "c"] },
      ],
    };
    const result = simulate(scenario);
    // sim-client holds b (its graph's output), not a: b is cancelled through a, and a, running, is freed.
    expect(result.futures["sim-client"]!.b).toMatchObject({ state: "cancelled", settledAt: 1 });
    expect(result.futures["sim-client"]!.c).toMatchObject({ state: "cancelled", settledAt: 1 });
    expect(result.tasks.a!.state).toBe("forgotten");
    // Its execution runs to its end on the worker, which drops the outcome.
    const onWorker = result.log.filter((r) => r.kind === "transition" && r.actor === "worker.w0" && r.id === "a").map((r) => r.kind === "transition" && `${r.from}>${r.to}`);
    expect(onWorker).toContain("executing>cancelled");
    expect(result.tasks.b!.state).toBe("forgotten");
    // c1 still wants c: computed for it.
    expect(result.tasks.c!.state).toBe("memory");
    expect(result.futures.c1!.c!.state).toBe("memory");
    const input = result.log.find((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "cancel-keys");
    expect(input?.kind === "input" && input.event).toMatchObject({ client: "sim-client", keys: ["c", "b"] });
    const release = result.log.find((r) => r.kind === "transition" && r.actor === "scheduler" && r.id === "a" && r.event === "RELEASE");
    expect(release).toMatchObject({ from: "processing.assigned", why: { rule: "cancelled", client: "sim-client" } });
    // Submitted again, b computes (with a).
    const again = simulate({ ...scenario, actions: [...scenario.actions!, { at: 3, do: "submit", keys: ["b"] }] });
    expect(again.futures["sim-client"]!.b).toMatchObject({ state: "memory", wantedAt: 3 });
    expect(again.tasks.a!.executions).toBe(2);
  });

  it("a graph building on a key released since carries its spec, so the key is computed again", () => {
    const result = simulate({
      workers: one,
      tasks: [
        { key: "a", duration: 1 },
        { key: "b", duration: 1, deps: ["a"], submitAt: 3, client: "c1" },
      ],
      actions: [{ at: 2, do: "release", keys: ["a"] }],
    });
    // Run again for b (its record kept for b's sake afterwards).
    expect(result.tasks.a).toMatchObject({ state: "released", executions: 2 });
    expect(result.tasks.b!.state).toBe("memory");
    const graph = result.log.find((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "update-graph" && r.event.client === "c1");
    expect(graph?.kind === "input" && (graph.event.tasks as { key: string }[]).map((t) => t.key)).toEqual(["a", "b"]);
  });

  it("a client the scheduler does not know joins before its first graph, and again after it left", () => {
    const result = simulate({
      workers: one,
      tasks: [{ key: "a", duration: 1 }],
      actions: [
        { at: 1, do: "submit", client: "c1", keys: ["a"] },
        { at: 2, do: "client-leave", client: "c1" },
        { at: 3, do: "submit", client: "c1", keys: ["a"] },
      ],
    });
    const ops = result.log.flatMap((r) => (r.kind === "input" && r.actor === "scheduler" && r.event.client === "c1" ? [`${r.t} ${r.event.op}`] : []));
    expect(ops).toEqual(["1 client-join", "1 update-graph", "2 client-leave", "3 client-join", "3 update-graph"]);
    // The log replays: a core fed the scheduler's inputs ends where the live one did.
    const core = new SchedulerCore(resolveConfig({}), { toWorker() {}, toClient() {}, transition() {} });
    for (const r of result.log) if (r.kind === "input" && r.actor === "scheduler") core.handle(r.event as never);
    expect([...core.clients.keys()]).toEqual(["sim-client", "c1"]);
  });

  it("a future that can never settle is pending in the result, and the report lists it", () => {
    const result = simulate({ workers: one, tasks: [{ key: "a", duration: 1, workers: ["nowhere"] }], actions: [{ at: 1, do: "submit", client: "c1", keys: ["a"] }] });
    expect(result.futures).toEqual({
      "sim-client": { a: { state: "pending", wantedAt: 0, settledAt: -1 } },
      c1: { a: { state: "pending", wantedAt: 1, settledAt: -1 } },
    });
    expect(formatSimResult(result)).toContain("waiting    2 futures never settled\n  sim-client: a\n  c1: a");
  });

  it("malformed client actions are typed errors naming the field", () => {
    const base = { workers: one, tasks: [{ key: "a", duration: 1 }], data: [{ key: "d", nbytes: 8, on: ["w0"] }] };
    const cases: [unknown[], string][] = [
      [[{ at: 1, do: "release", keys: ["d"] }], "actions[0].keys[0]"],
      [[{ at: 1, do: "submit", keys: ["nope"] }], "actions[0].keys[0]"],
      [[{ at: 1, do: "client-leave" }], "actions[0].client"],
      [[{ at: 1, do: "release", client: "a b", keys: ["a"] }], "actions[0].client"],
      [[{ at: 1, do: "submit", keys: ["a"], worker: "w0" }], "actions[0].worker"],
    ];
    for (const [actions, field] of cases) {
      const error = thrown(() => simulate({ ...base, actions } as Scenario));
      expect(error, JSON.stringify(actions)).toMatchObject({ code: "BAD_OPTION" });
      expect((error as Error).message).toContain(field);
    }
    expect(thrown(() => simulate({ workers: one, tasks: [{ key: "a", duration: 1, client: "x.y" }] }))).toMatchObject({ code: "BAD_OPTION" });
  });

  it("a dependency on another client's graph of the same time is refused (its graph may come second)", () => {
    const error = thrown(() =>
      simulate({
        workers: one,
        tasks: [
          { key: "a", duration: 1, client: "c1" },
          { key: "b", duration: 1, deps: ["a"], client: "c2" },
        ],
      }),
    );
    expect(error).toMatchObject({ code: "GRAPH" });
  });
});
