/**
 * SchedulerCore driven directly: stimuli in, transitions and messages out, no actors.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { resolveConfig, type Config } from "../machines/config.js";
import type { ErrorInfo, SchedulerToClient, SchedulerToWorker, TaskSpec } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerEffects, SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";
import { priorityLess } from "../machines/priority.js";
import { readReason, type Why } from "../machines/reasons.js";
import { exactReason } from "./exact-reason.js";

type Out =
  | { kind: "transition"; machine: string; id: string; event: string; from: string; to: string; why?: Why }
  | { kind: "worker"; worker: string; op: SchedulerToWorker }
  | { kind: "client"; client: string; op: SchedulerToClient };

type Op = SchedulerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

class Harness {
  out: Out[] = [];
  readonly core: SchedulerCore;
  readonly ids = new Map<string, string>();
  private t = 0;
  private incarnation = 0;

  constructor(config: Partial<Config> = {}) {
    const fx: SchedulerEffects = {
      toWorker: (worker, op) => this.out.push({ kind: "worker", worker, op: structuredClone(op) }),
      toClient: (client, op) => this.out.push({ kind: "client", client, op: structuredClone(op) }),
      transition: (machine, id, event, from, to, why) => {
        exactReason(machine, event, why);
        this.out.push(why === undefined ? { kind: "transition", machine, id, event, from, to } : { kind: "transition", machine, id, event, from, to, why: structuredClone(why) });
      },
    };
    // Dask's saturation unless a test says otherwise: these follow Dask's messages exactly.
    this.core = new SchedulerCore(resolveConfig({ workerSaturation: 1.1, ...config }), fx);
    this.core.start(0);
    this.out.length = 0;
  }

  handle(op: Op): SchedulerReply {
    return this.core.handle({ ...op, t: ++this.t } as SchedulerInput);
  }

  /** Everything produced since the last take. */
  take(): Out[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  register(name: string, opts: { nthreads?: number; resources?: Record<string, number>; functions?: string[]; id?: string } = {}): SchedulerReply {
    const id = opts.id ?? `${name}#${++this.incarnation}`;
    this.ids.set(name, id);
    return this.handle({
      op: "register-worker",
      name,
      id,
      nthreads: opts.nthreads ?? 1,
      host: "localhost",
      resources: opts.resources ?? {},
      functions: opts.functions ?? ["f", "g"],
    });
  }

  graph(tasks: TaskSpec[], wants: string[], client = "c1"): SchedulerReply {
    return this.handle({ op: "update-graph", client, tasks, wants });
  }

  /** The worker currently processing `key`. */
  where(key: string): string {
    const ws = this.core.tasks.get(key)?.processingOn;
    if (!ws) throw new Error(`${key} is not processing (state ${this.core.taskState(key)})`);
    return ws.name;
  }

  finish(key: string, nbytes = 8, worker = this.where(key), id = this.ids.get(worker)!): void {
    this.handle({ op: "task-finished", worker, id, key, nbytes, start: 0, stop: 0.01 });
  }

  err(key: string, message = "boom", worker = this.where(key)): void {
    this.handle({ op: "task-erred", worker, id: this.ids.get(worker)!, key, error: { name: "Error", message } });
  }

  lose(name: string): void {
    this.handle({ op: "worker-lost", name, id: this.ids.get(name)!, reason: "test" });
  }
}

const task = (key: string, deps: string[] = [], extra: Partial<TaskSpec> = {}): TaskSpec => ({ key, func: "f", args: [], deps, ...extra });

/** Transitions as compact strings "key: EVENT from->to". */
function transitions(out: Out[], machine = "task"): string[] {
  return out.filter((o): o is Extract<Out, { kind: "transition" }> => o.kind === "transition" && o.machine === machine).map((o) => `${o.id}: ${o.event} ${o.from}->${o.to}`);
}

function toWorkers(out: Out[]): { worker: string; op: SchedulerToWorker }[] {
  return out.filter((o): o is Extract<Out, { kind: "worker" }> => o.kind === "worker").map(({ worker, op }) => ({ worker, op }));
}

/** Workers w1 and w2, and key "a" (`nbytes`) computed on w1 and copied to w2 (add-keys). */
function replicatedOnBoth(nbytes: number): Harness {
  const h = new Harness();
  h.register("w1");
  h.register("w2");
  h.graph([task("a", [], { workers: ["w1"] })], ["a"]);
  h.finish("a", nbytes);
  h.handle({ op: "add-keys", worker: "w2", id: h.ids.get("w2")!, keys: [{ key: "a", nbytes }] });
  return h;
}

function computes(out: Out[]): { worker: string; key: string }[] {
  return toWorkers(out)
    .filter((m) => m.op.op === "compute-task")
    .map((m) => ({ worker: m.worker, key: (m.op as { key: string }).key }));
}

function frees(out: Out[]): { worker: string; keys: string[] }[] {
  return toWorkers(out)
    .filter((m) => m.op.op === "free-keys")
    .map((m) => ({ worker: m.worker, keys: (m.op as { keys: string[] }).keys }));
}

function toClients(out: Out[]): { client: string; op: SchedulerToClient }[] {
  return out.filter((o): o is Extract<Out, { kind: "client" }> => o.kind === "client").map(({ client, op }) => ({ client, op }));
}

function states(core: SchedulerCore): Record<string, string> {
  return Object.fromEntries([...core.tasks.values()].map((ts) => [ts.key, ts.state]));
}

describe("SchedulerCore: lifecycle and registration", () => {
  it("starts, registers workers through the worker machine, and closes", () => {
    const out: string[] = [];
    const core = new SchedulerCore(resolveConfig({ workerSaturation: 1.1 }), {
      toWorker: () => undefined,
      toClient: () => undefined,
      transition: (machine, id, event, from, to) => out.push(`${machine} ${id}: ${event} ${from}->${to}`),
    });
    expect(core.state).toBe("starting");
    core.start(0);
    // The answer names the run (the start input's time) the worker registered with.
    expect(core.handle({ op: "register-worker", name: "w1", id: "w1#1", nthreads: 2, host: "h", resources: {}, functions: ["f"], t: 1 })).toEqual({ ok: true, run: 0 });
    // Registering the same incarnation again is a no-op.
    expect(core.handle({ op: "register-worker", name: "w1", id: "w1#1", nthreads: 2, host: "h", resources: {}, functions: ["f"], t: 2 })).toEqual({ ok: true, run: 0 });
    expect(core.totalNthreads).toBe(2);
    core.handle({ op: "unregister-worker", name: "w1", id: "w1#1", reason: "bye", t: 3 });
    expect(core.workers.size).toBe(0);
    expect(core.totalNthreads).toBe(0);
    core.close(4);
    expect(core.state).toBe("closed");
    expect(out).toEqual([
      "scheduler scheduler: START starting->running",
      "worker w1: START starting->running",
      "worker w1: CLOSED running->closed",
      "scheduler scheduler: CLOSE running->closing",
      "scheduler scheduler: CLOSED closing->closed",
    ]);
  });
});

