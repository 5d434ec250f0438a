/**
 * Graceful retirement in the cores, driven directly: the scheduler's handover of a
 * retiring worker's data (retire-worker, acquire-replicas, add-keys, close-worker) and its
 * races, and the worker core fetching replicas without computing them.
 */
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../machines/config.js";
import type { SchedulerToWorker, TaskSpec, WorkerToScheduler } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput } from "../machines/scheduler/inputs.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInput } from "../machines/worker/inputs.js";
import { exactReason } from "./exact-reason.js";

/** A worker input without its time, member by member (Omit over a union would merge them). */
type WorkerOp = WorkerInput extends infer U ? (U extends unknown ? Omit<U, "t"> : never) : never;

type Op = SchedulerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

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
    for (const name of workers) this.handle({ op: "register-worker", name, id: `${name}#1`, nthreads: 1, host: "h", resources: {}, functions: ["f"] });
  }

  handle(op: Op): void {
    this.core.handle({ ...op, t: ++this.t } as SchedulerInput);
  }

  take(): { worker: string; op: SchedulerToWorker }[] {
    const out = this.sent;
    this.sent = [];
    return out;
  }

  /** Compute `key` on `worker` and report it finished there. */
  computeOn(key: string, worker: string, nbytes = 8, deps: string[] = []): void {
    const spec: TaskSpec = { key, func: "f", args: [], deps, workers: [worker], allowOtherWorkers: true };
    this.handle({ op: "update-graph", client: "c", tasks: [spec], wants: [key] });
    expect(this.core.tasks.get(key)?.processingOn?.name).toBe(worker);
    this.handle({ op: "task-finished", worker, id: `${worker}#1`, key, nbytes, start: 0, stop: 0.1 });
  }

  scatter(key: string, worker: string, nbytes = 8): void {
    this.handle({ op: "update-data", client: "c", data: [{ key, nbytes, workers: [worker] }] });
  }

  retire(name: string, id: string | undefined = `${name}#1`): void {
    this.handle(id === undefined ? { op: "retire-worker", name, reason: "test" } : { op: "retire-worker", name, id, reason: "test" });
  }

  addKeys(worker: string, keys: string[]): void {
    this.handle({ op: "add-keys", worker, id: `${worker}#1`, keys: keys.map((key) => ({ key, nbytes: 8 })) });
  }

  holders(key: string): string[] {
    return [...(this.core.tasks.get(key)?.whoHas ?? [])].map((ws) => ws.name).sort();
  }
}

const acquires = (sent: { worker: string; op: SchedulerToWorker }[]) =>
  sent.filter((m) => m.op.op === "acquire-replicas").map((m) => ({ worker: m.worker, keys: (m.op as { keys: { key: string }[] }).keys.map((k) => k.key) }));
const closes = (sent: { worker: string; op: SchedulerToWorker }[]) => sent.filter((m) => m.op.op === "close-worker").map((m) => ({ worker: m.worker, reason: (m.op as { reason: string }).reason }));
const frees = (sent: { worker: string; op: SchedulerToWorker }[]) => sent.filter((m) => m.op.op === "free-keys").map((m) => ({ worker: m.worker, keys: (m.op as { keys: string[] }).keys }));

