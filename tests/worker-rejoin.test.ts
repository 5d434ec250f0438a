/**
 * A worker the scheduler no longer has, registering again (lost while alive, or a new run),
 * in the cores driven directly: what the scheduler does with the keys it says it holds, the
 * void-assignments that follows, and the worker dropping what the scheduler no longer counts
 * on (its earlier assignments, a run it has left). Found by the DST campaigns once the
 * simulator could lose a live worker and stop and start its scheduler (docs/invariants.md).
 */
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../machines/config.js";
import type { ComputeTaskOp, SchedulerToWorker, WorkerToScheduler } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInput } from "../machines/worker/inputs.js";
import { exactReason } from "./exact-reason.js";

type SchedulerOp = SchedulerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;
type WorkerOp = WorkerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

class Scheduler {
  sent: { worker: string; op: SchedulerToWorker }[] = [];
  readonly transitions: string[] = [];
  readonly core = new SchedulerCore(resolveConfig({ workStealing: false }), {
    toWorker: (worker, op) => this.sent.push({ worker, op: structuredClone(op) }),
    toClient: () => undefined,
    transition: (machine, id, event, from, to, why) => {
      exactReason(machine, event, why);
      this.transitions.push(`${machine} ${id}: ${event} ${from}->${to}`);
    },
  });
  private t = 0;

  constructor(workers: string[]) {
    this.core.start(0);
    for (const name of workers) this.register(name);
    this.take();
  }

  handle(op: SchedulerOp): SchedulerReply {
    return this.core.handle({ ...op, t: ++this.t } as SchedulerInput);
  }

  register(name: string, holding?: { key: string; nbytes: number }[]): SchedulerReply {
    return this.handle({ op: "register-worker", name, id: `${name}#1`, nthreads: 1, host: "h", resources: {}, functions: ["f"], ...(holding ? { holding } : {}) });
  }

  submit(key: string, worker: string): void {
    this.handle({ op: "update-graph", client: "c", tasks: [{ key, func: "f", args: [], deps: [], workers: [worker] }], wants: [key] });
  }

  take(): { worker: string; op: SchedulerToWorker }[] {
    const out = this.sent;
    this.sent = [];
    return out;
  }
}

class Worker {
  sent: WorkerToScheduler[] = [];
  readonly transitions: string[] = [];
  readonly core: WorkerCore;
  private t = 0;

  constructor(name = "w", registered: { run?: number } = {}) {
    this.core = new WorkerCore(
      { name, id: `${name}#1`, nthreads: 1, transferIncomingCountLimit: 4 },
      {
        toScheduler: (op) => this.sent.push(structuredClone(op)),
        execute: () => undefined,
        gather: () => undefined,
        freeData: () => undefined,
        transition: (machine, id, event, from, to, why) => {
          exactReason(machine, event, why);
          this.transitions.push(`${id}: ${event} ${from}->${to}${why !== undefined && "rule" in why ? ` (${why.rule})` : ""}`);
        },
      },
    );
    this.handle({ op: "registered", ...registered });
  }

  handle(op: WorkerOp): void {
    this.core.handle({ ...op, t: ++this.t } as WorkerInput);
  }

  compute(key: string, attempt: number, run = 0, deps: ComputeTaskOp["deps"] = []): void {
    this.handle({ op: "compute-task", key, func: "f", args: [], deps, priority: [0, 0, 0], duration: 1, run, attempt });
  }

  state(key: string): string | undefined {
    return this.core.tasks.get(key)?.state;
  }

  take(): { transitions: string[]; sent: WorkerToScheduler[] } {
    const out = { transitions: [...this.transitions], sent: this.sent };
    this.transitions.length = 0;
    this.sent = [];
    return out;
  }
}