describe("SchedulerCore: a chain", () => {
  it("runs a -> b -> c in order, releasing what is no longer needed, and reports the result", () => {
    const h = new Harness();
    h.register("w1");
    h.take();
    expect(h.graph([task("a"), task("b", ["a"]), task("c", ["b"])], ["c"])).toEqual({ ok: true });
    let out = h.take();
    // In priority order (the static graph order runs a before b before c).
    expect(transitions(out)).toEqual(["a: ASSIGN released->processing.assigned", "b: WAIT released->waiting", "c: WAIT released->waiting"]);
    expect(toWorkers(out)).toEqual([
      { worker: "w1", op: { op: "compute-task", key: "a", func: "f", args: [], deps: [], priority: h.core.tasks.get("a")!.priority, duration: 0.5, run: 0, attempt: 1, prompt: true } },
    ]);
    expect(toClients(out)).toEqual([]);

    h.finish("a", 100);
    out = h.take();
    expect(transitions(out)).toEqual(["a: FINISH processing.assigned->memory", "b: ASSIGN waiting->processing.assigned"]);
    expect(toWorkers(out)).toEqual([
      {
        worker: "w1",
        op: { op: "compute-task", key: "b", func: "f", args: [], deps: [{ key: "a", nbytes: 100, holders: ["w1"] }], priority: h.core.tasks.get("b")!.priority, duration: 0.5, run: 0, attempt: 2, prompt: true },
      },
    ]);

    h.finish("b", 200);
    out = h.take();
    expect(transitions(out)).toEqual(["b: FINISH processing.assigned->memory", "c: ASSIGN waiting->processing.assigned", "a: RELEASE memory->released"]);
    expect(computes(out)).toEqual([{ worker: "w1", key: "c" }]);
    expect(frees(out)).toEqual([{ worker: "w1", keys: ["a"] }]);

    h.finish("c", 300);
    out = h.take();
    expect(transitions(out)).toEqual(["c: FINISH processing.assigned->memory", "b: RELEASE memory->released"]);
    expect(frees(out)).toEqual([{ worker: "w1", keys: ["b"] }]);
    expect(toClients(out)).toEqual([{ client: "c1", op: { op: "key-in-memory", key: "c", nbytes: 300, workers: ["w1"] } }]);
    expect(states(h.core)).toEqual({ a: "released", b: "released", c: "memory" });
    expect(h.core.workers.get("w1")!.nbytes).toBe(300);
    expect(h.core.workers.get("w1")!.occupancy).toBe(0);
    expect(h.core.totalOccupancy).toBe(0);
  });

  it("release-keys frees the data on its holders and forgets the whole chain", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a"), task("b", ["a"]), task("c", ["b"])], ["c"]);
    h.finish("a");
    h.finish("b");
    h.finish("c");
    h.take();
    h.handle({ op: "release-keys", client: "c1", keys: ["c"] });
    const out = h.take();
    expect(transitions(out)).toEqual(["c: RELEASE memory->released", "c: FORGET released->forgotten", "b: FORGET released->forgotten", "a: FORGET released->forgotten"]);
    expect(frees(out)).toEqual([{ worker: "w1", keys: ["c"] }]);
    expect(h.core.tasks.size).toBe(0);
    expect(h.core.workers.get("w1")!.nbytes).toBe(0);
    expect(h.core.workers.get("w1")!.hasWhat.size).toBe(0);
    expect(h.core.clients.get("c1")!.size).toBe(0);
  });

  it("cancel-keys drops this client's wants only, frees what processes, and records every release it causes as cancelled", () => {
    const h = new Harness();
    h.register("w1");
    // a processing, b waiting on it; c2 wants d, which needs a too.
    h.graph([task("a"), task("b", ["a"])], ["b"], "c1");
    h.graph([task("x")], ["x"], "c1");
    h.graph([task("d", ["a"])], ["d"], "c2");
    h.take();
    // A key the client does not want, or an unknown one, is left alone.
    h.handle({ op: "cancel-keys", client: "c2", keys: ["b", "nope"] });
    expect(h.take()).toEqual([]);
    h.handle({ op: "cancel-keys", client: "c1", keys: ["b", "x"] });
    let out = h.take();
    const cancelled = { rule: "cancelled", client: "c1" };
    expect(out.filter((o) => o.kind === "transition").map((o) => o.kind === "transition" && [`${o.id}: ${o.event} ${o.from}->${o.to}`, o.why])).toEqual([
      ["b: RELEASE waiting->released", cancelled],
      ["x: RELEASE processing.assigned->released", cancelled],
      ["b: FORGET released->forgotten", undefined],
      ["x: FORGET released->forgotten", undefined],
    ]);
    // x was processing (a has the only thread, but x is placed too): freed on its worker.
    expect(frees(out)).toEqual([{ worker: "w1", keys: ["x"] }]);
    // a goes on for c2's d.
    expect(h.core.taskState("a")).toBe("processing.assigned");
    expect(h.core.clients.get("c1")!.size).toBe(0);
    // c2 cancels d: a, which only d needed now, is released too, as cancelled by c2.
    h.handle({ op: "cancel-keys", client: "c2", keys: ["d"] });
    out = h.take();
    expect(transitions(out)).toEqual(["d: RELEASE waiting->released", "a: RELEASE processing.assigned->released", "d: FORGET released->forgotten", "a: FORGET released->forgotten"]);
    expect(out.find((o) => o.kind === "transition" && o.id === "a")).toMatchObject({ why: { rule: "cancelled", client: "c2" } });
    expect(frees(out)).toEqual([{ worker: "w1", keys: ["a"] }]);
    expect(h.core.tasks.size).toBe(0);
    // Submitted again, it is a new task.
    h.graph([task("a")], ["a"], "c1");
    expect(h.core.taskState("a")).toBe("processing.assigned");
  });

  it("release-keys sends free-keys to every holder of a replicated key", () => {
    const h = replicatedOnBoth(10);
    expect([...h.core.tasks.get("a")!.whoHas].map((w) => w.name).sort()).toEqual(["w1", "w2"]);
    h.take();
    h.handle({ op: "release-keys", client: "c1", keys: ["a"] });
    const out = h.take();
    expect(frees(out).sort((x, y) => x.worker.localeCompare(y.worker))).toEqual([
      { worker: "w1", keys: ["a"] },
      { worker: "w2", keys: ["a"] },
    ]);
    expect(transitions(out)).toEqual(["a: RELEASE memory->released", "a: FORGET released->forgotten"]);
    expect(h.core.tasks.size).toBe(0);
  });

  it("a key wanted by two clients is kept until both release it", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a")], ["a"], "c1");
    h.graph([task("a")], ["a"], "c2");
    h.finish("a");
    h.take();
    h.handle({ op: "release-keys", client: "c1", keys: ["a"] });
    expect(h.take()).toEqual([]);
    expect(h.core.taskState("a")).toBe("memory");
    h.handle({ op: "release-keys", client: "c2", keys: ["a"] });
    expect(transitions(h.take())).toEqual(["a: RELEASE memory->released", "a: FORGET released->forgotten"]);
  });

  it("a client asking for a key already in memory is told at once", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a")], ["a"], "c1");
    h.finish("a", 42);
    h.take();
    h.graph([task("a")], ["a"], "c2");
    const out = h.take();
    expect(transitions(out)).toEqual([]);
    expect(toClients(out)).toEqual([{ client: "c2", op: { op: "key-in-memory", key: "a", nbytes: 42, workers: ["w1"] } }]);
  });
});

