/**
 * Assignment numbers (docs/protocol.md, "Assignment numbers"): a stolen or otherwise
 * superseded task never runs on a worker whose compute-task arrives late, and a copied
 * compute-task never runs a task twice. First the audit's race on the cores wired by hand
 * (tests/steal-mini-cluster.ts) with the transport reordering or copying messages, then the
 * worker core rule by rule, then what the scheduler sends and accepts.
 */
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../machines/config.js";
import type { ComputeTaskOp, SchedulerToWorker, WorkerToScheduler } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput } from "../machines/scheduler/inputs.js";
import { MAX_TOMBSTONES, WorkerCore } from "../machines/worker/core.js";
import type { WorkerInput } from "../machines/worker/inputs.js";
import { correctionsAreZero, MiniCluster } from "./steal-mini-cluster.js";
import { readReason, type Why } from "../machines/reasons.js";
import { exactReason } from "./exact-reason.js";

const isOp = (name: string) => (op: SchedulerToWorker) => op.op === name;

/** a and b with one thread each; f-0 and f-1 pinned loosely on a (f-1 waits behind f-0). */
function pinnedOnA(): MiniCluster {
  const cluster = new MiniCluster({ defaultTaskDurations: { f: 1 } });
  cluster.addWorker("a");
  cluster.addWorker("b");
  cluster.submit([0, 1].map((i) => ({ key: `f-${i}`, workers: ["a"], allowOtherWorkers: true })));
  return cluster;
}

describe("the audit's race: steal-request overtakes the compute-task it targets", () => {
  it("the victim voids the assignment, the task is placed afresh, and the late compute-task is dropped: it runs once", () => {
    const cluster = pinnedOnA();
    cluster.deliverWhere("a", (op) => op.op === "compute-task" && op.key === "f-0");
    // f-1's compute-task is still on its way to a when the steal request is sent.
    expect(cluster.moveTaskRequest("f-1", "a", "b")).toBe("steal-0");
    const attempt = cluster.task("f-1").attempt;
    expect(cluster.queuedFor("a").filter((op) => op.op !== "void-assignments")).toEqual([
      expect.objectContaining({ op: "compute-task", key: "f-1", attempt, run: cluster.scheduler.run }),
      { op: "steal-request", key: "f-1", requestId: "steal-0", attempt, run: cluster.scheduler.run },
    ]);
    cluster.deliverWhere("a", isOp("steal-request"));
    expect(cluster.workers.get("a")!.voided.get("f-1")).toBe(attempt);
    expect(cluster.pending().map((m) => m.op)).toEqual([expect.objectContaining({ op: "steal-response", key: "f-1", outcome: "reject", state: "released" })]);
    cluster.deliverToScheduler();
    // The scheduler places f-1 afresh under a new number (on a again: it prefers a).
    const again = cluster.task("f-1");
    expect(again.attempt).toBeGreaterThan(attempt);
    expect(cluster.story("f-1").slice(-2)).toEqual(["RELEASE processing.stealing->released", "ASSIGN released->processing.assigned"]);
    // The late compute-task reaches a: dropped, and the drop is in a's log with its reasons;
    // the new assignment's compute-task, behind it, is taken.
    cluster.deliverToWorkers();
    const onA = cluster.transitions.filter((r) => r.actor === "a" && r.id === "f-1");
    expect(onA[0]).toEqual({
      actor: "a",
      machine: "wtask",
      id: "f-1",
      event: "STALE",
      from: "released",
      to: "released",
      why: { rule: "stale-assignment", op: "compute-task", attempt, held: 0, voided: attempt, why: "voided" },
    });
    expect(onA.slice(1).map((r) => r.event)).toEqual(["READY"]);
    cluster.runToCompletion();
    expect(cluster.executions.filter((e) => e.endsWith(":f-1"))).toHaveLength(1);
    expect(cluster.task("f-1").state).toBe("memory");
    expect(correctionsAreZero(cluster)).toBe(true);
  });

  it("same race, the task placed afresh on another worker: the victim never runs it", () => {
    const cluster = new MiniCluster({ defaultTaskDurations: { f: 1 } });
    cluster.addWorker("a");
    cluster.submit([{ key: "f-0" }, { key: "f-1" }, { key: "f-2" }]);
    cluster.addWorker("b"); // takes f-2 from the queue
    cluster.addWorker("c"); // idle
    expect(cluster.task("f-1").processingOn!.name).toBe("a");
    cluster.moveTaskRequest("f-1", "a", "c");
    cluster.deliverWhere("a", isOp("steal-request"));
    cluster.deliverToScheduler();
    expect(cluster.task("f-1").processingOn!.name).toBe("c");
    cluster.runToCompletion();
    expect(cluster.executions.filter((e) => e.endsWith(":f-1"))).toEqual(["c:f-1"]);
    expect(cluster.transitions.filter((r) => r.actor === "a" && r.id === "f-1").map((r) => r.event)).toEqual(["STALE"]);
  });

  it("a copy of the compute-task reaching the victim after it confirmed the steal is dropped", () => {
    const cluster = pinnedOnA();
    // The transport delivers every compute-task to a, and keeps a copy to deliver again later.
    cluster.deliverWhere("a", isOp("compute-task"), true);
    const copies = cluster.queuedFor("a").filter(isOp("compute-task")).length;
    expect(copies).toBe(2);
    cluster.moveTaskRequest("f-1", "a", "b");
    cluster.deliverWhere("a", isOp("steal-request"));
    cluster.deliverToScheduler();
    expect(cluster.story("f-1").at(-1)).toBe("STEAL_CONFIRM processing.stealing->processing.assigned");
    // Now the copies arrive: f-0's is a duplicate of what a runs, f-1's was voided by the confirm.
    cluster.deliverWhere("a", isOp("compute-task"));
    const drops = cluster.transitions.filter((r) => r.actor === "a" && r.event === "STALE").map((r) => {
      const reason = readReason(r);
      return [r.id, reason.kind === "stale-assignment" ? reason.why.why : reason.kind];
    });
    expect(drops).toEqual([
      ["f-0", "duplicate"],
      ["f-1", "voided"],
    ]);
    cluster.runToCompletion();
    expect(cluster.executions.sort()).toEqual(["a:f-0", "b:f-1"]);
  });

  it("a copy of a compute-task arriving after the task ran and was freed does not run it again", () => {
    const cluster = new MiniCluster();
    cluster.addWorker("a");
    cluster.submit([{ key: "x" }, { key: "y", deps: ["x"] }], ["y"]);
    cluster.deliverWhere("a", isOp("compute-task"), true);
    cluster.finish("a", "x");
    cluster.deliverToScheduler();
    cluster.deliverWhere("a", (op) => op.op === "compute-task" && op.key === "y");
    cluster.finish("a", "y");
    cluster.deliverToScheduler();
    cluster.deliverWhere("a", isOp("free-keys"));
    expect(cluster.workers.get("a")!.tasks.get("x")?.state ?? "released").toBe("released");
    // The copy of x's compute-task, delivered last.
    cluster.deliverWhere("a", (op) => op.op === "compute-task" && op.key === "x");
    cluster.runToCompletion();
    expect(cluster.executions).toEqual(["a:x", "a:y"]);
    expect(cluster.task("y").state).toBe("memory");
  });
});