describe("the scheduler, a worker registering again", () => {
  it("frees a key it holds whose task erred, instead of throwing on an erred -DATA-> move", () => {
    const s = new Scheduler(["a", "b"]);
    s.submit("x", "a");
    s.handle({ op: "task-erred", worker: "a", id: "a#1", key: "x", error: { name: "Boom", message: "boom" }, attempt: s.core.tasks.get("x")!.attempt });
    expect(s.core.taskState("x")).toBe("erred");
    s.handle({ op: "worker-lost", name: "a", id: "a#1", reason: "no heartbeat" });
    s.take();
    expect(s.register("a", [{ key: "x", nbytes: 8 }])).toEqual({ ok: true, run: 0 });
    expect(s.core.taskState("x")).toBe("erred");
    expect(s.take().map(({ worker, op }) => `${worker} ${op.op} ${"keys" in op ? op.keys.join(",") : ""}`)).toEqual(["a free-keys x", "a void-assignments "]);
  });

  it("takes a result it holds for a task computing elsewhere, stops that worker, and does not count its late result", () => {
    const s = new Scheduler(["a", "b"]);
    s.submit("x", "b");
    const first = s.core.tasks.get("x")!.attempt;
    // a, lost while alive, computed x before the scheduler gave it to b.
    s.handle({ op: "worker-lost", name: "a", id: "a#1", reason: "no heartbeat" });
    s.take();
    s.register("a", [{ key: "x", nbytes: 8 }]);
    expect(s.core.taskState("x")).toBe("memory");
    expect(s.transitions.at(-1)).toBe("task x: DATA processing.assigned->memory");
    const toB = s.take().filter((m) => m.worker === "b");
    // b's assignment is voided by a newer number: its result, on its way, is not the current one.
    expect(toB).toEqual([{ worker: "b", op: { op: "free-keys", keys: ["x"], run: 0, attempt: first + 1 } }]);
    expect(s.core.tasks.get("x")!.attempt).toBe(first + 1);
    s.handle({ op: "task-finished", worker: "b", id: "b#1", key: "x", nbytes: 8, start: 0, stop: 1, attempt: first });
    expect([...s.core.tasks.get("x")!.whoHas].map((ws) => ws.name)).toEqual(["a"]);
  });

  it("voids a fresh registration's earlier assignments after settling its holding, before placing anything on it", () => {
    const s = new Scheduler(["a"]);
    s.submit("x", "b"); // strictly for b, which is not there: no-worker
    s.submit("y", "a");
    s.take();
    s.register("b", [{ key: "stale", nbytes: 8 }]);
    const latest = s.core.attempts - 1; // the compute-task of x is numbered after the void
    expect(s.take().filter((m) => m.worker === "b").map(({ op }) => op)).toEqual([
      { op: "free-keys", keys: ["stale"], run: 0, attempt: latest },
      { op: "void-assignments", run: 0, attempt: latest },
      expect.objectContaining({ op: "compute-task", key: "x", attempt: latest + 1 }),
    ]);
  });
});

describe("the scheduler, add-keys crossing a free-keys", () => {
  it("does not count a copy reported by a worker it told to free it (a report late or copied), until it names the key to it again", () => {
    const s = new Scheduler(["a", "b"]);
    const finish = (key: string, worker: string) =>
      s.handle({ op: "task-finished", worker, id: `${worker}#1`, key, nbytes: 8, start: 0, stop: 1, attempt: s.core.tasks.get(key)!.attempt });
    s.handle({
      op: "update-graph",
      client: "c",
      tasks: [
        { key: "x", func: "f", args: [], deps: [], workers: ["a"] },
        { key: "z", func: "f", args: [], deps: ["x"], workers: ["a"] },
      ],
      wants: ["z"],
    });
    finish("x", "a");
    // b holds a copy (its add-keys); when z is done, x is released and both are told to free it.
    s.handle({ op: "add-keys", worker: "b", id: "b#1", keys: [{ key: "x", nbytes: 8 }] });
    s.take();
    finish("z", "a");
    expect(s.take().filter((m) => m.op.op === "free-keys").map((m) => m.worker).sort()).toEqual(["a", "b"]);
    // Wanted again: computed again on a.
    s.submit("x", "a");
    finish("x", "a");
    // A copy of b's add-keys, delivered late: b dropped x on the free-keys.
    s.handle({ op: "add-keys", worker: "b", id: "b#1", keys: [{ key: "x", nbytes: 8 }] });
    expect([...s.core.tasks.get("x")!.whoHas].map((ws) => ws.name)).toEqual(["a"]);
    // Once the scheduler names x to b (an input of a task there), b's copies count again.
    s.handle({ op: "update-graph", client: "c", tasks: [{ key: "y", func: "f", args: [], deps: ["x"], workers: ["b"] }], wants: ["y"] });
    s.handle({ op: "add-keys", worker: "b", id: "b#1", keys: [{ key: "x", nbytes: 8 }] });
    expect([...s.core.tasks.get("x")!.whoHas].map((ws) => ws.name).sort()).toEqual(["a", "b"]);
  });
});