describe("SchedulerCore: placement", () => {
  for (const [sizeA, sizeB, expected] of [
    [1_000_000, 10, "w1"],
    [10, 1_000_000, "w2"],
  ] as const) {
    it(`a task whose dependencies live on two workers goes where fewer bytes must move (a=${sizeA}, b=${sizeB} -> ${expected})`, () => {
      const h = new Harness();
      h.register("w1");
      h.register("w2");
      h.graph([task("a", [], { workers: ["w1"] }), task("b", [], { workers: ["w2"] }), task("x", ["a", "b"])], ["x"]);
      expect(h.where("a")).toBe("w1");
      expect(h.where("b")).toBe("w2");
      h.take();
      h.finish("a", sizeA);
      h.finish("b", sizeB);
      const out = h.take();
      expect(computes(out)).toEqual([{ worker: expected, key: "x" }]);
      const assign = out.find((o) => o.kind === "transition" && o.id === "x" && o.event === "ASSIGN") as Extract<Out, { kind: "transition" }>;
      expect(assign.why).toMatchObject({ worker: expected, rule: "objective" });
      const placed = readReason(assign);
      const candidates = (placed.kind === "objective" ? (placed.why.candidates ?? []) : []).map((c) => c[0]).sort();
      expect(candidates).toEqual(["w1", "w2"]);
      const compute = toWorkers(out).find((m) => m.op.op === "compute-task")!.op as Extract<SchedulerToWorker, { op: "compute-task" }>;
      expect(compute.deps).toEqual([
        { key: "a", nbytes: sizeA, holders: ["w1"] },
        { key: "b", nbytes: sizeB, holders: ["w2"] },
      ]);
    });
  }

  it("hard worker restrictions: runs only there; none available: no-worker until one joins", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a", [], { workers: ["w2"] })], ["a"]);
    expect(transitions(h.take())).toEqual(["a: NO_WORKER released->no-worker"]);
    h.register("w2");
    const out = h.take();
    expect(transitions(out)).toEqual(["a: ASSIGN no-worker->processing.assigned"]);
    expect(computes(out)).toEqual([{ worker: "w2", key: "a" }]);
  });

  it("loose restrictions (allowOtherWorkers) fall back to any worker", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a", [], { workers: ["ghost"], allowOtherWorkers: true })], ["a"]);
    expect(computes(h.take())).toEqual([{ worker: "w1", key: "a" }]);
  });

  it("resource restrictions pick the worker that supplies them", () => {
    const h = new Harness();
    h.register("cpu");
    h.register("gpu", { resources: { GPU: 2 } });
    h.graph(
      [task("a", [], { resources: { GPU: 1 } }), task("b", [], { resources: { GPU: 2 } }), task("c", [], { resources: { GPU: 3 } })],
      ["a", "b", "c"],
    );
    const out = h.take();
    expect(computes(out).sort((x, y) => x.key.localeCompare(y.key))).toEqual([
      { worker: "gpu", key: "a" },
      { worker: "gpu", key: "b" },
    ]);
    expect(h.core.taskState("c")).toBe("no-worker");
  });
});

