/**
 * natsched's guard on Dask's root-ish heuristic (config rootishInputLocality): a root-ish
 * task whose inputs cost more to copy than the work a copy lets another worker take stays
 * with its inputs. The bad-steal benchmark's shape (W4): 200 tasks of 1 ms reading one
 * 200 MB array, where Dask copies the array to every worker.
 */
import { describe, expect, it } from "vitest";
import { inputsKeptLocal, isRootish, isRootishGroup } from "../machines/scheduler/placement.js";
import { simulate, type Scenario as SimScenario, type SimView } from "../sim.js";
import { assignments, independentTasks, tasksPerWorker } from "./sim-helpers.js";
import { readReason } from "../machines/reasons.js";

const MB = 1_000_000;
const workers = ["a", "b", "c", "d"].map((name) => ({ name, nthreads: 1 }));

/** n tasks of `ms` reading `bytes` held on worker a (and on `alsoOn`). */
function readers(n: number, bytes: number, ms: number, config: SimScenario["config"] = {}, alsoOn: string[] = []): SimScenario {
  return {
    config,
    workers,
    data: [{ key: "big", nbytes: bytes, on: ["a", ...alsoOn] }],
    tasks: independentTasks("fast", n, { duration: ms / 1000, deps: ["big"], nbytes: 8 }),
  };
}

function atStart<T>(scenario: SimScenario, look: (view: SimView) => T): T {
  let seen: { value: T } | undefined;
  simulate(scenario, { probes: [{ at: 0, probe: (view) => (seen = { value: look(view) }) }] });
  expect(seen).toBeDefined();
  return seen!.value;
}

const bytesMoved = (scenario: SimScenario): number => simulate(scenario).transfers.reduce((sum, t) => sum + t.nbytes, 0);

describe("a 200 MB input read by 200 tasks of 1 ms (W4)", () => {
  it("is a root-ish group by Dask's rule, but its tasks stay with the input", () => {
    const seen = atStart(readers(200, 200 * MB, 1), (view) => {
      const ts = view.scheduler.tasks.get("fast-0")!;
      return { group: isRootishGroup(view.scheduler, ts), rootish: isRootish(view.scheduler, ts), kept: inputsKeptLocal(view.scheduler, ts) };
    });
    // Unmeasured prefix: copying 200 MB at 100 MB/s (2 s) against the guess of one task (0.5 s).
    expect(seen).toEqual({ group: true, rootish: false, kept: { copy: 2, share: 0.5 } });
  });

  it("runs every task on the worker holding the input and moves nothing; the reason says why", () => {
    const scenario = readers(200, 200 * MB, 1);
    const result = simulate(scenario);
    expect(tasksPerWorker(result)).toEqual({ a: 200 });
    expect(result.transfers).toEqual([]);
    const first = assignments(result.log)[0]!;
    expect(first.worker).toBe("a");
    const assign = result.log.find((r) => r.kind === "transition" && r.event === "ASSIGN" && r.id === first.key);
    const reason = assign?.kind === "transition" ? readReason(assign) : undefined;
    expect(reason?.kind === "only-candidate" || reason?.kind === "objective" ? reason.why.inputsKeptLocal : reason).toEqual({ copy: 2, share: 0.5 });
  });

  it("with rootishInputLocality off, spreads the tasks and copies the input to every worker, as Dask does", () => {
    const scenario = readers(200, 200 * MB, 1, { rootishInputLocality: false });
    const result = simulate(scenario);
    expect(Object.keys(tasksPerWorker(result)).sort()).toEqual(["a", "b", "c", "d"]);
    expect(result.transfers.map((t) => [t.key, t.to]).sort()).toEqual([
      ["big", "b"],
      ["big", "c"],
      ["big", "d"],
    ]);
  });

  it("a measured duration keeps the tasks local too: 200 / 4 threads x 1 ms is less than the 2 s copy", () => {
    const scenario = readers(200, 200 * MB, 1, { defaultTaskDurations: { fast: 0.001 } });
    const kept = atStart(scenario, (view) => inputsKeptLocal(view.scheduler, view.scheduler.tasks.get("fast-0")!));
    expect(kept).toEqual({ copy: 2, share: 0.05 });
    expect(bytesMoved(scenario)).toBe(0);
  });
});

describe("inputs that are cheap to copy next to the work: spread as Dask does", () => {
  it("a 10 MB input on a guess: 0.1 s to copy is less than the 0.5 s guess", () => {
    const scenario = readers(200, 10 * MB, 1);
    expect(atStart(scenario, (view) => isRootish(view.scheduler, view.scheduler.tasks.get("fast-0")!))).toBe(true);
    expect(Object.keys(tasksPerWorker(simulate(scenario))).sort()).toEqual(["a", "b", "c", "d"]);
  });

  it("a 10 MB input, 1,000 measured tasks of 1 ms: 250 ms of work per thread outweighs a 0.1 s copy", () => {
    const scenario = readers(1000, 10 * MB, 1, { defaultTaskDurations: { fast: 0.001 } });
    expect(atStart(scenario, (view) => inputsKeptLocal(view.scheduler, view.scheduler.tasks.get("fast-0")!))).toBeNull();
    expect(bytesMoved(scenario)).toBe(30 * MB);
  });

  it("an input already on every worker costs nothing to copy", () => {
    const scenario = readers(200, 200 * MB, 1, {}, ["b", "c", "d"]);
    expect(atStart(scenario, (view) => isRootish(view.scheduler, view.scheduler.tasks.get("fast-0")!))).toBe(true);
    const result = simulate(scenario);
    expect(result.transfers).toEqual([]);
    expect(Object.keys(tasksPerWorker(result)).sort()).toEqual(["a", "b", "c", "d"]);
  });

  it("tasks without inputs are never held back", () => {
    const scenario: SimScenario = { workers, tasks: independentTasks("root", 20, { duration: 0.001 }) };
    expect(atStart(scenario, (view) => inputsKeptLocal(view.scheduler, view.scheduler.tasks.get("root-0")!))).toBeNull();
  });
});