describe("the worker, voided assignments", () => {
  it("drops what it computes, fetches or keeps as a failure for them, keeps newer assignments and its data, and tells what it holds", () => {
    const w = new Worker();
    w.compute("x", 1); // executing
    w.compute("y", 2, 0, [{ key: "z", nbytes: 8, holders: ["peer"] }]); // waiting, z in flight
    w.compute("m", 3);
    w.handle({ op: "execute-done", key: "x", nbytes: 8, start: 0, stop: 1 }); // x in memory, m executing
    w.compute("e", 4);
    w.handle({ op: "execute-done", key: "m", nbytes: 8, start: 0, stop: 1 });
    w.handle({ op: "execute-failed", key: "e", error: { name: "Boom", message: "boom" }, start: 0, stop: 1 });
    w.compute("n", 9); // newer than the void: kept
    w.take();
    w.handle({ op: "void-assignments", run: 0, attempt: 8 });
    const { transitions, sent } = w.take();
    expect(transitions).toEqual([
      "y: FREE waiting->released (void-assignments)",
      "z: FREE flight->cancelled",
      "e: FREE error->released (void-assignments)",
    ]);
    expect(w.state("x")).toBe("memory");
    expect(w.state("m")).toBe("memory");
    expect(w.state("n")).toBe("executing");
    expect(sent).toEqual([{ op: "add-keys", worker: "w", id: "w#1", keys: [{ key: "x", nbytes: 8 }, { key: "m", nbytes: 8 }] }]);
    // A copy of a voided assignment arriving late is dropped.
    w.compute("y", 2);
    expect(w.take().transitions).toEqual(["y: STALE released->released (stale-assignment)"]);
  });

  it("cancels an execution of a voided assignment: its outcome is dropped, not reported", () => {
    const w = new Worker();
    w.compute("x", 1);
    w.handle({ op: "void-assignments", run: 0, attempt: 1 });
    expect(w.state("x")).toBe("cancelled");
    w.take();
    w.handle({ op: "execute-done", key: "x", nbytes: 8, start: 0, stop: 1 });
    expect(w.take()).toEqual({ transitions: ["x: DONE cancelled->released"], sent: [] });
  });
});