describe("SchedulerCore: queuing of root tasks", () => {
  const rootKeys = (n: number) => Array.from({ length: n }, (_, i) => `('x', ${i})`);

  for (const nthreads of [1, 2, 4]) {
    it(`workerSaturation 1.1 sends ceil(1.1 * ${nthreads}) root tasks per worker, queues the rest, pops one per finished task`, () => {
      const h = new Harness({ workerSaturation: 1.1 });
      h.register("w1", { nthreads });
      h.register("w2", { nthreads });
      h.take();
      const n = 10 * 2 * nthreads;
      const keys = rootKeys(n);
      h.graph(
        keys.map((k) => task(k)),
        keys,
      );
      const slots = Math.ceil(1.1 * nthreads);
      let out = h.take();
      const sent = computes(out);
      expect(sent.filter((c) => c.worker === "w1")).toHaveLength(slots);
      expect(sent.filter((c) => c.worker === "w2")).toHaveLength(slots);
      expect(h.core.queued.size).toBe(n - 2 * slots);
      const counts: Record<string, number> = {};
      for (const s of Object.values(states(h.core))) counts[s] = (counts[s] ?? 0) + 1;
      expect(counts).toEqual({ "processing.assigned": 2 * slots, queued: n - 2 * slots });
      expect(transitions(out).filter((t) => t.includes("QUEUE released->queued"))).toHaveLength(n - 2 * slots);

      // Each finished task frees one slot on its worker: exactly one queued task moves there,
      // the one with the highest priority.
      let finished = 0;
      while (h.core.queued.size > 0) {
        const queued = [...h.core.tasks.values()].filter((ts) => ts.state === "queued");
        const best = queued.reduce((a, b) => (priorityLess(b.priority, a.priority) ? b : a));
        const victim = sent[finished % sent.length]!;
        const key = [...h.core.workers.get(victim.worker)!.processing][0]!.key;
        h.finish(key);
        finished++;
        out = h.take();
        expect(computes(out)).toEqual([{ worker: victim.worker, key: best.key }]);
        expect(transitions(out)).toEqual([`${key}: FINISH processing.assigned->memory`, `${best.key}: ASSIGN queued->processing.assigned`]);
        expect(h.core.workers.get(victim.worker)!.processing.size).toBe(slots);
      }
      expect(finished).toBe(n - 2 * slots);
    });
  }

  it("workerSaturation Infinity sends every root task at once (co-assignment), queues none", () => {
    const h = new Harness({ workerSaturation: Infinity });
    h.register("w1");
    h.register("w2");
    h.take();
    const keys = rootKeys(20);
    h.graph(
      keys.map((k) => task(k)),
      keys,
    );
    const out = h.take();
    const sent = computes(out);
    expect(sent).toHaveLength(20);
    expect(new Set(sent.map((s) => s.key)).size).toBe(20);
    expect(sent.filter((s) => s.worker === "w1")).toHaveLength(10);
    expect(sent.filter((s) => s.worker === "w2")).toHaveLength(10);
    expect(h.core.queued.size).toBe(0);
    expect(transitions(out).every((t) => t.includes("ASSIGN released->processing.assigned"))).toBe(true);
  });

  it("queued tasks go to a worker that joins later", () => {
    const h = new Harness();
    h.register("w1");
    const keys = rootKeys(10);
    h.graph(
      keys.map((k) => task(k)),
      keys,
    );
    expect(h.core.queued.size).toBe(8);
    h.take();
    h.register("w2");
    const out = h.take();
    expect(computes(out).every((c) => c.worker === "w2")).toBe(true);
    expect(computes(out)).toHaveLength(2);
    expect(h.core.queued.size).toBe(6);
  });
});

describe("SchedulerCore: rejected graphs change nothing", () => {
  const bad: { name: string; tasks: TaskSpec[]; code: string; keys?: string[] }[] = [
    { name: "unknown dependency", tasks: [task("ok1"), task("y", ["nope"])], code: "UNKNOWN_DEPENDENCY", keys: ["y", "nope"] },
    { name: "cycle", tasks: [task("ok1"), task("p", ["q"]), task("q", ["r"]), task("r", ["p"])], code: "CYCLE" },
    { name: "self dependency", tasks: [task("ok1"), task("s", ["s"])], code: "GRAPH" },
    { name: "duplicate key", tasks: [task("ok1"), task("d"), task("d")], code: "GRAPH", keys: ["d"] },
    { name: "bad option: workers: 5", tasks: [task("ok1"), { ...task("z"), workers: 5 as unknown as string[] }], code: "BAD_OPTION" },
    { name: "bad option: priority NaN", tasks: [task("ok1"), task("z", [], { priority: NaN })], code: "BAD_OPTION" },
    { name: "bad option: negative resource", tasks: [task("ok1"), task("z", [], { resources: { GPU: -1 } })], code: "BAD_OPTION" },
    { name: "bad option: allowOtherWorkers not boolean", tasks: [task("ok1"), task("z", [], { allowOtherWorkers: "yes" as unknown as boolean })], code: "BAD_OPTION" },
    { name: "unknown function", tasks: [task("ok1"), { key: "u", func: "no-such-function", args: [], deps: [] }], code: "UNKNOWN_FUNCTION" },
    { name: "empty key", tasks: [task("ok1"), task("")], code: "GRAPH" },
    { name: "deps not an array", tasks: [task("ok1"), { key: "v", func: "f", args: [], deps: "a" as unknown as string[] }], code: "GRAPH" },
  ];

  for (const c of bad) {
    it(`${c.name}: rejected with ${c.code}, the scheduler untouched, the earlier graph still completes`, () => {
      const h = new Harness();
      h.register("w1");
      h.graph([task("a"), task("b", ["a"])], ["b"]);
      h.take();
      const before = { states: states(h.core), generation: h.core.generation, clients: h.core.clients.get("c1")!.size, prefixes: h.core.prefixes.size, groups: h.core.groups.size };
      const reply = h.graph(c.tasks, c.tasks.map((t) => t.key).filter((k) => typeof k === "string"));
      expect(reply.ok).toBe(false);
      const error = (reply as { ok: false; error: ErrorInfo & { keys?: string[] } }).error;
      expect(error.code).toBe(c.code);
      expect(error.message.length).toBeGreaterThan(0);
      if (c.keys) expect(error.keys).toEqual(c.keys);
      expect(h.take()).toEqual([]);
      expect({ states: states(h.core), generation: h.core.generation, clients: h.core.clients.get("c1")!.size, prefixes: h.core.prefixes.size, groups: h.core.groups.size }).toEqual(before);
      expect(h.core.tasks.has("ok1")).toBe(false);

      h.finish("a");
      h.finish("b", 5);
      const out = h.take();
      expect(toClients(out)).toEqual([{ client: "c1", op: { op: "key-in-memory", key: "b", nbytes: 5, workers: ["w1"] } }]);
    });
  }

  it("a dependency on a key the scheduler already has is accepted", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a")], ["a"]);
    h.finish("a");
    expect(h.graph([task("b", ["a"])], ["b"])).toEqual({ ok: true });
    expect(h.core.taskState("b")).toBe("processing.assigned");
  });

  it("resubmitting a known key does not create it twice", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a")], ["a"]);
    h.take();
    expect(h.graph([task("a")], ["a"], "c2")).toEqual({ ok: true });
    expect(computes(h.take())).toEqual([]);
    expect(h.core.tasks.size).toBe(1);
  });
});

