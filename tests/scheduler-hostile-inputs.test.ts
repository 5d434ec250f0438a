/**
 * Schema-valid but hostile inputs the scheduler core once mishandled (found by, or reported
 * before, tests/fuzz-scheduler-host.test.ts): each is taken without an exception and leaves
 * the bookkeeping sound (verify/scheduler-bookkeeping.ts), and no future is left waiting on a
 * key nobody holds.
 */
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../machines/config.js";
import type { RegisterWorkerOp, SchedulerToClient, SchedulerToWorker } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";
import { answerQuery } from "../actors/scheduler-queries.js";
import { checkSchedulerBookkeeping } from "../verify/scheduler-bookkeeping.js";

type Op = SchedulerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

class Scheduler {
  toWorkers: { worker: string; op: SchedulerToWorker }[] = [];
  toClients: { client: string; op: SchedulerToClient }[] = [];
  readonly core = new SchedulerCore(resolveConfig({ workStealing: false }), {
    toWorker: (worker, op) => this.toWorkers.push({ worker, op: structuredClone(op) }),
    toClient: (client, op) => this.toClients.push({ client, op: structuredClone(op) }),
    transition: () => undefined,
  });
  private t = 0;

  constructor(workers: string[]) {
    this.core.start(0);
    for (const name of workers) this.register(name);
  }

  handle(op: Op): SchedulerReply {
    return this.core.handle({ ...op, t: ++this.t } as SchedulerInput);
  }

  register(name: string, holding?: RegisterWorkerOp["holding"]): SchedulerReply {
    return this.handle({ op: "register-worker", name, id: `${name}#1`, nthreads: 1, host: "h", resources: {}, functions: ["f", "g"], ...(holding ? { holding } : {}) });
  }

  submit(key: string, func = "f", client = "c1"): void {
    this.handle({ op: "update-graph", client, tasks: [{ key, func, args: [], deps: [] }], wants: [key] });
  }

  freedOn(worker: string): string[] {
    return this.toWorkers.filter((m) => m.worker === worker && m.op.op === "free-keys").flatMap((m) => (m.op as { keys: string[] }).keys);
  }

  problems(): string[] {
    const out: string[] = [];
    checkSchedulerBookkeeping(this.core, (invariant, message) => out.push(`${invariant}: ${message}`));
    return out;
  }
}

describe("register-worker holding keys", () => {
  it("frees on the joining worker a held key whose task erred, and keeps the failure", () => {
    const s = new Scheduler(["a"]);
    s.submit("x");
    s.handle({ op: "task-erred", worker: "a", id: "a#1", key: "x", error: { name: "Error", message: "boom" }, attempt: s.core.tasks.get("x")!.attempt });
    expect(s.core.taskState("x")).toBe("erred");
    expect(s.register("b", [{ key: "x", nbytes: 8 }])).toMatchObject({ ok: true });
    expect(s.core.taskState("x")).toBe("erred");
    expect(s.core.tasks.get("x")!.whoHas.size).toBe(0);
    expect(s.freedOn("b")).toEqual(["x"]);
    // Registered in full: it takes work.
    expect(s.core.running.map((ws) => ws.name)).toEqual(["a", "b"]);
    expect(s.problems()).toEqual([]);
  });

  it("takes a held key whose task processes on another worker as its result, and voids that worker's assignment", () => {
    const s = new Scheduler(["a"]);
    s.submit("x");
    const attempt = s.core.tasks.get("x")!.attempt;
    s.register("b", [{ key: "x", nbytes: 8 }]);
    const ts = s.core.tasks.get("x")!;
    expect(ts.state).toBe("memory");
    expect([...ts.whoHas].map((ws) => ws.name)).toEqual(["b"]);
    expect(ts.attempt).toBeGreaterThan(attempt);
    expect(s.freedOn("a")).toEqual(["x"]);
    expect(s.freedOn("b")).toEqual([]);
    // a's result, of the voided assignment, is not counted.
    s.handle({ op: "task-finished", worker: "a", id: "a#1", key: "x", nbytes: 8, start: 0, stop: 1, attempt });
    expect([...s.core.tasks.get("x")!.whoHas].map((ws) => ws.name)).toEqual(["b"]);
    expect(s.problems()).toEqual([]);
  });

  it("takes a held key whose task is not assigned yet, and adds a replica of one in memory", () => {
    const s = new Scheduler(["a"]);
    s.submit("x");
    s.handle({ op: "task-finished", worker: "a", id: "a#1", key: "x", nbytes: 8, start: 0, stop: 1, attempt: s.core.tasks.get("x")!.attempt });
    // Restricted to a worker that never comes: no-worker.
    s.handle({ op: "update-graph", client: "c1", tasks: [{ key: "z", func: "f", args: [], deps: [], workers: ["c"] }], wants: ["z"] });
    expect(s.core.taskState("z")).toBe("no-worker");
    s.toClients = [];
    s.register("b", [{ key: "x", nbytes: 8 }, { key: "z", nbytes: 4 }, { key: "unknown", nbytes: 1 }]);
    expect([...s.core.tasks.get("x")!.whoHas].map((ws) => ws.name)).toEqual(["a", "b"]);
    expect(s.core.taskState("z")).toBe("memory");
    expect(s.toClients).toEqual([{ client: "c1", op: { op: "key-in-memory", key: "z", nbytes: 4, workers: ["b"] } }]);
    expect(s.freedOn("b")).toEqual(["unknown"]);
    expect(s.problems()).toEqual([]);
  });
});

describe("update-data", () => {
  it("refuses a new key that names no worker the scheduler has (NO_WORKERS), and registers nothing", () => {
    const s = new Scheduler(["a"]);
    const reply = s.handle({ op: "update-data", client: "c1", data: [{ key: "d", nbytes: 8, workers: ["gone"] }, { key: "e", nbytes: 8, workers: ["a"] }] });
    expect(reply).toMatchObject({ ok: false, error: { code: "NO_WORKERS", keys: ["d"] } });
    expect(s.core.tasks.has("d")).toBe(false);
    expect(s.core.tasks.has("e")).toBe(false);
    // The copy the op says was stored on a is freed there: nothing registers it.
    expect(s.freedOn("a")).toEqual(["e"]);
    expect(s.handle({ op: "update-data", client: "c1", data: [{ key: "f", nbytes: 8, workers: [] }] })).toMatchObject({ ok: false, error: { code: "NO_WORKERS", keys: ["f"] } });
    expect(s.core.tasks.size).toBe(0);
    expect(s.problems()).toEqual([]);
  });

  it("creates a key on the workers named that it has, when some of them it does not", () => {
    const s = new Scheduler(["a"]);
    expect(s.handle({ op: "update-data", client: "c1", data: [{ key: "d", nbytes: 8, workers: ["gone", "a"] }] })).toEqual({ ok: true });
    expect([...s.core.tasks.get("d")!.whoHas].map((ws) => ws.name)).toEqual(["a"]);
    expect(s.toClients).toEqual([{ client: "c1", op: { op: "key-in-memory", key: "d", nbytes: 8, workers: ["a"] } }]);
  });
});

describe("the who-has query", () => {
  it("answers every key asked for as its own property, \"__proto__\" included", () => {
    const s = new Scheduler(["a"]);
    const answer = answerQuery(s.core, { op: "who-has", keys: ["__proto__", "x"] }) as { whoHas: Record<string, string[]> };
    expect(JSON.parse(JSON.stringify(answer))).toEqual({ whoHas: JSON.parse('{"__proto__": [], "x": []}') });
    expect(Object.keys(answer.whoHas)).toEqual(["__proto__", "x"]);
  });
});