describe("the worker, a registration's claims", () => {
  it("reports a key it said it held and lost before the scheduler answered, and the scheduler uncounts it", () => {
    const s = new Scheduler(["a"]);
    s.submit("x", "a");
    const attempt = s.core.tasks.get("x")!.attempt;
    s.handle({ op: "task-finished", worker: "a", id: "a#1", key: "x", nbytes: 8, start: 0, stop: 1, attempt });
    const w = new Worker("a", { run: 0 });
    w.compute("x", attempt);
    w.handle({ op: "execute-done", key: "x", nbytes: 8, start: 0, stop: 1 });
    // The scheduler frees x on a (nobody wants it) and, before that reaches a, loses a; a
    // registers again, holding x.
    s.handle({ op: "release-keys", client: "c", keys: ["x"] });
    const free = s.take().find((m) => m.op.op === "free-keys")!.op;
    s.handle({ op: "worker-lost", name: "a", id: "a#1", reason: "no heartbeat" });
    s.submit("x", "a"); // wanted again meanwhile: no-worker
    w.handle({ op: "register-again" });
    const holding = w.core.holding();
    expect(holding).toEqual([{ key: "x", nbytes: 8 }]);
    w.handle(free as WorkerOp); // the late free-keys: x is dropped
    s.register("a", holding);
    expect(s.core.taskState("x")).toBe("memory"); // taken from the claim
    w.take();
    for (const { op } of s.take().filter((m) => m.worker === "a")) w.handle(op as WorkerOp);
    const missing = w.take().sent.filter((op) => op.op === "missing-data");
    expect(missing).toEqual([{ op: "missing-data", worker: "a", id: "a#1", key: "x", holder: "a" }]);
    s.handle(missing[0]!);
    // Uncounted: no replica left, so x is computed again.
    expect(s.core.tasks.get("x")!.whoHas.size).toBe(0);
    expect(s.core.taskState("x")).toBe("processing.assigned");
  });
});

describe("the worker, scheduler runs", () => {
  it("drops a late instruction of the run it left for an announced new one", () => {
    const w = new Worker("w", { run: 0 });
    w.compute("a", 1);
    w.handle({ op: "execute-done", key: "a", nbytes: 8, start: 0, stop: 1 });
    w.handle({ op: "new-run", run: 5 });
    w.handle({ op: "new-run", run: 5 }); // a repeated announcement changes nothing
    w.take();
    w.handle({ op: "free-keys", keys: ["a"], run: 0, attempt: 3 });
    w.compute("b", 2, 0);
    expect(w.take().transitions).toEqual(["a: STALE memory->memory (past-run)", "b: STALE released->released (past-run)"]);
    expect(w.state("a")).toBe("memory");
    w.compute("b", 1, 5);
    expect(w.state("b")).toBe("executing");
  });

  it("knows the run it registered with before any of its instructions arrives", () => {
    const w = new Worker("w", { run: 0 });
    w.handle({ op: "new-run", run: 5 });
    w.take();
    // The first instruction of run 0 was overtaken by the announcement of run 5.
    w.compute("a", 1, 0);
    expect(w.take().transitions).toEqual(["a: STALE released->released (past-run)"]);
  });
});

describe("the worker, odd leftovers", () => {
  it("gives up a copy only the scheduler asked for once no holder is left, rather than fetch it for ever", () => {
    const w = new Worker();
    w.handle({ op: "acquire-replicas", keys: [{ key: "k", nbytes: 8, holders: ["r"] }] });
    expect(w.state("k")).toBe("flight");
    w.handle({ op: "gather-failed", from: "r", keys: ["k"], reason: "r left" });
    expect(w.state("k")).toBeUndefined();
  });

  it("keeps data scattered again onto a key whose earlier copy was freed while a task still held its record", () => {
    const w = new Worker();
    w.handle({ op: "put-data", keys: [{ key: "d", nbytes: 8 }] });
    w.compute("c", 1, 0, [{ key: "d", nbytes: 8, holders: ["w"] }]); // d confirmed, c executing
    w.handle({ op: "free-keys", keys: ["c", "d"], run: 0, attempt: 1 }); // c cancelled, d released (c's record holds it)
    expect([w.state("c"), w.state("d")]).toEqual(["cancelled", "released"]);
    w.handle({ op: "put-data", keys: [{ key: "d", nbytes: 8 }] });
    w.handle({ op: "execute-done", key: "c", nbytes: 8, start: 0, stop: 1 });
    // c is gone; the new copy of d stays, for the scheduler that registered it.
    expect([w.state("c"), w.state("d")]).toEqual([undefined, "memory"]);
  });
});
