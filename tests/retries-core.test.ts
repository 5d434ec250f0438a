/**
 * Retries and fire-and-forget in the scheduler core alone (TaskSpec.retries, the
 * fire-and-forget op): what it decides, transition by transition.
 */
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../machines/config.js";
import { FIRE_AND_FORGET, type SchedulerToClient, type SchedulerToWorker, type TaskSpec } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";
import { readReason, type Why } from "../machines/reasons.js";
import { schedulerOpProblem } from "../actors/validate-ops.js";
import { exactReason } from "./exact-reason.js";

type Op = SchedulerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

/** A core with one worker "w" (id "w#1"), and what it said. */
class Core {
  readonly core: SchedulerCore;
  readonly moves: { key: string; event: string; from: string; to: string; why: Why | undefined }[] = [];
  readonly toWorker: SchedulerToWorker[] = [];
  readonly toClient: { client: string; op: SchedulerToClient }[] = [];
  private t = 0;

  constructor(allowedFailures = 3) {
    this.core = new SchedulerCore(resolveConfig({ allowedFailures }), {
      toWorker: (_worker, op) => this.toWorker.push(structuredClone(op)),
      toClient: (client, op) => this.toClient.push({ client, op: structuredClone(op) }),
      transition: (machine, id, event, from, to, why) => {
        exactReason(machine, event, why);
        if (machine === "task") this.moves.push({ key: id, event, from, to, why });
      },
    });
    this.core.start(0);
    this.handle({ op: "register-worker", name: "w", id: "w#1", nthreads: 1, host: "h", resources: {}, functions: ["f"] });
  }

  handle(op: Op): SchedulerReply {
    return this.core.handle({ ...op, t: ++this.t } as SchedulerInput);
  }

  graph(tasks: TaskSpec[], wants: string[], client = "c1"): SchedulerReply {
    return this.handle({ op: "update-graph", client, tasks, wants });
  }

  err(key: string, message: string): void {
    this.handle({ op: "task-erred", worker: "w", id: "w#1", key, error: { name: "Error", message }, attempt: this.core.tasks.get(key)!.attempt, run: this.core.run });
  }

  finish(key: string): void {
    this.handle({ op: "task-finished", worker: "w", id: "w#1", key, nbytes: 8, start: 0, stop: 0.01, attempt: this.core.tasks.get(key)!.attempt, run: this.core.run });
  }

  state(key: string): string | undefined {
    return this.core.taskState(key);
  }
}

const task = (key: string, deps: string[] = [], extra: Partial<TaskSpec> = {}): TaskSpec => ({ key, func: "f", args: [], deps, ...extra });

describe("retries in the scheduler core", () => {
  it("a task failing twice with retries=2 is run a third time; each retry is a RELEASE with its reason; its dependent waits and then runs", () => {
    const c = new Core();
    c.graph([task("x", [], { retries: 2 }), task("y", ["x"])], ["y"]);
    c.err("x", "first");
    expect(c.state("x")).toBe("processing.assigned");
    expect(c.state("y")).toBe("waiting");
    c.err("x", "second");
    expect(c.state("x")).toBe("processing.assigned");
    const retries = c.moves.filter((m) => m.key === "x" && m.event === "RELEASE").map((m) => readReason({ machine: "task", event: "RELEASE", why: m.why }));
    expect(retries).toEqual([
      { kind: "retry", why: { rule: "retry", worker: "w", try: 1, left: 1, message: "first" } },
      { kind: "retry", why: { rule: "retry", worker: "w", try: 2, left: 0, message: "second" } },
    ]);
    // The worker keeps each failure until freed: freed before the task is assigned again.
    const ops = c.toWorker.filter((op) => op.op !== "void-assignments").map((op) => op.op);
    expect(ops).toEqual(["compute-task", "free-keys", "compute-task", "free-keys", "compute-task"]);
    c.finish("x");
    expect(c.state("y")).toBe("processing.assigned");
    c.finish("y");
    expect(c.toClient.map((r) => r.op.op)).toEqual(["key-in-memory"]);
  });

  it("retries exhausted: erred with the last failure's error, and the dependent with it", () => {
    const c = new Core();
    c.graph([task("x", [], { retries: 1 }), task("y", ["x"])], ["x", "y"]);
    c.err("x", "first");
    c.err("x", "second");
    expect(c.state("x")).toBe("erred");
    expect(c.state("y")).toBe("erred");
    expect(c.toClient.map((r) => r.op)).toEqual([
      { op: "key-erred", key: "x", failedKey: "x", error: { name: "Error", message: "second" } },
      { op: "key-erred", key: "y", failedKey: "x", error: { name: "Error", message: "second" } },
    ]);
  });

  it("a worker dying under the task counts against allowedFailures, not its retries", () => {
    const c = new Core(0);
    c.graph([task("x", [], { retries: 5 })], ["x"]);
    c.handle({ op: "worker-lost", name: "w", id: "w#1", reason: "test" });
    expect(c.state("x")).toBe("erred");
    expect(c.core.tasks.get("x")!.retries).toBe(5);
    expect((c.toClient[0]!.op as { error: { name: string } }).error.name).toBe("KilledWorker");
  });

  it("a retries value that is not a whole number >= 0 refuses the graph with BAD_OPTION", () => {
    for (const retries of [-1, 1.5, Number.NaN, "2" as unknown as number]) {
      const c = new Core();
      const reply = c.graph([task("x", [], { retries })], ["x"]);
      expect(reply).toMatchObject({ ok: false, error: { name: "BadOptionError", code: "BAD_OPTION" } });
      expect(c.state("x")).toBeUndefined();
    }
  });
});