describe("SchedulerCore: failures", () => {
  it("an erred task errs its dependents and tells the client which key failed", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a"), task("b", ["a"]), task("c", ["b"]), task("d")], ["a", "c", "d"]);
    h.take();
    h.err("a", "kaboom");
    const out = h.take();
    const error = { name: "Error", message: "kaboom" };
    // Whether b, which only the erred c needed, then stays erred or is released is left
    // open; nothing else may happen.
    expect(transitions(out).filter((t) => t !== "b: RELEASE erred->released")).toEqual([
      "a: ERR processing.assigned->erred",
      "b: ERR waiting->erred",
      "c: ERR waiting->erred",
    ]);
    const tr = out.filter((o) => o.kind === "transition") as Extract<Out, { kind: "transition" }>[];
    expect(tr[1]!.why).toEqual({ blame: "a" });
    expect(tr[2]!.why).toEqual({ blame: "a" });
    expect(toClients(out)).toEqual([
      { client: "c1", op: { op: "key-erred", key: "a", failedKey: "a", error } },
      { client: "c1", op: { op: "key-erred", key: "c", failedKey: "a", error } },
    ]);
    expect(h.core.taskState("d")).toBe("processing.assigned");
    // b was wanted by nobody: forgotten once c goes.
    expect(h.core.tasks.get("a")!.exception).toEqual(error);
    // A late client asking for c hears about the failure at once.
    h.graph([task("c", ["b"])], ["c"], "c2");
    expect(toClients(h.take())).toEqual([{ client: "c2", op: { op: "key-erred", key: "c", failedKey: "a", error } }]);
    // A dependent submitted later on an erred key errs immediately.
    h.graph([task("e", ["c"])], ["e"]);
    const late = h.take();
    expect(transitions(late)).toEqual(["e: ERR released->erred"]);
    expect(toClients(late)).toEqual([{ client: "c1", op: { op: "key-erred", key: "e", failedKey: "a", error } }]);
    // Releasing the erred keys forgets them all.
    h.handle({ op: "release-keys", client: "c1", keys: ["a", "c", "e"] });
    h.handle({ op: "release-keys", client: "c2", keys: ["c"] });
    expect(Object.keys(states(h.core))).toEqual(["d"]);
  });

  it("a task-erred from a worker that is not processing the task changes nothing, and the worker is told to free it", () => {
    const h = new Harness();
    h.register("w1");
    h.register("w2");
    h.graph([task("a", [], { workers: ["w1"] })], ["a"]);
    h.take();
    h.handle({ op: "task-erred", worker: "w2", id: h.ids.get("w2")!, key: "a", error: { name: "Error", message: "x" } });
    // The worker keeps a failed task until freed: nothing here will ever free this one otherwise.
    expect(h.take()).toEqual([{ kind: "worker", worker: "w2", op: { op: "free-keys", keys: ["a"], run: 0, attempt: 1 } }]);
    expect(h.core.taskState("a")).toBe("processing.assigned");
  });

  it("worker-lost reschedules its processing tasks and recomputes lost data that waiting tasks need", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a"), task("p"), task("z"), task("c", ["a", "z"])], ["p", "c"]);
    expect(["a", "p", "z"].map((k) => h.where(k))).toEqual(["w1", "w1", "w1"]);
    h.finish("a", 64);
    expect(h.core.taskState("c")).toBe("waiting");
    h.register("w2");
    h.take();

    h.lose("w1");
    let out = h.take();
    const tr = transitions(out);
    expect(tr).toContain("p: RELEASE processing.assigned->released");
    expect(tr).toContain("z: RELEASE processing.assigned->released");
    expect(tr).toContain("a: RELEASE memory->released");
    expect(transitions(out, "worker")).toEqual(["w1: CLOSED running->closed"]);
    expect(computes(out).sort((x, y) => x.key.localeCompare(y.key))).toEqual([
      { worker: "w2", key: "a" },
      { worker: "w2", key: "p" },
      { worker: "w2", key: "z" },
    ]);
    expect(h.core.taskState("c")).toBe("waiting");
    expect(h.core.tasks.get("p")!.suspicious).toBe(1);
    expect(h.core.tasks.get("a")!.suspicious).toBe(0);
    const relWhy = (out.find((o) => o.kind === "transition" && o.id === "p" && o.event === "RELEASE") as Extract<Out, { kind: "transition" }>).why;
    expect(relWhy).toMatchObject({ rule: "worker-left", worker: "w1" });
    // Nothing is sent to the dead worker.
    expect(toWorkers(out).filter((m) => m.worker === "w1")).toEqual([]);

    h.finish("a", 64);
    h.finish("z", 64);
    out = h.take();
    expect(computes(out)).toEqual([{ worker: "w2", key: "c" }]);
    h.finish("p");
    h.finish("c", 7);
    expect(toClients(h.take())).toEqual([
      { client: "c1", op: { op: "key-in-memory", key: "p", nbytes: 8, workers: ["w2"] } },
      { client: "c1", op: { op: "key-in-memory", key: "c", nbytes: 7, workers: ["w2"] } },
    ]);
    expect(h.core.workers.has("w1")).toBe(false);
    expect(h.core.totalNthreads).toBe(1);
  });

  it("a processing task whose dependency is lost goes back to waiting and the dependency is recomputed", () => {
    const h = new Harness();
    h.register("w1");
    h.register("w2");
    h.graph([task("a", [], { workers: ["w1"] }), task("b", ["a"], { workers: ["w2"] })], ["b"]);
    h.finish("a");
    expect(h.where("b")).toBe("w2");
    h.take();
    h.lose("w1");
    const out = h.take();
    // b is taken back from w2 and waits for a again; a has no valid worker now (restricted to w1).
    expect(frees(out)).toEqual([{ worker: "w2", keys: ["b"] }]);
    expect(h.core.taskState("a")).toBe("no-worker");
    expect(h.core.taskState("b")).toBe("waiting");
    h.register("w1");
    h.finish("a");
    h.finish("b", 3);
    expect(toClients(h.take())).toEqual([{ client: "c1", op: { op: "key-in-memory", key: "b", nbytes: 3, workers: ["w2"] } }]);
  });

  for (const allowedFailures of [0, 1, 3]) {
    it(`after allowedFailures+1 = ${allowedFailures + 1} worker deaths the task errs with KilledWorker`, () => {
      const h = new Harness({ allowedFailures });
      h.register("w0");
      h.graph([task("t"), task("u", ["t"])], ["u"]);
      for (let death = 1; death <= allowedFailures + 1; death++) {
        const victim = h.where("t");
        h.register(`w${death}`);
        h.take();
        h.lose(victim);
        const out = h.take();
        if (death <= allowedFailures) {
          expect(transitions(out)).toEqual([`t: RELEASE processing.assigned->released`, `t: ASSIGN released->processing.assigned`]);
          expect(h.where("t")).toBe(`w${death}`);
          expect(toClients(out)).toEqual([]);
        } else {
          // (t, wanted only by u, may then be released; see the test above.)
          expect(transitions(out).filter((x) => x !== "t: RELEASE erred->released")).toEqual([`t: ERR processing.assigned->erred`, `u: ERR waiting->erred`]);
          const [report] = toClients(out);
          expect(report).toMatchObject({ client: "c1", op: { op: "key-erred", key: "u", failedKey: "t", error: { name: "KilledWorker" } } });
          expect((report!.op as { error: ErrorInfo }).error.message).toContain("t");
          expect(computes(out)).toEqual([]);
        }
      }
    });
  }

  it("a task-erred with code EXECUTOR_LOST counts like a worker death: freed there and run again, then KilledWorker; a worker death adds to the same count", () => {
    const h = new Harness({ allowedFailures: 2 });
    h.register("w0");
    h.graph([task("t")], ["t"]);
    h.take();
    const lost = { name: "ExecutorLost", message: "executor thread exited (code 1)", code: "EXECUTOR_LOST" };
    h.handle({ op: "task-erred", worker: "w0", id: h.ids.get("w0")!, key: "t", error: lost });
    let out = h.take();
    expect(transitions(out)).toEqual([`t: RELEASE processing.assigned->released`, `t: ASSIGN released->processing.assigned`]);
    expect(frees(out)).toEqual([{ worker: "w0", keys: ["t"] }]);
    expect(computes(out)).toEqual([{ worker: "w0", key: "t" }]);
    expect(toClients(out)).toEqual([]);
    h.register("w1");
    h.lose("w0");
    h.take();
    expect(h.core.tasks.get("t")!.suspicious).toBe(2);
    h.handle({ op: "task-erred", worker: "w1", id: h.ids.get("w1")!, key: "t", error: lost });
    out = h.take();
    expect(transitions(out)).toEqual([`t: ERR processing.assigned->erred`]);
    const [report] = toClients(out);
    expect(report).toMatchObject({ client: "c1", op: { op: "key-erred", key: "t", error: { name: "KilledWorker", code: "TASK_FAILED" } } });
    expect((report!.op as { error: ErrorInfo }).error.message).toMatch(/3 times.*a thread of w1: executor thread exited/);
  });

  it("a clean unregister does not count against the task", () => {
    const h = new Harness({ allowedFailures: 0 });
    h.register("w0");
    h.graph([task("t")], ["t"]);
    h.register("w1");
    h.handle({ op: "unregister-worker", name: "w0", id: h.ids.get("w0")!, reason: "retire" });
    expect(h.where("t")).toBe("w1");
    expect(h.core.tasks.get("t")!.suspicious).toBe(0);
  });

  it("a stale task-finished from a previous incarnation (same name, different id) is ignored", () => {
    const h = new Harness();
    h.register("w1", { id: "w1-old" });
    h.graph([task("t")], ["t"]);
    h.lose("w1");
    // No worker left: waiting for one (with no workers every task counts as root-ish: queued).
    expect(["queued", "no-worker"]).toContain(h.core.taskState("t"));
    h.register("w1", { id: "w1-new" });
    expect(h.where("t")).toBe("w1");
    h.take();
    h.finish("t", 8, "w1", "w1-old");
    expect(h.take()).toEqual([]);
    expect(h.core.taskState("t")).toBe("processing.assigned");
    h.handle({ op: "task-erred", worker: "w1", id: "w1-old", key: "t", error: { name: "Error", message: "stale" } });
    h.handle({ op: "worker-lost", name: "w1", id: "w1-old", reason: "stale" });
    h.handle({ op: "add-keys", worker: "w1", id: "w1-old", keys: [{ key: "t", nbytes: 1 }] });
    expect(h.take()).toEqual([]);
    expect(h.core.workers.get("w1")!.id).toBe("w1-new");
    h.finish("t", 8, "w1", "w1-new");
    expect(transitions(h.take())).toEqual(["t: FINISH processing.assigned->memory"]);
  });

  it("a worker re-registering under the same name with a new id replaces the old incarnation", () => {
    const h = new Harness();
    h.register("w1", { id: "w1-old" });
    h.graph([task("t")], ["t"]);
    h.take();
    h.register("w1", { id: "w1-new" });
    const out = h.take();
    expect(transitions(out, "worker")).toEqual(["w1: CLOSED running->closed", "w1: START starting->running"]);
    expect(computes(out)).toEqual([{ worker: "w1", key: "t" }]);
    expect(h.core.tasks.get("t")!.suspicious).toBe(1);
  });
});

