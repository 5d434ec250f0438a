/**
 * The scheduler core's update-data (docs/protocol.md, "Scatter"): a new key is created; a key
 * in memory on every worker named is shared (the client's want is added); anything else is
 * refused with KEY_EXISTS, all or nothing, and the copies the op says were stored are freed
 * where the scheduler does not account for them.
 */
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../machines/config.js";
import type { SchedulerToClient, SchedulerToWorker, UpdateDataOp } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";
import { exactReason } from "./exact-reason.js";

type Op = SchedulerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

class Scheduler {
  toWorkers: { worker: string; op: SchedulerToWorker }[] = [];
  toClients: { client: string; op: SchedulerToClient }[] = [];
  transitions: string[] = [];
  readonly core = new SchedulerCore(resolveConfig({ workStealing: false }), {
    toWorker: (worker, op) => this.toWorkers.push({ worker, op: structuredClone(op) }),
    toClient: (client, op) => this.toClients.push({ client, op: structuredClone(op) }),
    transition: (machine, id, event, from, to, why) => {
      exactReason(machine, event, why);
      if (machine === "task") this.transitions.push(`${id}: ${event} ${from}->${to}${why !== undefined && "rule" in why ? ` (${why.rule})` : ""}`);
    },
  });
  private t = 0;

  constructor(workers: string[]) {
    this.core.start(0);
    for (const name of workers) this.handle({ op: "register-worker", name, id: `${name}#1`, nthreads: 1, host: "h", resources: {}, functions: ["f"] });
    this.reset();
  }

  handle(op: Op): SchedulerReply {
    return this.core.handle({ ...op, t: ++this.t } as SchedulerInput);
  }

  scatter(client: string, data: UpdateDataOp["data"]): SchedulerReply {
    return this.handle({ op: "update-data", client, data });
  }

  /** Submit `key` and have `worker` compute it. */
  computed(key: string, client = "c1"): string {
    this.handle({ op: "update-graph", client, tasks: [{ key, func: "f", args: [], deps: [] }], wants: [key] });
    const worker = this.core.tasks.get(key)!.processingOn!.name;
    this.handle({ op: "task-finished", worker, id: `${worker}#1`, key, nbytes: 8, start: 0, stop: 1 });
    return worker;
  }

  freed(): [string, string[]][] {
    return this.toWorkers.filter((m) => m.op.op === "free-keys").map((m) => [m.worker, (m.op as { keys: string[] }).keys]);
  }

  reset(): void {
    this.toWorkers = [];
    this.toClients = [];
    this.transitions = [];
  }
}

const refusedKeys = (reply: SchedulerReply) => (reply.ok ? null : { code: reply.error.code, name: reply.error.name, keys: reply.error.keys });

describe("update-data creates new keys", () => {
  it("in memory on the workers named, reported to the client", () => {
    const s = new Scheduler(["w1", "w2"]);
    expect(s.scatter("c1", [{ key: "d", nbytes: 5, workers: ["w2"] }])).toEqual({ ok: true });
    expect(s.transitions).toEqual(["d: DATA released->memory (scatter)"]);
    expect(s.toClients).toEqual([{ client: "c1", op: { op: "key-in-memory", key: "d", nbytes: 5, workers: ["w2"] } }]);
  });

  it("one key on two workers in one op: both are holders", () => {
    const s = new Scheduler(["w1", "w2"]);
    expect(s.scatter("c1", [{ key: "d", nbytes: 5, workers: ["w1"] }, { key: "d", nbytes: 5, workers: ["w2"] }])).toEqual({ ok: true });
    expect([...s.core.tasks.get("d")!.whoHas].map((ws) => ws.name)).toEqual(["w1", "w2"]);
  });
});