describe("fire-and-forget in the scheduler core", () => {
  it("a task fired and forgotten runs after its client released it, with what it needs, and is forgotten once in memory", () => {
    const c = new Core();
    c.graph([task("x"), task("y", ["x"])], ["y"]);
    c.handle({ op: "fire-and-forget", client: "c1", keys: ["y"] });
    c.handle({ op: "release-keys", client: "c1", keys: ["y"] });
    expect(c.core.tasks.get("y")!.whoWants).toEqual(new Set([FIRE_AND_FORGET]));
    c.finish("x");
    c.finish("y");
    expect(c.core.tasks.size).toBe(0);
    expect(c.toClient).toEqual([]);
  });

  it("an erred task fired and forgotten is forgotten too, and freed on the worker", () => {
    const c = new Core();
    c.graph([task("x")], ["x"]);
    c.handle({ op: "fire-and-forget", client: "c1", keys: ["x"] });
    c.handle({ op: "client-leave", client: "c1" });
    c.err("x", "boom");
    expect(c.core.tasks.size).toBe(0);
    expect(c.toWorker.at(-1)).toMatchObject({ op: "free-keys", keys: ["x"] });
  });

  it("a key already done, or unknown, is left alone", () => {
    const c = new Core();
    c.graph([task("x")], ["x"]);
    c.finish("x");
    c.handle({ op: "fire-and-forget", client: "c1", keys: ["x", "nope"] });
    expect(c.core.tasks.get("x")!.whoWants).toEqual(new Set(["c1"]));
    c.handle({ op: "release-keys", client: "c1", keys: ["x"] });
    expect(c.core.tasks.size).toBe(0);
  });
});

describe("the name fire-and-forget wants keys under", () => {
  it("is no client's: an op naming it as its client is refused at the wire", () => {
    for (const op of ["client-join", "release-keys", "cancel-keys", "fire-and-forget", "update-graph"]) {
      expect(schedulerOpProblem({ op, client: FIRE_AND_FORGET, keys: [], tasks: [], wants: [] }), op).toBeDefined();
      expect(schedulerOpProblem({ op, client: "c1", keys: [], tasks: [], wants: [] }), op).toBeUndefined();
    }
  });
});

describe("fire-and-forget of a released key", () => {
  it("a key kept released for its erred dependent, fired and forgotten by a raw client, runs, and is released again once done", () => {
    const c = new Core();
    c.graph([task("x"), task("y", ["x"]), task("z", ["y"])], ["z"]);
    c.finish("x");
    c.err("y", "boom");
    // No longer needed, x is released, its record kept while the erred y depends on it.
    expect(c.state("x")).toBe("released");
    c.handle({ op: "fire-and-forget", client: "c2", keys: ["x"] });
    expect(c.state("x")).toBe("processing.assigned");
    c.finish("x");
    expect(c.state("x")).toBe("released");
    expect(c.core.tasks.get("x")!.whoWants).toBeNull();
  });
});
