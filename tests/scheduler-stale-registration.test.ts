/**
 * Messages of the past. A registration from a worker incarnation the scheduler has removed (lost, unregistered or
 * replaced), arriving while a newer incarnation of that name runs, is from the past: it is
 * refused (FORBIDDEN) and the live incarnation keeps its place. Found by the DST campaign
 * (tests/fixtures/dst/liveness-06f35abc.json): a register-again delayed past the worker's
 * death and its replacement closed the replacement, and tasks restricted loosely to a dead
 * worker then waited in no-worker for ever.
 */
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../machines/config.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";

function scheduler() {
  const core = new SchedulerCore(resolveConfig({ workStealing: false }), {
    toWorker: () => undefined,
    toClient: () => undefined,
    transition: () => undefined,
  });
  let t = 0;
  core.start(0);
  const handle = (op: Record<string, unknown>): SchedulerReply => core.handle({ ...op, t: ++t } as unknown as SchedulerInput);
  const register = (name: string, id: string) => handle({ op: "register-worker", name, id, nthreads: 1, host: "h", resources: {}, functions: ["f"] });
  return { core, handle, register };
}

describe("registration of a removed incarnation", () => {
  it("is refused while a newer incarnation runs, reported lost before it ever registered in this run", () => {
    const s = scheduler();
    s.handle({ op: "worker-lost", name: "w1", id: "w1-old", reason: "killed" });
    expect(s.register("w1", "w1-new")).toEqual({ ok: true, run: 0 });
    const late = s.register("w1", "w1-old");
    expect(late.ok).toBe(false);
    expect(!late.ok && late.error.code).toBe("FORBIDDEN");
    expect(s.core.workers.get("w1")?.id).toBe("w1-new");
    expect(s.core.workers.get("w1")?.state).toBe("running");
  });

  it("is refused after being replaced, so a zombie cannot take its name back", () => {
    const s = scheduler();
    s.register("w1", "a");
    s.register("w1", "b");
    expect(s.register("w1", "a").ok).toBe(false);
    expect(s.core.workers.get("w1")?.id).toBe("b");
  });

  it("is accepted when no other incarnation of the name runs (a worker taken for lost comes back)", () => {
    const s = scheduler();
    s.register("w1", "a");
    s.handle({ op: "worker-lost", name: "w1", id: "a", reason: "heartbeat" });
    expect(s.core.workers.has("w1")).toBe(false);
    expect(s.register("w1", "a").ok).toBe(true);
    expect(s.core.workers.get("w1")?.id).toBe("a");
  });

  it("is refused when it says it started before the incarnation that runs, though never removed (DST exclusive-execution-f5ffa4ff)", () => {
    const s = scheduler();
    const register = (id: string, started: number) =>
      s.handle({ op: "register-worker", name: "w0", id, nthreads: 1, host: "h", resources: {}, functions: ["f"], started });
    // The scheduler restarted, the old incarnation died unnoticed, a new one joined; the old one's registration was late.
    expect(register("w0-new", 0.3).ok).toBe(true);
    const late = register("w0-old", 0);
    expect(!late.ok && late.error.code).toBe("FORBIDDEN");
    expect(s.core.workers.get("w0")?.id).toBe("w0-new");
    // One started later replaces it, as any new incarnation does.
    expect(register("w0-newer", 0.5).ok).toBe(true);
    expect(s.core.workers.get("w0")?.id).toBe("w0-newer");
  });

  it("a new incarnation still replaces a running one", () => {
    const s = scheduler();
    s.register("w1", "a");
    expect(s.register("w1", "b").ok).toBe(true);
    expect(s.core.workers.get("w1")?.id).toBe("b");
  });
});

describe("a worker's report of an earlier run", () => {
  it("is dropped: attempt numbers start afresh in a new run, so it could match a new assignment (DST exclusive-execution-67bd94e4)", () => {
    const sent: { worker: string; op: { op: string; attempt?: number } }[] = [];
    const core = new SchedulerCore(resolveConfig({ workStealing: false }), {
      toWorker: (worker, op) => sent.push({ worker, op: op as { op: string; attempt?: number } }),
      toClient: () => undefined,
      transition: () => undefined,
    });
    const run = 5;
    core.start(run);
    const input = (op: Record<string, unknown>) => core.handle({ ...op, t: run + 1 } as unknown as SchedulerInput);
    input({ op: "register-worker", name: "w0", id: "w0#1", nthreads: 1, host: "h", resources: {}, functions: ["f"] });
    input({ op: "update-graph", client: "c", tasks: [{ key: "k", func: "f", args: [], deps: [] }], wants: ["k"] });
    const attempt = sent.find((m) => m.op.op === "compute-task")?.op.attempt;
    expect(attempt).toBe(1);
    // The old run also numbered its first assignment 1: its failure arrives late.
    input({ op: "task-erred", worker: "w0", id: "w0#1", key: "k", error: { name: "E", message: "old" }, attempt: 1, run: 0 });
    expect(core.tasks.get("k")?.state).toBe("processing.assigned");
    input({ op: "task-finished", worker: "w0", id: "w0#1", key: "k", nbytes: 8, start: 0, stop: 1, attempt: 1, run: 0 });
    expect(core.tasks.get("k")?.state).toBe("processing.assigned");
    // This run's report is taken.
    input({ op: "task-finished", worker: "w0", id: "w0#1", key: "k", nbytes: 8, start: 0, stop: 1, attempt: 1, run });
    expect(core.tasks.get("k")?.state).toBe("memory");
  });
});

describe("a stale result of a key in memory", () => {
  it("counts the worker's copy, so it is freed there later (DST quiescence-132d736d)", () => {
    const s = scheduler();
    s.register("w1", "w1#1");
    s.handle({ op: "update-graph", client: "c", tasks: [{ key: "leaf", func: "f", args: [], deps: [] }], wants: ["leaf"] });
    expect(s.core.tasks.get("leaf")?.processingOn?.name).toBe("w1");
    // Another worker brings the key along as it registers: it is data now, and w1 is told to stop.
    s.handle({ op: "register-worker", name: "w2", id: "w2#1", nthreads: 1, host: "h", resources: {}, functions: ["f"], holding: [{ key: "leaf", nbytes: 8 }] });
    expect(s.core.tasks.get("leaf")?.state).toBe("memory");
    // A task on w1 needs it: w1 is to fetch it from w2, but it finished computing it first and reports that.
    s.handle({ op: "update-graph", client: "c", tasks: [{ key: "sum", func: "f", args: [], deps: ["leaf"], workers: ["w1"] }], wants: ["sum"] });
    expect(s.core.tasks.get("sum")?.processingOn?.name).toBe("w1");
    s.handle({ op: "task-finished", worker: "w1", id: "w1#1", key: "leaf", nbytes: 8, start: 0, stop: 1, attempt: 99, run: 0 });
    expect([...(s.core.tasks.get("leaf")?.whoHas ?? [])].map((ws) => ws.name).sort()).toEqual(["w1", "w2"]);
  });
});