describe("SchedulerCore: nothing leaks", () => {
  it("an input recomputed for a dependent that nobody needs any more is let go, not queued for nobody (DST no-leak-7f9f4151)", () => {
    const h = new Harness({ workerSaturation: 1, allowedFailures: 0 });
    h.register("w1");
    const children = ["child-0", "child-1", "child-2"];
    h.graph([task("root"), ...children.map((c) => task(c, ["root"])), task("total", children)], ["total"]);
    h.finish("root");
    h.finish("child-0");
    expect(states(h.core)).toMatchObject({ "child-1": "processing.assigned", "child-2": "queued" });
    // w1 dies: child-1 fails (KilledWorker) and total with it; root's data is lost, and
    // child-2, which was to read it, is needed by nobody any more: neither is root.
    h.lose("w1");
    expect(states(h.core)).toEqual({ root: "released", "child-0": "released", "child-1": "released", "child-2": "released", total: "erred" });
    expect(h.core.tasks.get("root")!.waiters?.size ?? 0).toBe(0);
    h.handle({ op: "release-keys", client: "c1", keys: ["total"] });
    expect(states(h.core)).toEqual({});
  });

  it("a submitted task that nobody wants and nothing depends on is not kept forever", () => {
    // Reachable from the client: compute(graph, { keys: [...] }) wants only some keys of the graph.
    const h = new Harness();
    h.register("w1");
    h.graph([task("a"), task("orphan")], ["a"]);
    h.finish("a");
    h.handle({ op: "release-keys", client: "c1", keys: ["a"] });
    expect(states(h.core)).toEqual({});
    expect(h.core.groups.get("orphan")?.size ?? 0).toBe(0);
  });
});

