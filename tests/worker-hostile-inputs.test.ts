/**
 * Scheduler ops a worker core once mishandled (found by tests/fuzz-scheduler-host.test.ts and
 * tests/fuzz-worker.test.ts): each is taken without an exception, and a task is never left
 * waiting for an input nobody can deliver.
 */
import { describe, expect, it } from "vitest";
import type { ComputeTaskOp, DepInfo, WorkerToScheduler } from "../machines/protocol.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInput } from "../machines/worker/inputs.js";

type Op = WorkerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

class Worker {
  sent: WorkerToScheduler[] = [];
  gathers: { from: string; keys: string[] }[] = [];
  readonly core = new WorkerCore(
    { name: "w", id: "w#1", nthreads: 1, transferIncomingCountLimit: 4 },
    {
      toScheduler: (op) => this.sent.push(structuredClone(op)),
      execute: () => undefined,
      gather: (from, keys) => this.gathers.push({ from, keys: [...keys] }),
      freeData: () => undefined,
      transition: () => undefined,
    },
  );
  private t = 0;

  constructor() {
    this.handle({ op: "registered" });
  }

  handle(op: Op): void {
    this.core.handle({ ...op, t: ++this.t } as WorkerInput);
  }

  compute(key: string, deps: DepInfo[], attempt = 1): void {
    const op: ComputeTaskOp = { op: "compute-task", key, func: "f", args: [], deps, priority: [0, 0, 0], duration: 0.5, run: 1, attempt };
    this.handle(op);
  }
}

describe("a compute-task naming this worker as the holder of an input it does not have", () => {
  it("is answered with missing-data about itself (the scheduler counts a copy that is not here)", () => {
    const w = new Worker();
    w.compute("y", [{ key: "x", nbytes: 8, holders: ["w"] }]);
    expect(w.sent).toEqual([{ op: "missing-data", worker: "w", id: "w#1", key: "x", holder: "w" }]);
    expect(w.core.tasks.get("y")?.state).toBe("waiting");
    // The other holders named are fetched from as usual.
    w.sent = [];
    w.compute("z", [{ key: "x2", nbytes: 8, holders: ["w", "p"] }], 2);
    expect(w.sent).toEqual([{ op: "missing-data", worker: "w", id: "w#1", key: "x2", holder: "w" }]);
    expect(w.gathers).toEqual([{ from: "p", keys: ["x2"] }]);
  });

  it("is said for an acquire-replicas too, and not for a key it has", () => {
    const w = new Worker();
    w.handle({ op: "acquire-replicas", keys: [{ key: "x", nbytes: 8, holders: ["w"] }] });
    expect(w.sent).toEqual([{ op: "missing-data", worker: "w", id: "w#1", key: "x", holder: "w" }]);
    w.sent = [];
    w.compute("a", []);
    w.handle({ op: "execute-done", key: "a", nbytes: 8, start: 0, stop: 1 });
    w.sent = [];
    w.compute("b", [{ key: "a", nbytes: 8, holders: ["w"] }], 2);
    expect(w.sent).toEqual([]);
    expect(w.core.tasks.get("b")?.state).toBe("executing");
  });
});
