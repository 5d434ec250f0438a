/**
 * WorkerCore driven directly: stimuli in, transitions and effects out, no actors.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Priority } from "../machines/priority.js";
import type { ComputeTaskOp, DepInfo, WorkerToScheduler } from "../machines/protocol.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerEffects, WorkerInit, WorkerInput } from "../machines/worker/inputs.js";
import { WORKER_TASK } from "../machines/tables.js";
import { exactReason } from "./exact-reason.js";

type Out =
  | { kind: "transition"; machine: string; id: string; event: string; from: string; to: string }
  | { kind: "scheduler"; op: WorkerToScheduler }
  | { kind: "execute"; key: string; func: string; args: unknown[] }
  | { kind: "gather"; from: string; keys: string[] }
  | { kind: "free"; key: string };

type Op = WorkerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

class Harness {
  out: Out[] = [];
  readonly core: WorkerCore;
  private t = 0;

  constructor(opts: { nthreads?: number; limit?: number; name?: string; fetchByHolder?: boolean } = {}) {
    const fx: WorkerEffects = {
      toScheduler: (op) => this.out.push({ kind: "scheduler", op: structuredClone(op) }),
      execute: (key, func, args) => this.out.push({ kind: "execute", key, func, args }),
      gather: (from, keys) => this.out.push({ kind: "gather", from, keys: [...keys] }),
      freeData: (key) => this.out.push({ kind: "free", key }),
      transition: (machine, id, event, from, to, why) => {
        exactReason(machine, event, why);
        this.out.push({ kind: "transition", machine, id, event, from, to });
      },
    };
    const init: WorkerInit = { name: opts.name ?? "w", id: "w#1", nthreads: opts.nthreads ?? 1, transferIncomingCountLimit: opts.limit ?? 50 };
    if (opts.fetchByHolder === true) init.fetchByHolder = true;
    this.core = new WorkerCore(init, fx);
    this.handle({ op: "registered" });
    this.out = [];
  }

  handle(op: Op): void {
    this.core.handle({ ...op, t: ++this.t } as WorkerInput);
  }

  take(): Out[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  compute(key: string, deps: DepInfo[] = [], priority: Priority = [0, 0, 0]): void {
    const op: ComputeTaskOp = { op: "compute-task", key, func: "f", args: [key], deps, priority, duration: 0.5 };
    this.handle(op);
  }

  done(key: string, nbytes = 8): void {
    this.handle({ op: "execute-done", key, nbytes, start: 0, stop: 1 });
  }

  state(key: string): string | undefined {
    return this.core.tasks.get(key)?.state;
  }
}

const dep = (key: string, holders: string[], nbytes = 10): DepInfo => ({ key, nbytes, holders });

function transitions(out: Out[], machine = "wtask"): string[] {
  return out.filter((o): o is Extract<Out, { kind: "transition" }> => o.kind === "transition" && o.machine === machine).map((o) => `${o.id}: ${o.event} ${o.from}->${o.to}`);
}
const executes = (out: Out[]) => out.filter((o): o is Extract<Out, { kind: "execute" }> => o.kind === "execute").map((o) => o.key);
const gathers = (out: Out[]) => out.filter((o): o is Extract<Out, { kind: "gather" }> => o.kind === "gather").map(({ from, keys }) => ({ from, keys }));
const toScheduler = (out: Out[]) => out.filter((o): o is Extract<Out, { kind: "scheduler" }> => o.kind === "scheduler").map((o) => o.op);
const freed = (out: Out[]) => out.filter((o): o is Extract<Out, { kind: "free" }> => o.kind === "free").map((o) => o.key);

describe("WorkerCore: lifecycle", () => {
  it("runs nothing until registered, and nothing once closing", () => {
    const out: string[] = [];
    const executed: string[] = [];
    const core = new WorkerCore(
      { name: "w", id: "w#1", nthreads: 1, transferIncomingCountLimit: 2 },
      {
        toScheduler: () => undefined,
        execute: (key) => executed.push(key),
        gather: () => undefined,
        freeData: () => undefined,
        transition: (machine, id, event, from, to) => out.push(`${machine} ${id}: ${event} ${from}->${to}`),
      },
    );
    core.handle({ op: "compute-task", key: "a", func: "f", args: [], deps: [], priority: [0, 0, 0], duration: 1, t: 1 });
    expect(executed).toEqual([]);
    expect(core.tasks.get("a")!.state).toBe("ready");
    core.handle({ op: "registered", t: 2 });
    expect(executed).toEqual(["a"]);
    core.handle({ op: "close", t: 3 });
    core.handle({ op: "compute-task", key: "b", func: "f", args: [], deps: [], priority: [0, 0, 0], duration: 1, t: 4 });
    core.handle({ op: "execute-done", key: "a", nbytes: 1, start: 2, stop: 3, t: 5 });
    expect(executed).toEqual(["a"]);
    expect(out.filter((l) => l.startsWith("worker"))).toEqual(["worker w: START starting->running", "worker w: CLOSE running->closing"]);
  });

  it("a worker closed by its host before its registration is answered never starts", () => {
    const out: string[] = [];
    const core = new WorkerCore(
      { name: "w", id: "w#1", nthreads: 1, transferIncomingCountLimit: 2 },
      {
        toScheduler: () => undefined,
        execute: () => undefined,
        gather: () => undefined,
        freeData: () => undefined,
        transition: (machine, id, event, from, to) => out.push(`${machine} ${id}: ${event} ${from}->${to}`),
      },
    );
    core.handle({ op: "close", t: 1 });
    core.handle({ op: "registered", t: 2 });
    expect(out).toEqual(["worker w: CLOSE starting->closing"]);
    expect(core.state).toBe("closing");
  });
});

describe("WorkerCore: computing", () => {
  it("a task with no deps: ready -> executing -> memory, reported to the scheduler", () => {
    const h = new Harness();
    h.compute("a");
    let out = h.take();
    expect(transitions(out)).toEqual(["a: READY released->ready", "a: EXECUTE ready->executing"]);
    expect(out.filter((o) => o.kind === "execute")).toEqual([{ kind: "execute", key: "a", func: "f", args: ["a"] }]);
    h.done("a", 99);
    out = h.take();
    expect(transitions(out)).toEqual(["a: DONE executing->memory"]);
    expect(toScheduler(out)).toEqual([{ op: "task-finished", worker: "w", id: "w#1", key: "a", nbytes: 99, start: 0, stop: 1 }]);
    expect(h.core.executing).toBe(0);
  });

  it("a task whose deps are in local memory goes straight to ready and executes", () => {
    const h = new Harness();
    h.handle({ op: "put-data", keys: [{ key: "d", nbytes: 5 }] });
    expect(transitions(h.take())).toEqual(["d: DATA released->memory"]);
    h.compute("b", [dep("d", ["w"])]);
    const out = h.take();
    // The scheduler names this worker as d's holder: the scattered copy is confirmed and used.
    expect(transitions(out)).toEqual(["d: CONFIRM memory->memory", "b: READY released->ready", "b: EXECUTE ready->executing"]);
    expect(gathers(out)).toEqual([]);
  });

  it("a task waiting on a local dependency runs once the dependency is done", () => {
    const h = new Harness();
    h.compute("a");
    h.compute("b", [dep("a", [])]);
    expect(h.state("b")).toBe("waiting");
    h.take();
    h.done("a");
    const out = h.take();
    expect(transitions(out)).toEqual(["a: DONE executing->memory", "b: READY waiting->ready", "b: EXECUTE ready->executing"]);
  });

  it("executions are bounded by nthreads, highest priority first", () => {
    const h = new Harness({ nthreads: 2 });
    h.compute("first", [], [0, 0, 0]);
    h.compute("second", [], [0, 0, 1]);
    expect(h.core.executing).toBe(2);
    h.compute("low", [], [0, 5, 0]);
    h.compute("high", [], [-10, 9, 9]);
    h.compute("mid", [], [0, 1, 0]);
    let out = h.take();
    expect(executes(out)).toEqual(["first", "second"]);
    expect(h.core.executing).toBe(2);
    expect(["low", "high", "mid"].map((k) => h.state(k))).toEqual(["ready", "ready", "ready"]);
    h.done("first");
    expect(executes(h.take())).toEqual(["high"]);
    h.done("second");
    expect(executes(h.take())).toEqual(["mid"]);
    h.handle({ op: "execute-failed", key: "high", error: { name: "Error", message: "x" }, start: 0, stop: 1 });
    out = h.take();
    expect(executes(out)).toEqual(["low"]);
    expect(transitions(out)).toContain("high: FAIL executing->error");
    expect(toScheduler(out)).toEqual([{ op: "task-erred", worker: "w", id: "w#1", key: "high", error: { name: "Error", message: "x" } }]);
    expect(h.core.executing).toBe(2);
  });

  it("property: never more than nthreads executing; every task runs once, in priority order per free slot", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(fc.integer({ min: -3, max: 3 }), fc.integer({ min: 0, max: 20 })), { minLength: 1, maxLength: 25 }),
        fc.array(fc.nat(), { minLength: 60, maxLength: 60 }),
        (nthreads, prios, choices) => {
          const h = new Harness({ nthreads });
          const running = new Set<string>();
          const ran: string[] = [];
          const prio = new Map<string, Priority>();
          let step = 0;
          const pump = () => {
            for (const key of executes(h.take())) {
              expect(running.has(key)).toBe(false);
              running.add(key);
              ran.push(key);
            }
            expect(running.size).toBeLessThanOrEqual(nthreads);
            expect(h.core.executing).toBe(running.size);
          };
          prios.forEach(([p, o], i) => {
            const key = `t${i}`;
            const priority: Priority = [p, 0, o * 100 + i];
            prio.set(key, priority);
            h.compute(key, [], priority);
            pump();
            if (running.size > 0 && choices[step++ % choices.length]! % 3 === 0) {
              const key2 = [...running].sort()[choices[step % choices.length]! % running.size]!;
              running.delete(key2);
              h.done(key2);
              pump();
            }
          });
          while (running.size > 0) {
            // Whatever starts when a slot frees up is the best ready task.
            const ready = [...h.core.tasks.values()].filter((t) => t.state === "ready").map((t) => t.key);
            const key2 = [...running].sort()[choices[step++ % choices.length]! % running.size]!;
            running.delete(key2);
            h.done(key2);
            const started = executes(h.out);
            if (ready.length > 0) {
              const best = ready.reduce((a, b) => (cmp(prio.get(b)!, prio.get(a)!) < 0 ? b : a));
              expect(started).toEqual([best]);
            }
            pump();
          }
          expect([...ran].sort()).toEqual(prios.map((_, i) => `t${i}`).sort());
        },
      ),
      { numRuns: 150 },
    );
  });
});

function cmp(a: Priority, b: Priority): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

// Both fetch queues: one heap by priority (logs written before init.fetchByHolder), and one per holder.
describe.each([false, true])("WorkerCore: fetching dependencies from peers (fetchByHolder: %s)", (fetchByHolder) => {
  const make = (opts: { limit?: number; name?: string } = {}) => new Harness({ ...opts, fetchByHolder });

  it("fetch -> flight -> memory -> ready, batched per peer, at most transferIncomingCountLimit peers at once", () => {
    const h = make({ limit: 2 });
    h.compute("x", [dep("a", ["p1"]), dep("b", ["p1"]), dep("c", ["p2"]), dep("d", ["p3"]), dep("e", ["p3"])]);
    let out = h.take();
    expect(h.state("x")).toBe("waiting");
    const first = gathers(out);
    // Two peers at once, one request per peer carrying every key it holds.
    expect(first).toHaveLength(2);
    expect(new Set(first.map((g) => g.from)).size).toBe(2);
    const holders: Record<string, string[]> = { p1: ["a", "b"], p2: ["c"], p3: ["d", "e"] };
    for (const g of first) expect([...g.keys].sort()).toEqual(holders[g.from]);
    const inFlight = first.flatMap((g) => g.keys);
    for (const k of ["a", "b", "c", "d", "e"]) expect(h.state(k)).toBe(inFlight.includes(k) ? "flight" : "fetch");
    for (const k of inFlight) expect(transitions(out)).toContain(`${k}: GATHER fetch->flight`);

    // One peer answers: its keys are in memory, announced with add-keys, and the third peer is asked.
    const g0 = first[0]!;
    h.handle({ op: "gather-done", from: g0.from, received: g0.keys.map((key) => ({ key, nbytes: 10 })), missing: [] });
    out = h.take();
    for (const k of g0.keys) expect(transitions(out)).toContain(`${k}: RECEIVED flight->memory`);
    expect(toScheduler(out)).toEqual([{ op: "add-keys", worker: "w", id: "w#1", keys: g0.keys.map((key) => ({ key, nbytes: 10 })) }]);
    const second = gathers(out);
    expect(second).toHaveLength(1);
    const remainingPeer = ["p1", "p2", "p3"].find((p) => !first.some((g) => g.from === p))!;
    expect(second[0]!.from).toBe(remainingPeer);
    expect(h.state("x")).toBe("waiting");

    for (const g of [first[1]!, second[0]!]) h.handle({ op: "gather-done", from: g.from, received: g.keys.map((key) => ({ key, nbytes: 10 })), missing: [] });
    out = h.take();
    expect(transitions(out).slice(-2)).toEqual(["x: READY waiting->ready", "x: EXECUTE ready->executing"]);
    // A fetched dependency is not a result of this worker: no task-finished for it.
    expect(toScheduler(out).filter((o) => o.op === "task-finished")).toEqual([]);
  });

  it("a dependency held by this worker itself is never fetched from itself", () => {
    const h = make({ name: "w" });
    h.compute("x", [dep("a", ["w", "p1"])]);
    expect(gathers(h.take())).toEqual([{ from: "p1", keys: ["a"] }]);
  });

  it("property: never more than transferIncomingCountLimit peers in flight; every dependency arrives exactly once", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.uniqueArray(fc.constantFrom("p1", "p2", "p3", "p4", "p5"), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { minLength: 30, maxLength: 30 }),
        (limit, depHolders, choices) => {
          const h = make({ limit });
          const deps = depHolders.map((holders, i) => dep(`d${i}`, holders));
          h.compute("x", deps);
          const inFlight = new Map<string, string[]>();
          const arrived: string[] = [];
          let step = 0;
          for (;;) {
            for (const g of gathers(h.take())) {
              expect(inFlight.has(g.from)).toBe(false);
              for (const k of g.keys) expect(deps.find((d) => d.key === k)!.holders).toContain(g.from);
              inFlight.set(g.from, g.keys);
            }
            expect(inFlight.size).toBeLessThanOrEqual(limit);
            if (inFlight.size === 0) break;
            const peers = [...inFlight.keys()].sort();
            const from = peers[choices[step++ % choices.length]! % peers.length]!;
            const keys = inFlight.get(from)!;
            inFlight.delete(from);
            arrived.push(...keys);
            h.handle({ op: "gather-done", from, received: keys.map((key) => ({ key, nbytes: 1 })), missing: [] });
          }
          expect([...arrived].sort()).toEqual(deps.map((d) => d.key).sort());
          expect(h.state("x")).toBe("executing");
        },
      ),
      { numRuns: 200 },
    );
  });

  it("gather-failed drops the peer and refetches from another holder", () => {
    const h = make();
    h.compute("x", [dep("a", ["p1", "p2"]), dep("b", ["p1"])]);
    let out = h.take();
    expect(gathers(out)).toEqual([{ from: "p1", keys: ["a", "b"] }]);
    h.handle({ op: "gather-failed", from: "p1", keys: ["a", "b"], reason: "no responders" });
    out = h.take();
    expect(transitions(out)).toContain("a: FETCH_FAILED flight->fetch");
    expect(transitions(out)).toContain("a: GATHER fetch->flight");
    expect(gathers(out)).toEqual([{ from: "p2", keys: ["a"] }]);
    // b has no holder left: it waits in fetch (the scheduler re-plans), never asked of p1 again.
    expect(h.state("b")).toBe("fetch");
    expect(h.core.tasks.get("a")!.holders.has("p1")).toBe(false);
    h.handle({ op: "gather-done", from: "p2", received: [{ key: "a", nbytes: 10 }], missing: [] });
    expect(h.state("a")).toBe("memory");
    expect(h.state("x")).toBe("waiting");
    expect(gathers(h.take())).toEqual([]);
  });

  it("a peer missing the data: missing-data to the scheduler, then another holder is asked", () => {
    const h = make();
    h.compute("x", [dep("a", ["p1", "p2"])]);
    h.take();
    h.handle({ op: "gather-done", from: "p1", received: [], missing: ["a"] });
    const out = h.take();
    expect(toScheduler(out)).toEqual([{ op: "missing-data", worker: "w", id: "w#1", key: "a", holder: "p1" }]);
    expect(gathers(out)).toEqual([{ from: "p2", keys: ["a"] }]);
    h.handle({ op: "gather-done", from: "p2", received: [{ key: "a", nbytes: 10 }], missing: [] });
    expect(h.state("x")).toBe("executing");
  });

  it("the scheduler sending the task again with new holders gets a stuck fetch going", () => {
    const h = make();
    h.compute("x", [dep("a", ["p1"])]);
    h.handle({ op: "gather-done", from: "p1", received: [], missing: ["a"] });
    expect(h.state("a")).toBe("fetch");
    h.take();
    // The scheduler releases x (its dependency is being recomputed) and later sends it again.
    h.handle({ op: "free-keys", keys: ["x"] });
    expect(h.core.tasks.size).toBe(0);
    h.compute("x", [dep("a", ["p9"])]);
    expect(gathers(h.take())).toEqual([{ from: "p9", keys: ["a"] }]);
  });

  it("a holder named later for a dependency waiting in fetch is asked for it", () => {
    const h = make();
    h.compute("x", [dep("a", ["p1"])]);
    h.take();
    h.handle({ op: "gather-done", from: "p1", received: [], missing: ["a"] });
    expect(h.state("a")).toBe("fetch");
    expect(gathers(h.take())).toEqual([]);
    // Another task needing it names a new holder.
    h.compute("y", [dep("a", ["p2"])]);
    expect(gathers(h.take())).toEqual([{ from: "p2", keys: ["a"] }]);
    h.handle({ op: "gather-done", from: "p2", received: [{ key: "a", nbytes: 10 }], missing: [] });
    expect(h.state("x")).toBe("executing");
  });

  it("a failed gather drops its peer as a holder of what waits in fetch too: it is asked of the others only", () => {
    const h = make({ limit: 1 });
    // 65 inputs, each on p1 and p2: the gather from p1 takes 64; one waits in fetch.
    h.compute("x", Array.from({ length: 65 }, (_, i) => dep(`d${i}`, ["p1", "p2"])));
    const first = gathers(h.take());
    expect(first.map((g) => [g.from, g.keys.length])).toEqual([["p1", 64]]);
    const left = Array.from({ length: 65 }, (_, i) => `d${i}`).find((k) => !first[0]!.keys.includes(k))!;
    expect(h.state(left)).toBe("fetch");
    h.handle({ op: "gather-failed", from: "p1", keys: first[0]!.keys, reason: "no responders" });
    expect(h.core.tasks.get(left)!.holders.has("p1")).toBe(false);
    // Everything is asked of p2 from now on, the one that waited included.
    const next = gathers(h.take());
    expect(next.map((g) => [g.from, g.keys.length])).toEqual([["p2", 64]]);
    h.handle({ op: "gather-done", from: "p2", received: next[0]!.keys.map((key) => ({ key, nbytes: 1 })), missing: [] });
    expect(gathers(h.take()).map((g) => g.from)).toEqual(["p2"]);
    expect(h.state("x")).toBe("waiting");
  });

  it("while a peer is busy, dependencies only it holds wait and another peer's are fetched", () => {
    const h = make();
    h.compute("x", [dep("a", ["p1"])], [0, 0, 1]);
    expect(gathers(h.take())).toEqual([{ from: "p1", keys: ["a"] }]);
    // More for the busy peer, then one for another peer at a lower priority.
    h.compute("y", [dep("b", ["p1"])], [0, 0, 2]);
    h.compute("z", [dep("c", ["p2"])], [0, 0, 3]);
    expect(gathers(h.take())).toEqual([{ from: "p2", keys: ["c"] }]);
    expect(h.state("b")).toBe("fetch");
    h.handle({ op: "gather-done", from: "p1", received: [{ key: "a", nbytes: 1 }], missing: [] });
    expect(gathers(h.take())).toEqual([{ from: "p1", keys: ["b"] }]);
  });
});


describe("WorkerCore: fetch queues per holder (fetchByHolder)", () => {
  it("a gather takes its holder's first tasks by priority, at most 64, whatever order they were queued in", () => {
    const h = new Harness({ fetchByHolder: true });
    h.compute("x", [dep("a", ["p1"])]);
    h.take();
    // While p1 is busy: 70 tasks, each needing one key of p1's, each more urgent than the one before.
    for (let i = 0; i < 70; i++) h.compute(`t${i}`, [dep(`d${i}`, ["p1"])], [0, 0, 1000 - i]);
    expect(gathers(h.take())).toEqual([]);
    h.handle({ op: "gather-done", from: "p1", received: [{ key: "a", nbytes: 1 }], missing: [] });
    const wanted = Array.from({ length: 64 }, (_, i) => `d${69 - i}`);
    expect(gathers(h.take())).toEqual([{ from: "p1", keys: wanted }]);
  });

  it("equal priorities go first queued first; a key two peers hold is asked of one, and leaves the other's queue", () => {
    const h = new Harness({ fetchByHolder: true, limit: 2 });
    h.compute("x", [dep("a", ["p2", "p1"]), dep("b", ["p1"]), dep("c", ["p2"])]);
    // a is first in both queues: p1 (first in name order) gets it with b; p2 only c.
    expect(gathers(h.take())).toEqual([
      { from: "p1", keys: ["a", "b"] },
      { from: "p2", keys: ["c"] },
    ]);
  });
});

describe("WorkerCore: free-keys, cancelled and resumed", () => {
  it("free-keys while executing: cancelled; the result is dropped (freeData) and not reported", () => {
    const h = new Harness();
    h.compute("a");
    h.handle({ op: "free-keys", keys: ["a"] });
    let out = h.take();
    expect(transitions(out)).toEqual(["a: READY released->ready", "a: EXECUTE ready->executing", "a: FREE executing->cancelled"]);
    h.done("a");
    out = h.take();
    expect(transitions(out)).toEqual(["a: DONE cancelled->released"]);
    expect(freed(out)).toEqual(["a"]);
    expect(toScheduler(out)).toEqual([]);
    expect(h.core.tasks.has("a")).toBe(false);
    expect(h.core.executing).toBe(0);
  });

  it("a cancelled task that fails is dropped silently", () => {
    const h = new Harness();
    h.compute("a");
    h.handle({ op: "free-keys", keys: ["a"] });
    h.take();
    h.handle({ op: "execute-failed", key: "a", error: { name: "Error", message: "x" }, start: 0, stop: 1 });
    const out = h.take();
    expect(transitions(out)).toEqual(["a: FAIL cancelled->released"]);
    expect(toScheduler(out)).toEqual([]);
    expect(h.core.tasks.has("a")).toBe(false);
  });

  it("compute-task again while cancelled: resumed, and the result is reported", () => {
    const h = new Harness();
    h.compute("a");
    h.handle({ op: "free-keys", keys: ["a"] });
    h.compute("a");
    let out = h.take();
    expect(transitions(out).slice(-2)).toEqual(["a: FREE executing->cancelled", "a: COMPUTE_AGAIN cancelled->resumed"]);
    // Not executed twice.
    expect(executes(out)).toEqual(["a"]);
    h.done("a", 7);
    out = h.take();
    expect(transitions(out)).toEqual(["a: DONE resumed->memory"]);
    expect(freed(out)).toEqual([]);
    expect(toScheduler(out)).toEqual([{ op: "task-finished", worker: "w", id: "w#1", key: "a", nbytes: 7, start: 0, stop: 1 }]);
  });

  it("free-keys of data in memory frees it; of a ready task removes it from the ready queue", () => {
    const h = new Harness({ nthreads: 1 });
    h.compute("a");
    h.compute("b");
    h.take();
    h.handle({ op: "free-keys", keys: ["b"] });
    expect(transitions(h.take())).toEqual(["b: FREE ready->released"]);
    expect(h.core.tasks.has("b")).toBe(false);
    h.done("a");
    expect(executes(h.take())).toEqual([]);
    h.handle({ op: "free-keys", keys: ["a"] });
    const out = h.take();
    expect(freed(out)).toEqual(["a"]);
    expect(transitions(out)).toEqual(["a: FREE memory->released"]);
    expect(h.core.tasks.size).toBe(0);
  });

  it("freeing a task waiting on fetches releases the dependencies nothing else needs", () => {
    const h = new Harness({ limit: 1 });
    h.compute("x", [dep("a", ["p1"]), dep("b", ["p2"])]);
    expect(gathers(h.take())).toEqual([{ from: "p1", keys: ["a"] }]);
    h.handle({ op: "free-keys", keys: ["x"] });
    let out = h.take();
    expect(transitions(out)).toEqual(expect.arrayContaining(["x: FREE waiting->released", "b: FREE fetch->released", "a: FREE flight->cancelled"]));
    expect(gathers(out)).toEqual([]);
    // The transfer in flight lands: dropped, not announced.
    h.handle({ op: "gather-done", from: "p1", received: [{ key: "a", nbytes: 3 }], missing: [] });
    out = h.take();
    expect(transitions(out)).toEqual(["a: RECEIVED cancelled->released"]);
    expect(freed(out)).toEqual(["a"]);
    expect(toScheduler(out)).toEqual([]);
    expect(h.core.tasks.size).toBe(0);
  });

  it("free-keys for a dependency a waiting task of this worker still needs keeps it", () => {
    const h = new Harness({ nthreads: 1 });
    h.compute("c");
    h.compute("d", [dep("c", [])]);
    expect(h.state("d")).toBe("waiting");
    h.take();
    h.handle({ op: "free-keys", keys: ["c"] });
    expect(transitions(h.take())).toEqual([]);
    expect(h.state("c")).toBe("executing");
    h.done("c");
    const out = h.take();
    expect(transitions(out)).toEqual(["c: DONE executing->memory", "d: READY waiting->ready", "d: EXECUTE ready->executing"]);
    expect(freed(out)).toEqual([]);
  });
});

describe("WorkerCore: free-keys overtaken by a newer compute-task", () => {
  it("keeps a copy an input of the newer task needs, and reports it with add-keys so the scheduler counts it or frees it again", () => {
    const h = new Harness({ nthreads: 2 });
    // x is in memory here (fetched for an earlier task); the scheduler refused the copy
    // (free-keys, attempt 5) but its compute-task for y (attempt 6), which reads x and names
    // another holder, arrives first.
    h.handle({ op: "compute-task", key: "x", func: "f", args: [], deps: [], priority: [0, 0, 0], duration: 0.5, run: 0, attempt: 4 });
    h.done("x");
    h.handle({ op: "compute-task", key: "y", func: "f", args: [], deps: [dep("x", ["w2"])], priority: [0, 0, 1], duration: 0.5, run: 0, attempt: 6 });
    h.take();
    h.handle({ op: "free-keys", keys: ["x"], run: 0, attempt: 5 });
    const out = h.take();
    expect(transitions(out)).toEqual(["x: STALE memory->memory"]);
    expect(freed(out)).toEqual([]);
    expect(toScheduler(out)).toEqual([{ op: "add-keys", worker: "w", id: "w#1", keys: [{ key: "x", nbytes: 8 }] }]);
    expect(h.state("x")).toBe("memory");
  });

  it("reports nothing for a key it does not hold", () => {
    const h = new Harness({ nthreads: 1 });
    h.handle({ op: "compute-task", key: "x", func: "f", args: [], deps: [], priority: [0, 0, 0], duration: 0.5, run: 0, attempt: 6 });
    h.take();
    h.handle({ op: "free-keys", keys: ["x"], run: 0, attempt: 5 });
    const out = h.take();
    expect(transitions(out)).toEqual(["x: STALE executing->executing"]);
    expect(toScheduler(out)).toEqual([]);
  });
});

describe("WorkerCore: steal requests", () => {
  const answer = (out: Out[]) => toScheduler(out).filter((o) => o.op === "steal-response");

  it("on a ready task: confirm, and the task is gone from this worker", () => {
    const h = new Harness({ nthreads: 1 });
    h.compute("busy");
    h.compute("a");
    h.take();
    h.handle({ op: "steal-request", key: "a", requestId: "r1" });
    const out = h.take();
    expect(transitions(out)).toEqual(["a: STEAL ready->released"]);
    expect(answer(out)).toEqual([{ op: "steal-response", worker: "w", id: "w#1", key: "a", requestId: "r1", outcome: "confirm", state: "ready" }]);
    expect(h.core.tasks.has("a")).toBe(false);
    h.done("busy");
    expect(executes(h.take())).toEqual([]);
  });

  it("on a waiting task: confirm; its fetches nothing else needs are dropped", () => {
    const h = new Harness({ limit: 1 });
    h.compute("x", [dep("a", ["p1"]), dep("b", ["p2"])]);
    h.take();
    h.handle({ op: "steal-request", key: "x", requestId: "r2" });
    const out = h.take();
    expect(answer(out)).toEqual([{ op: "steal-response", worker: "w", id: "w#1", key: "x", requestId: "r2", outcome: "confirm", state: "waiting" }]);
    expect(transitions(out)).toContain("x: STEAL waiting->released");
    expect(h.core.tasks.has("x")).toBe(false);
    expect(h.core.tasks.has("b")).toBe(false);
  });

  it("on an executing task or one in memory: reject, nothing changes", () => {
    const h = new Harness();
    h.compute("a");
    h.take();
    h.handle({ op: "steal-request", key: "a", requestId: "r3" });
    let out = h.take();
    expect(transitions(out)).toEqual([]);
    expect(answer(out)).toEqual([{ op: "steal-response", worker: "w", id: "w#1", key: "a", requestId: "r3", outcome: "reject", state: "executing" }]);
    expect(h.state("a")).toBe("executing");
    h.done("a");
    h.take();
    h.handle({ op: "steal-request", key: "a", requestId: "r4" });
    out = h.take();
    expect(answer(out)).toEqual([{ op: "steal-response", worker: "w", id: "w#1", key: "a", requestId: "r4", outcome: "reject", state: "memory" }]);
    expect(h.state("a")).toBe("memory");
  });

  it("on an unknown key: reject", () => {
    const h = new Harness();
    h.handle({ op: "steal-request", key: "nope", requestId: "r5" });
    expect(answer(h.take())).toEqual([{ op: "steal-response", worker: "w", id: "w#1", key: "nope", requestId: "r5", outcome: "reject", state: "released" }]);
    expect(h.core.tasks.size).toBe(0);
  });

  it("on a dependency being fetched (not a task of this worker): reject", () => {
    const h = new Harness({ limit: 1 });
    h.compute("x", [dep("a", ["p1"]), dep("b", ["p2"])]);
    h.take();
    h.handle({ op: "steal-request", key: "b", requestId: "r6" });
    expect(answer(h.take())).toMatchObject([{ key: "b", outcome: "reject", state: "fetch" }]);
    expect(h.state("b")).toBe("fetch");
  });

  it("the confirm states are exactly the ones where the machine accepts STEAL", () => {
    const confirmStates = WORKER_TASK.states.filter((s) => WORKER_TASK.next(s, "STEAL") !== undefined);
    expect([...confirmStates].sort()).toEqual(["ready", "waiting"]);
  });
});

describe("WorkerCore: scatter (put-data)", () => {
  it("data put on a key the worker is fetching is refused: scatter never overwrites (tests/worker-scatter.test.ts has the rest)", () => {
    const h = new Harness();
    h.compute("x", [dep("d", ["p1"])]);
    h.take();
    expect(h.core.putDataRefusal(["d"])).toEqual({ reserved: [], existing: ["d"] });
    h.handle({ op: "put-data", keys: [{ key: "d", nbytes: 4 }] });
    expect(transitions(h.take())).toEqual(["d: STALE flight->flight"]);
    expect(h.state("x")).toBe("waiting");
    expect(h.core.holding()).toEqual([]);
  });
});