describe("SchedulerCore: a failed task is freed on the worker it failed on", () => {
  /** Why a transition was made, by "key: EVENT from->to". */
  const whys = (out: Out[]): Record<string, unknown> =>
    Object.fromEntries(
      out.filter((o): o is Extract<Out, { kind: "transition" }> => o.kind === "transition" && o.machine === "task").map((o) => [`${o.id}: ${o.event} ${o.from}->${o.to}`, o.why]),
    );

  it("released by every client that wanted it: free-keys to that worker, and a later submission is a newer assignment", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a")], ["a"], "c1");
    h.graph([task("a")], ["a"], "c2");
    h.err("a");
    h.handle({ op: "release-keys", client: "c1", keys: ["a"] });
    expect(frees(h.take())).toEqual([]);
    h.handle({ op: "client-leave", client: "c2" });
    const out = h.take();
    expect(toWorkers(out)).toEqual([{ worker: "w1", op: { op: "free-keys", keys: ["a"], run: 0, attempt: 1 } }]);
    expect(transitions(out)).toEqual(["a: RELEASE erred->released", "a: FORGET released->forgotten"]);
    expect(whys(out)["a: RELEASE erred->released"]).toEqual({ rule: "free-erred", worker: "w1", attempt: 1 });
    // The same key again: placed afresh, numbered past the free-keys (the worker will not drop it as voided).
    h.graph([task("a")], ["a"], "c3");
    expect(toWorkers(h.take())).toEqual([{ worker: "w1", op: expect.objectContaining({ op: "compute-task", key: "a", attempt: 2 }) }]);
  });

  it("a failed input released once its dependents have erred is freed at once; wanted again, it runs again", () => {
    const h = new Harness();
    h.register("w1");
    h.register("w2");
    h.graph([task("a", [], { workers: ["w2"] }), task("b", ["a"]), task("c", ["a"])], ["b", "c"]);
    h.take();
    h.err("a");
    let out = h.take();
    expect(states(h.core)).toEqual({ a: "released", b: "erred", c: "erred" });
    expect(frees(out)).toEqual([{ worker: "w2", keys: ["a"] }]);
    // Before, w2 kept a in error and answered this compute-task with silence.
    h.graph([task("a", [], { workers: ["w2"] })], ["a"], "c2");
    out = h.take();
    expect(computes(out)).toEqual([{ worker: "w2", key: "a" }]);
    h.err("a");
    expect(toClients(h.take())).toEqual([expect.objectContaining({ client: "c2", op: expect.objectContaining({ op: "key-erred", key: "a" }) })]);
  });

  it("the worker it failed on is gone: nothing to free, and the reason says so", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a")], ["a"]);
    h.err("a");
    h.lose("w1");
    h.register("w1");
    h.take();
    h.handle({ op: "release-keys", client: "c1", keys: ["a"] });
    const out = h.take();
    expect(frees(out)).toEqual([]);
    expect(whys(out)["a: RELEASE erred->released"]).toEqual({ rule: "free-erred", worker: "w1", gone: true });
  });

  it("a task failed because its input failed, or by KilledWorker, ran nowhere: nothing to free", () => {
    const h = new Harness({ allowedFailures: 0 });
    h.register("w1");
    h.register("w2");
    h.graph([task("k", [], { workers: ["w1"] })], ["k"]);
    h.lose("w1");
    expect(states(h.core)).toEqual({ k: "erred" });
    h.take();
    h.handle({ op: "release-keys", client: "c1", keys: ["k"] });
    expect(frees(h.take())).toEqual([]);
  });
});

describe("SchedulerCore: add-keys and missing-data", () => {
  it("add-keys for a key the scheduler does not want is answered with free-keys", () => {
    const h = new Harness();
    h.register("w1");
    h.take();
    h.handle({ op: "add-keys", worker: "w1", id: h.ids.get("w1")!, keys: [{ key: "ghost", nbytes: 3 }] });
    // Stamped with the run and the latest assignment number (none yet): every older assignment of it on w1 is void.
    expect(h.take()).toEqual([{ kind: "worker", worker: "w1", op: { op: "free-keys", keys: ["ghost"], run: 0, attempt: 0 } }]);
  });

  it("missing-data from the only holder makes a needed key be recomputed", () => {
    const h = new Harness();
    h.register("w1");
    h.register("w2");
    h.graph([task("a", [], { workers: ["w1"] }), task("z", [], { workers: ["w2"] }), task("b", ["a", "z"], { workers: ["w2"] })], ["b"]);
    h.finish("a", 16);
    expect(h.core.taskState("b")).toBe("waiting");
    h.take();
    h.handle({ op: "missing-data", worker: "w2", id: h.ids.get("w2")!, key: "a", holder: "w1" });
    const out = h.take();
    expect(transitions(out)).toEqual(["a: RELEASE memory->released", "a: ASSIGN released->processing.assigned"]);
    expect(computes(out)).toEqual([{ worker: "w1", key: "a" }]);
    expect(h.core.workers.get("w1")!.nbytes).toBe(0);
    h.finish("a", 16);
    h.finish("z");
    expect(computes(h.take())).toEqual([{ worker: "w2", key: "b" }]);
  });

  it("missing-data uncounts the holder and tells it to free the key: the report may predate a copy it fetched since", () => {
    const h = replicatedOnBoth(16);
    h.take();
    h.handle({ op: "missing-data", worker: "w1", id: h.ids.get("w1")!, key: "a", holder: "w2" });
    const out = h.take();
    expect(out).toContainEqual({ kind: "worker", worker: "w2", op: expect.objectContaining({ op: "free-keys", keys: ["a"] }) });
    expect(transitions(out)).toEqual([]);
    expect(h.core.taskState("a")).toBe("memory");
    expect(h.core.workers.get("w2")!.nbytes).toBe(0);
  });

  it("missing-data about a holder the scheduler does not know of changes nothing", () => {
    const h = new Harness();
    h.register("w1");
    h.graph([task("a")], ["a"]);
    h.finish("a");
    h.take();
    h.handle({ op: "missing-data", worker: "w1", id: h.ids.get("w1")!, key: "a", holder: "w9" });
    h.handle({ op: "missing-data", worker: "w1", id: h.ids.get("w1")!, key: "nope", holder: "w1" });
    expect(h.take()).toEqual([]);
    expect(h.core.taskState("a")).toBe("memory");
  });
});