// ---- the worker core, rule by rule -----------------------------------------------------

class Worker {
  readonly sent: WorkerToScheduler[] = [];
  readonly executed: string[] = [];
  readonly log: { id: string; event: string; from: string; to: string; why?: Why }[] = [];
  readonly core: WorkerCore;
  private t = 0;

  constructor(maxTombstones?: number) {
    this.core = new WorkerCore(
      { name: "w", id: "w#1", nthreads: 1, transferIncomingCountLimit: 4, ...(maxTombstones !== undefined ? { maxTombstones } : {}) },
      {
        toScheduler: (op) => this.sent.push(structuredClone(op)),
        execute: (key) => this.executed.push(key),
        gather: () => {},
        freeData: () => {},
        transition: (machine, id, event, from, to, why) => {
          exactReason(machine, event, why);
          if (machine === "wtask") this.log.push({ id, event, from, to, ...(why ? { why } : {}) });
        },
      },
    );
    this.handle({ op: "registered" });
  }

  handle(op: Record<string, unknown> & { op: string }): void {
    this.core.handle({ ...op, t: ++this.t } as WorkerInput);
  }

  compute(key: string, attempt: number, run = 0, deps: ComputeTaskOp["deps"] = []): void {
    this.handle({ op: "compute-task", key, func: "f", args: [], deps, priority: [0, 0, 0], duration: 1, run, attempt });
  }

  done(key: string): void {
    this.handle({ op: "execute-done", key, nbytes: 8, start: 0, stop: 1 });
  }