describe("scheduler: retire-worker", () => {
  it("hands keys only it holds to the running worker holding the fewest bytes, then closes it", () => {
    const s = new Scheduler(["a", "b", "c"]);
    s.computeOn("big-on-b", "b", 1000);
    s.computeOn("x", "a", 10);
    s.scatter("d", "a", 10);
    s.computeOn("shared", "a", 10);
    s.handle({ op: "add-keys", worker: "c", id: "c#1", keys: [{ key: "shared", nbytes: 10 }] });
    s.take();
    s.retire("a");
    expect(s.core.workers.get("a")?.state).toBe("closing");
    expect(s.core.running.map((ws) => ws.name)).toEqual(["b", "c"]);
    let sent = s.take();
    // c holds 10 bytes and b 1000: c gets x; then c (20 booked) still beats b for d.
    expect(acquires(sent)).toEqual([{ worker: "c", keys: ["x", "d"] }]);
    expect(closes(sent)).toEqual([]);
    s.addKeys("c", ["x"]);
    expect(closes(s.take())).toEqual([]);
    s.addKeys("c", ["d"]);
    sent = s.take();
    expect(closes(sent)).toEqual([{ worker: "a", reason: "test" }]);
    s.handle({ op: "unregister-worker", name: "a", id: "a#1", reason: "test" });
    expect(s.core.taskState("x")).toBe("memory");
    expect(s.core.taskState("d")).toBe("memory");
    expect(s.holders("d")).toEqual(["c"]);
    expect(s.transitions.filter((t) => t.includes("RELEASE"))).toEqual([]);
  });

  it("takes the worker out of placement and places its processing tasks elsewhere, freeing them on it", () => {
    const s = new Scheduler(["a", "b"]);
    s.handle({ op: "update-graph", client: "c", tasks: [{ key: "p", func: "f", args: [], deps: [], workers: ["a"], allowOtherWorkers: true }], wants: ["p"] });
    expect(s.core.tasks.get("p")?.processingOn?.name).toBe("a");
    s.take();
    s.retire("a");
    const sent = s.take();
    expect(frees(sent)).toEqual([{ worker: "a", keys: ["p"] }]);
    expect(sent.filter((m) => m.op.op === "compute-task").map((m) => m.worker)).toEqual(["b"]);
    expect(closes(sent)).toEqual([{ worker: "a", reason: "test" }]);
    // New work never lands on it.
    s.handle({ op: "update-graph", client: "c", tasks: [{ key: "q", func: "f", args: [], deps: [] }], wants: ["q"] });
    expect(s.core.tasks.get("q")?.processingOn?.name).toBe("b");
    // A late result from it is stale.
    s.handle({ op: "task-finished", worker: "a", id: "a#1", key: "p", nbytes: 8, start: 0, stop: 1 });
    expect(s.core.taskState("p")).toBe("processing.assigned");
  });

  it("the last worker: nothing can be saved, it is closed at once and the reason says so", () => {
    const s = new Scheduler(["a"]);
    s.scatter("d", "a");
    s.computeOn("x", "a");
    s.take();
    s.retire("a");
    expect(closes(s.take())).toEqual([{ worker: "a", reason: "test (no other running worker to take 2 keys held only here: lost)" }]);
  });

  it("the recipient dies mid-handover: another one is asked", () => {
    const s = new Scheduler(["a", "b", "c"]);
    s.scatter("d", "a");
    s.take();
    s.retire("a");
    expect(acquires(s.take())).toEqual([{ worker: "b", keys: ["d"] }]);
    s.handle({ op: "worker-lost", name: "b", id: "b#1", reason: "test" });
    let sent = s.take();
    expect(acquires(sent)).toEqual([{ worker: "c", keys: ["d"] }]);
    expect(closes(sent)).toEqual([]);
    s.addKeys("c", ["d"]);
    sent = s.take();
    expect(closes(sent)).toEqual([{ worker: "a", reason: "test" }]);
  });

  it("the recipient dies and no one is left: the worker is closed, the reason counts the key lost", () => {
    const s = new Scheduler(["a", "b"]);
    s.scatter("d", "a");
    s.take();
    s.retire("a");
    s.take();
    s.handle({ op: "unregister-worker", name: "b", id: "b#1", reason: "test" });
    expect(closes(s.take())).toEqual([{ worker: "a", reason: "test (no other running worker to take 1 key held only here: lost)" }]);
  });

  it("a key released mid-handover is dropped from it, and the recipient told to forget it", () => {
    const s = new Scheduler(["a", "b"]);
    s.scatter("d", "a");
    s.scatter("e", "a");
    s.take();
    s.retire("a");
    expect(acquires(s.take())).toEqual([{ worker: "b", keys: ["d", "e"] }]);
    s.handle({ op: "release-keys", client: "c", keys: ["d"] });
    let sent = s.take();
    expect(frees(sent)).toEqual([
      { worker: "a", keys: ["d"] },
      { worker: "b", keys: ["d"] },
    ]);
    expect(closes(sent)).toEqual([]);
    s.addKeys("b", ["e"]);
    sent = s.take();
    expect(closes(sent)).toEqual([{ worker: "a", reason: "test" }]);
    expect(s.core.tasks.has("d")).toBe(false);
    expect(s.holders("e")).toEqual(["a", "b"]);
  });

  it("the retiring worker dies mid-handover: its data is lost as with any lost worker, the recipient frees it", () => {
    const s = new Scheduler(["a", "b"]);
    s.computeOn("x", "a");
    s.take();
    s.retire("a");
    s.take();
    s.handle({ op: "worker-lost", name: "a", id: "a#1", reason: "test" });
    const sent = s.take();
    // Freed on b first, then (recomputed, being wanted) placed on b.
    expect(sent.map((m) => `${m.worker} ${m.op.op}`)).toEqual(["b free-keys", "b compute-task"]);
    expect(s.core.retirements.size).toBe(0);
  });

  it("ignores a retire of an unknown worker, a stale incarnation, or one already retiring; by name alone it retires the current one", () => {
    const s = new Scheduler(["a", "b"]);
    s.scatter("d", "a");
    s.take();
    s.retire("nobody");
    s.retire("a", "a#0");
    expect(s.take()).toEqual([]);
    expect(s.core.workers.get("a")?.state).toBe("running");
    s.retire("a", undefined);
    expect(acquires(s.take())).toEqual([{ worker: "b", keys: ["d"] }]);
    s.retire("a");
    expect(s.take()).toEqual([]);
  });
});