describe("SchedulerCore: update-data (scatter)", () => {
  it("scattered data is in memory at once and tasks depending on it run where it lives", () => {
    const h = new Harness();
    h.register("w1");
    h.register("w2");
    h.take();
    h.handle({ op: "update-data", client: "c1", data: [{ key: "d", nbytes: 5_000_000, workers: ["w2"] }] });
    let out = h.take();
    expect(transitions(out)).toEqual(["d: DATA released->memory"]);
    expect(toClients(out)).toEqual([{ client: "c1", op: { op: "key-in-memory", key: "d", nbytes: 5_000_000, workers: ["w2"] } }]);
    h.graph([task("x", ["d"])], ["x"]);
    out = h.take();
    expect(computes(out)).toEqual([{ worker: "w2", key: "x" }]);
  });
});

// ---- determinism ------------------------------------------------------------------------

interface Scenario {
  n: number;
  /** deps[i] are indexes < i. */
  deps: number[][];
  wants: number[];
  workers: number[];
  choices: number[];
  saturation: number;
}

const scenario = fc
  .integer({ min: 1, max: 14 })
  .chain((n) =>
    fc.record({
      n: fc.constant(n),
      deps: fc.tuple(...Array.from({ length: n }, (_, i) => (i === 0 ? fc.constant<number[]>([]) : fc.uniqueArray(fc.integer({ min: 0, max: i - 1 }), { maxLength: Math.min(3, i) })))),
      wants: fc.uniqueArray(fc.integer({ min: 0, max: n - 1 }), { minLength: 1, maxLength: n }),
      workers: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }),
      choices: fc.array(fc.nat(), { minLength: 200, maxLength: 200 }),
      saturation: fc.constantFrom(1.1, 1, Infinity),
    }),
  );

/** The scenario's wanted keys plus every sink (a task nothing depends on), so every task is needed. */
function wantedOf(s: Scenario): number[] {
  const hasDependents = new Set(s.deps.flat());
  const out = new Set(s.wants);
  for (let i = 0; i < s.n; i++) if (!hasDependents.has(i)) out.add(i);
  return [...out];
}

/** Runs a scenario to the end, finishing (or failing) processing tasks in the order `choices` picks. */
function runScenario(s: Scenario): { out: Out[]; harness: Harness } {
  const h = new Harness({ workerSaturation: s.saturation });
  s.workers.forEach((nthreads, i) => h.register(`w${i}`, { nthreads }));
  // Tuple keys so groups (and so the root-ish/queuing path) come into play.
  const key = (i: number) => `('t-${i % 3}', ${i})`;
  h.graph(
    s.deps.map((d, i) => task(key(i), d.map(key))),
    wantedOf(s).map(key),
  );
  let step = 0;
  for (;;) {
    const processing = [...h.core.tasks.values()].filter((ts) => ts.state.startsWith("processing")).map((ts) => ts.key).sort();
    if (processing.length === 0) break;
    const choice = s.choices[step % s.choices.length]! + step;
    step++;
    const k = processing[choice % processing.length]!;
    if (choice % 11 === 5) h.err(k, `failed ${k}`);
    else h.finish(k, 1 + (choice % 1000));
    if (step > 1000) throw new Error("did not finish");
  }
  return { out: h.out, harness: h };
}

describe("SchedulerCore: determinism", () => {
  it("the same stimuli give identical transitions and messages; every wanted key ends in memory or erred", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const first = runScenario(s);
        const second = runScenario(s);
        expect(second.out).toEqual(first.out);
        const core = first.harness.core;
        const key = (i: number) => `('t-${i % 3}', ${i})`;
        const wanted = wantedOf(s);
        for (const w of wanted) expect(["memory", "erred"]).toContain(core.taskState(key(w)));
        // Every compute-task is sent only once all its dependencies are in memory somewhere.
        for (const o of first.out) {
          if (o.kind !== "worker" || o.op.op !== "compute-task") continue;
          for (const dep of o.op.deps) expect(dep.holders.length).toBeGreaterThan(0);
        }
        // Every client report is about a wanted key, and each wanted key is reported exactly once.
        const reported = first.out.filter((o) => o.kind === "client").map((o) => (o as Extract<Out, { kind: "client" }>).op.key);
        expect([...reported].sort()).toEqual(wanted.map(key).sort());
        // Bookkeeping is back to zero once nothing is processing (the exact-zero check of
        // totalOccupancy is its own test below).
        expect(core.totalOccupancy).toBeCloseTo(0, 9);
        for (const ws of core.workers.values()) {
          expect(ws.processing.size).toBe(0);
          expect(ws.occupancy).toBe(0);
        }
        expect(core.queued.size).toBe(0);
        // Released, unneeded keys are forgotten; a release of everything empties the scheduler.
        first.harness.handle({ op: "release-keys", client: "c1", keys: wanted.map(key) });
        expect(core.tasks.size).toBe(0);
        for (const ws of core.workers.values()) {
          expect(ws.hasWhat.size).toBe(0);
          expect(ws.nbytes).toBe(0);
        }
      }),
      { numRuns: 150 },
    );
  });

  it("totalOccupancy is exactly 0 again once no task is processing (no float drift left behind)", () => {
    // Found by the property above; kept as a fixed case.
    const fixed: Scenario = { n: 5, deps: [[], [0], [], [], [0]], wants: [1], workers: [1, 1], choices: [737796626, 87152709, ...Array<number>(198).fill(0)], saturation: 1.1 };
    expect(runScenario(fixed).harness.core.totalOccupancy).toBe(0);
    fc.assert(
      fc.property(scenario, (s) => {
        expect(runScenario(s).harness.core.totalOccupancy).toBe(0);
      }),
      { numRuns: 100 },
    );
  });
});