  stale(): string[] {
    return this.log
      .filter((r) => r.event === "STALE")
      .map((r) => {
        const reason = readReason({ machine: "wtask", ...r });
        return `${r.id}: ${reason.kind} ${reason.kind === "stale-assignment" ? reason.why.why : ""}`.trim();
      });
  }
}

describe("WorkerCore: assignment numbers", () => {
  it("a copy of the compute-task it is running, or holds the result of, is ignored: no second run, no second report", () => {
    const w = new Worker();
    w.compute("a", 1);
    w.compute("a", 1);
    w.done("a");
    w.compute("a", 1);
    expect(w.executed).toEqual(["a"]);
    expect(w.sent).toEqual([{ op: "task-finished", worker: "w", id: "w#1", key: "a", nbytes: 8, start: 0, stop: 1, attempt: 1, run: 0 }]);
    expect(w.stale()).toEqual(["a: stale-assignment duplicate", "a: stale-assignment duplicate"]);
  });

  it("a newer assignment of a key it holds is answered from memory, naming the new number", () => {
    const w = new Worker();
    w.compute("a", 1);
    w.done("a");
    w.compute("a", 4);
    expect(w.executed).toEqual(["a"]);
    expect(w.sent.map((op) => op.op === "task-finished" && op.attempt)).toEqual([1, 4]);
  });

  it("a re-send of the assignment it waits on (same number) refreshes the holders of its inputs", () => {
    const w = new Worker();
    w.compute("b", 2, 0, [{ key: "a", nbytes: 8, holders: ["gone"] }]);
    w.handle({ op: "gather-failed", from: "gone", keys: ["a"], reason: "no worker" });
    w.compute("b", 2, 0, [{ key: "a", nbytes: 8, holders: ["p"] }]);
    expect([...w.core.tasks.get("a")!.holders.keys()]).toEqual(["p"]);
    expect(w.stale()).toEqual([]);
  });

  it("free-keys overtaking the compute-task sent before it: the key is voided and the compute-task dropped", () => {
    const w = new Worker();
    w.handle({ op: "free-keys", keys: ["a"], run: 0, attempt: 3 });
    expect(w.core.voided.get("a")).toBe(3);
    w.compute("a", 3);
    expect(w.executed).toEqual([]);
    expect(w.core.tasks.has("a")).toBe(false);
    expect(w.stale()).toEqual(["a: stale-assignment voided"]);
    // A newer assignment runs.
    w.compute("a", 5);
    expect(w.executed).toEqual(["a"]);
  });

  it("a free-keys older than the assignment it holds is ignored (logged), the key kept", () => {
    const w = new Worker();
    w.compute("a", 4);
    w.done("a");
    w.handle({ op: "free-keys", keys: ["a"], run: 0, attempt: 3 });
    expect(w.core.tasks.get("a")!.state).toBe("memory");
    expect(w.log.at(-1)).toEqual({ id: "a", event: "STALE", from: "memory", to: "memory", why: { rule: "stale-free-keys", op: "free-keys", attempt: 3, held: 4 } });
    w.handle({ op: "free-keys", keys: ["a"], run: 0, attempt: 4 });
    expect(w.core.tasks.has("a")).toBe(false);
  });

  it("a steal-request for an assignment it has not received: voided, answered released", () => {
    const w = new Worker();
    w.handle({ op: "steal-request", key: "a", requestId: "s", run: 0, attempt: 2 });
    expect(w.sent).toEqual([{ op: "steal-response", worker: "w", id: "w#1", key: "a", requestId: "s", outcome: "reject", state: "released" }]);
    w.compute("a", 2);
    expect(w.executed).toEqual([]);
  });

  it("a steal-request for an older assignment than the one it holds is rejected, the task kept", () => {
    const w = new Worker();
    w.compute("busy", 1);
    w.compute("a", 5);
    w.handle({ op: "steal-request", key: "a", requestId: "s", run: 0, attempt: 2 });
    expect(w.sent.at(-1)).toMatchObject({ op: "steal-response", outcome: "reject", state: "ready" });
    expect(w.core.tasks.get("a")!.state).toBe("ready");
  });

  it("keeps at most maxTombstones tombstones, the oldest dropped first (MAX_TOMBSTONES by default)", () => {
    expect(new Worker().core.voided.max).toBe(MAX_TOMBSTONES);
    const w = new Worker(3);
    for (const [i, key] of ["a", "b", "c", "d"].entries()) w.handle({ op: "free-keys", keys: [key], run: 0, attempt: 10 + i });
    expect([...w.core.voided]).toEqual([
      ["b", 11],
      ["c", 12],
      ["d", 13],
    ]);
    // Voiding again makes it the newest.
    w.handle({ op: "free-keys", keys: ["b"], run: 0, attempt: 20 });
    expect([...w.core.voided.keys()]).toEqual(["c", "d", "b"]);
    // What the bound gives up: a compute-task late beyond it for a key the worker forgot is taken.
    w.compute("a", 10);
    expect(w.executed).toEqual(["a"]);
  });

  it("a scheduler that starts a new run numbers afresh: nothing remembered under the last run applies", () => {
    const w = new Worker();
    w.compute("a", 7, 100);
    w.done("a");
    w.handle({ op: "free-keys", keys: ["a"], run: 100, attempt: 9 });
    expect(w.core.voided.get("a")).toBe(9);
    w.compute("a", 1, 200);
    expect(w.core.voided.size).toBe(0);
    expect(w.executed).toEqual(["a", "a"]);
  });

  it("unnumbered ops (an older or foreign sender) are taken as before", () => {
    const w = new Worker();
    w.handle({ op: "compute-task", key: "a", func: "f", args: [], deps: [], priority: [0, 0, 0], duration: 1 });
    w.done("a");
    w.handle({ op: "free-keys", keys: ["a"] });
    w.handle({ op: "compute-task", key: "a", func: "f", args: [], deps: [], priority: [0, 0, 0], duration: 1 });
    expect(w.executed).toEqual(["a", "a"]);
    expect(w.sent.every((op) => !("attempt" in op))).toBe(true);
  });
});