describe("worker: acquire-replicas", () => {
  function worker() {
    const sent: WorkerToScheduler[] = [];
    const gathers: { from: string; keys: string[] }[] = [];
    const executed: string[] = [];
    const core = new WorkerCore(
      { name: "b", id: "b#1", nthreads: 1, transferIncomingCountLimit: 4 },
      {
        toScheduler: (op) => sent.push(op),
        execute: (key) => executed.push(key),
        gather: (from, keys) => gathers.push({ from, keys }),
        freeData: () => undefined,
        transition: () => undefined,
      },
    );
    let t = 0;
    const handle = (op: WorkerOp) => core.handle({ ...op, t: ++t } as WorkerInput);
    handle({ op: "registered" });
    return { core, sent, gathers, executed, handle };
  }

  it("fetches the keys from their holders, computes nothing, and reports them with add-keys", () => {
    const w = worker();
    w.handle({ op: "acquire-replicas", keys: [{ key: "x", nbytes: 8, holders: ["a"] }, { key: "d", nbytes: 8, holders: ["a"] }] });
    expect(w.gathers).toEqual([{ from: "a", keys: ["x", "d"] }]);
    expect(w.core.tasks.get("x")?.state).toBe("flight");
    w.handle({ op: "gather-done", from: "a", received: [{ key: "x", nbytes: 8 }, { key: "d", nbytes: 9 }], missing: [] });
    expect(w.sent).toEqual([{ op: "add-keys", worker: "b", id: "b#1", keys: [{ key: "x", nbytes: 8 }, { key: "d", nbytes: 9 }] }]);
    expect(w.core.tasks.get("x")?.state).toBe("memory");
    expect(w.executed).toEqual([]);
  });

  it("reports a key it already holds at once, and keeps an acquired key when a local dependent goes", () => {
    const w = worker();
    w.handle({ op: "compute-task", key: "y", func: "f", args: [], deps: [{ key: "x", nbytes: 8, holders: ["a"] }], priority: [0, 0, 0], duration: 1 });
    w.handle({ op: "acquire-replicas", keys: [{ key: "x", nbytes: 8, holders: ["a"] }] });
    w.handle({ op: "free-keys", keys: ["y"] });
    // y is gone, x is still on its way: the scheduler asked for a copy.
    expect(w.core.tasks.has("y")).toBe(false);
    expect(w.core.tasks.get("x")?.state).toBe("flight");
    w.handle({ op: "gather-done", from: "a", received: [{ key: "x", nbytes: 8 }], missing: [] });
    expect(w.sent).toEqual([{ op: "add-keys", worker: "b", id: "b#1", keys: [{ key: "x", nbytes: 8 }] }]);
    w.sent.length = 0;
    w.handle({ op: "acquire-replicas", keys: [{ key: "x", nbytes: 8, holders: ["a"] }] });
    expect(w.sent).toEqual([{ op: "add-keys", worker: "b", id: "b#1", keys: [{ key: "x", nbytes: 8 }] }]);
  });

  it("close-worker moves the worker to closing", () => {
    const w = worker();
    w.handle({ op: "close-worker", reason: "retired" });
    expect(w.core.state).toBe("closing");
  });
});