describe("update-data never overwrites", () => {
  it("a computed result is refused (KEY_EXISTS), left as it is, and the claimed copy freed", () => {
    const s = new Scheduler(["w1", "w2"]);
    const holder = s.computed("x");
    const other = holder === "w1" ? "w2" : "w1";
    const ts = s.core.tasks.get("x")!;
    s.reset();
    const reply = s.scatter("attacker", [{ key: "x", nbytes: 3, workers: [other] }]);
    expect(refusedKeys(reply)).toEqual({ code: "KEY_EXISTS", name: "KeyExistsError", keys: ["x"] });
    expect(s.transitions).toEqual([]);
    expect(ts.func).toBe("f");
    expect([...ts.whoHas].map((ws) => ws.name)).toEqual([holder]);
    expect(ts.whoWants).toEqual(new Set(["c1"]));
    expect(s.core.clients.get("attacker")?.size ?? 0).toBe(0);
    expect(s.freed()).toEqual([[other, ["x"]]]);
    expect(s.toClients).toEqual([]);
  });

  it("a key still computing is refused, and its worker is not told to free it", () => {
    const s = new Scheduler(["w1"]);
    s.handle({ op: "update-graph", client: "c1", tasks: [{ key: "x", func: "f", args: [], deps: [] }], wants: ["x"] });
    s.reset();
    expect(refusedKeys(s.scatter("attacker", [{ key: "x", nbytes: 3, workers: ["w1"] }]))).toMatchObject({ code: "KEY_EXISTS", keys: ["x"] });
    expect(s.core.taskState("x")).toBe("processing.assigned");
    expect(s.freed()).toEqual([]);
  });

  it("is all or nothing: a new key beside a refused one is not created, and its copy is freed", () => {
    const s = new Scheduler(["w1"]);
    s.computed("x");
    s.reset();
    const reply = s.scatter("c2", [
      { key: "new", nbytes: 3, workers: ["w1"] },
      { key: "x", nbytes: 3, workers: ["w1"], existing: true },
      { key: "x", nbytes: 3, workers: ["nobody"] },
    ]);
    expect(refusedKeys(reply)).toMatchObject({ keys: ["x"] });
    expect(s.core.tasks.has("new")).toBe(false);
    expect(s.freed()).toEqual([["w1", ["new"]]]);
  });

  it("an existing entry never creates a key (a copy nobody registered stays unregistered)", () => {
    const s = new Scheduler(["w1"]);
    expect(refusedKeys(s.scatter("c1", [{ key: "seeded", nbytes: 3, workers: ["w1"], existing: true }]))).toMatchObject({ code: "KEY_EXISTS", keys: ["seeded"] });
    expect(s.core.tasks.has("seeded")).toBe(false);
    // Nothing was stored by this op: nothing is freed on its word.
    expect(s.freed()).toEqual([]);
  });
});

describe("update-data shares a key in memory on every worker named", () => {
  it("adds the client's want and reports the key, changing nothing else", () => {
    const s = new Scheduler(["w1", "w2"]);
    s.scatter("c1", [{ key: "int-abc", nbytes: 8, workers: ["w2"] }]);
    s.reset();
    expect(s.scatter("c2", [{ key: "int-abc", nbytes: 0, workers: ["w2"], existing: true }])).toEqual({ ok: true });
    const ts = s.core.tasks.get("int-abc")!;
    expect(ts.whoWants).toEqual(new Set(["c1", "c2"]));
    expect(ts.nbytes).toBe(8);
    expect(s.transitions).toEqual(["int-abc: DATA memory->memory (scatter-shared)"]);
    expect(s.toClients).toEqual([{ client: "c2", op: { op: "key-in-memory", key: "int-abc", nbytes: 8, workers: ["w2"] } }]);
    // c1 letting go keeps it for c2.
    s.handle({ op: "release-keys", client: "c1", keys: ["int-abc"] });
    expect(s.core.taskState("int-abc")).toBe("memory");
  });

  it("but not on a worker that does not hold it: no replica is added on a client's word", () => {
    const s = new Scheduler(["w1", "w2"]);
    s.scatter("c1", [{ key: "int-abc", nbytes: 8, workers: ["w2"] }]);
    s.reset();
    expect(refusedKeys(s.scatter("c2", [{ key: "int-abc", nbytes: 8, workers: ["w1", "w2"] }]))).toMatchObject({ keys: ["int-abc"] });
    expect([...s.core.tasks.get("int-abc")!.whoHas].map((ws) => ws.name)).toEqual(["w2"]);
    expect(s.freed()).toEqual([["w1", ["int-abc"]]]);
  });
});