// ---- the scheduler core ----------------------------------------------------------------

describe("SchedulerCore: assignment numbers", () => {
  function scheduler() {
    const out: { worker: string; op: SchedulerToWorker }[] = [];
    const core = new SchedulerCore(resolveConfig({ workStealing: true, workerSaturation: 1.1 }), {
      toWorker: (worker, op) => out.push({ worker, op: structuredClone(op) }),
      toClient: () => {},
      transition: () => {},
    });
    let t = 41;
    const feed = (op: Record<string, unknown> & { op: string }) => core.handle({ ...op, t: ++t } as SchedulerInput);
    feed({ op: "scheduler-start" });
    for (const name of ["a", "b"]) feed({ op: "register-worker", name, id: `${name}#1`, nthreads: 1, host: "h", resources: {}, functions: ["f"] });
    feed({ op: "client-join", client: "c" });
    return { core, out, feed };
  }

  it("numbers every assignment from one counter, under the run its start input names; free-keys carries the latest number", () => {
    const { core, out, feed } = scheduler();
    expect(core.run).toBe(42);
    feed({ op: "update-graph", client: "c", tasks: [{ key: "x", func: "f", args: [], deps: [] }, { key: "y", func: "f", args: [], deps: [] }], wants: ["x", "y"] });
    const computes = out.filter((m) => m.op.op === "compute-task").map((m) => [m.op.op === "compute-task" && m.op.key, m.op.op === "compute-task" && m.op.attempt, m.op.op === "compute-task" && m.op.run]);
    expect(computes).toEqual([
      ["x", 1, 42],
      ["y", 2, 42],
    ]);
    feed({ op: "release-keys", client: "c", keys: ["x"] });
    expect(out.at(-1)!.op).toEqual({ op: "free-keys", keys: ["x"], run: 42, attempt: 2 });
    // A restarted host feeds scheduler-start again: the run does not change.
    feed({ op: "scheduler-start" });
    expect(core.run).toBe(42);
  });

  it("ignores a result that answers another assignment than the current one", () => {
    const { core, feed } = scheduler();
    feed({ op: "update-graph", client: "c", tasks: [{ key: "x", func: "f", args: [], deps: [] }], wants: ["x"] });
    const ts = core.tasks.get("x")!;
    const on = ts.processingOn!;
    feed({ op: "task-finished", worker: on.name, id: on.id, key: "x", nbytes: 8, start: 0, stop: 1, attempt: ts.attempt - 1 });
    expect(ts.state).toBe("processing.assigned");
    feed({ op: "task-erred", worker: on.name, id: on.id, key: "x", error: { name: "E", message: "m" }, attempt: ts.attempt + 1 });
    expect(ts.state).toBe("processing.assigned");
    feed({ op: "task-finished", worker: on.name, id: on.id, key: "x", nbytes: 8, start: 0, stop: 1, attempt: ts.attempt });
    expect(ts.state).toBe("memory");
  });
});
