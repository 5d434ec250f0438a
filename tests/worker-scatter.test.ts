/**
 * The worker core and scattered data (docs/protocol.md, "Scatter"): put-data creates, never
 * overwrites; a scattered copy is unconfirmed until the scheduler names this worker as its
 * holder, and until then is neither a result nor an input; the scatter lease confirms or
 * drops what is left.
 */
import { describe, expect, it } from "vitest";
import type { DepInfo, WorkerToScheduler } from "../machines/protocol.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInput } from "../machines/worker/inputs.js";
import type { Why } from "../machines/reasons.js";
import { exactReason } from "./exact-reason.js";

type Op = WorkerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

interface Transition {
  key: string;
  line: string;
  why: Why | undefined;
}

/** A worker core named "w" with everything it asks for written down. */
class Worker {
  transitions: Transition[] = [];
  sent: WorkerToScheduler[] = [];
  executed: string[] = [];
  gathered: { from: string; keys: string[] }[] = [];
  freed: string[] = [];
  readonly core = new WorkerCore(
    { name: "w", id: "w#1", nthreads: 1, transferIncomingCountLimit: 10 },
    {
      toScheduler: (op) => this.sent.push(structuredClone(op)),
      execute: (key) => this.executed.push(key),
      gather: (from, keys) => this.gathered.push({ from, keys: [...keys] }),
      freeData: (key) => this.freed.push(key),
      transition: (machine, id, event, from, to, why) => {
        exactReason(machine, event, why);
        if (machine === "wtask") this.transitions.push({ key: id, line: `${id}: ${event} ${from}->${to}`, why });
      },
    },
  );
  private t = 0;

  constructor() {
    this.handle({ op: "registered" });
  }

  handle(op: Op): void {
    this.core.handle({ ...op, t: ++this.t } as WorkerInput);
  }

  put(...keys: string[]): void {
    this.handle({ op: "put-data", keys: keys.map((key) => ({ key, nbytes: 8 })) });
  }

  compute(key: string, deps: DepInfo[] = []): void {
    this.handle({ op: "compute-task", key, func: "f", args: [], deps, priority: [0, 0, 0], duration: 1, run: 1, attempt: ++this.t });
  }

  /** What happened since the last call, as "key: EVENT from->to" lines. */
  lines(): string[] {
    const lines = this.transitions.map((t) => t.line);
    this.transitions = [];
    return lines;
  }

  reset(): void {
    this.transitions = [];
    this.sent = [];
    this.executed = [];
    this.gathered = [];
    this.freed = [];
  }
}

const dep = (key: string, holders: string[]): DepInfo => ({ key, nbytes: 8, holders });

describe("put-data: scatter creates, never overwrites", () => {
  it("refuses, all or nothing, a key the worker already has in any state but released", () => {
    const w = new Worker();
    w.compute("computed");
    w.handle({ op: "execute-done", key: "computed", nbytes: 8, start: 0, stop: 1 });
    w.compute("running");
    w.compute("waits", [dep("fetched", ["p"])]);
    w.reset();
    for (const key of ["computed", "running", "waits", "fetched"]) expect(w.core.putDataRefusal([key, "fresh"])).toEqual({ reserved: [], existing: [key] });
    expect(w.core.putDataRefusal(["fresh", "other"])).toBeNull();
    // A host that feeds it anyway changes nothing: the refusal is logged with its reasons.
    w.put("computed", "fresh");
    expect(w.lines()).toEqual(["computed: STALE memory->memory"]);
    expect(w.core.tasks.has("fresh")).toBe(false);
    expect(w.sent).toEqual([]);
  });

  it("refuses keys no task may have (__proto__, constructor, ...), naming them", () => {
    const w = new Worker();
    expect(w.core.putDataRefusal(["ok", "__proto__", "constructor"])).toEqual({ reserved: ["__proto__", "constructor"], existing: [] });
    w.put("ok", "__proto__");
    expect(w.core.tasks.has("ok")).toBe(false);
  });

  it("stores new keys as unconfirmed scattered data, reported nowhere: not in holding()", () => {
    const w = new Worker();
    w.put("d");
    expect(w.lines()).toEqual(["d: DATA released->memory"]);
    expect(w.core.tasks.get("d")!.scattered).toBe(true);
    expect(w.core.holding()).toEqual([]);
    expect(w.sent).toEqual([]);
  });
});

describe("a scattered copy is not a result", () => {
  it("a compute-task for a key scattered here is computed, not answered from the copy", () => {
    const w = new Worker();
    w.put("k");
    w.reset();
    w.compute("k");
    expect(w.lines()).toEqual(["k: FREE memory->released", "k: READY released->ready", "k: EXECUTE ready->executing"]);
    expect(w.freed).toEqual(["k"]);
    expect(w.executed).toEqual(["k"]);
    expect(w.sent).toEqual([]);
    w.handle({ op: "execute-done", key: "k", nbytes: 3, start: 0, stop: 1 });
    expect(w.sent).toMatchObject([{ op: "task-finished", key: "k", nbytes: 3 }]);
    expect(w.core.holding()).toEqual([{ key: "k", nbytes: 3 }]);
  });

  it("says why it dropped the copy", () => {
    const w = new Worker();
    w.put("k");
    w.reset();
    w.compute("k");
    expect(w.transitions[0]!.why).toMatchObject({ rule: "scattered-not-a-result", op: "compute-task" });
  });
});

describe("a scattered copy is an input only where the scheduler counts it", () => {
  it("named as held elsewhere: dropped and fetched from the holders", () => {
    const w = new Worker();
    w.put("d");
    w.reset();
    w.compute("b", [dep("d", ["p1"])]);
    expect(w.transitions[0]).toMatchObject({ line: "d: FREE memory->released", why: { rule: "scattered-not-counted", op: "compute-task", holders: ["p1"] } });
    expect(w.lines()).toEqual(["d: FREE memory->released", "d: FETCH released->fetch", "b: WAIT_DEPS released->waiting", "d: GATHER fetch->flight"]);
    expect(w.freed).toEqual(["d"]);
    expect(w.gathered).toEqual([{ from: "p1", keys: ["d"] }]);
    expect(w.executed).toEqual([]);
  });

  it("named as held here: confirmed, used, and reported from then on", () => {
    const w = new Worker();
    w.put("d");
    w.reset();
    w.compute("b", [dep("d", ["w", "p1"])]);
    expect(w.transitions[0]).toMatchObject({ line: "d: CONFIRM memory->memory", why: { rule: "scatter-confirmed", op: "compute-task" } });
    expect(w.executed).toEqual(["b"]);
    expect(w.core.tasks.get("d")!.scattered).toBe(false);
    expect(w.core.holding()).toEqual([{ key: "d", nbytes: 8 }]);
  });

  it("acquire-replicas of an unconfirmed copy fetches the key rather than vouching for the copy", () => {
    const w = new Worker();
    w.put("d", "e");
    w.reset();
    w.handle({ op: "acquire-replicas", keys: [dep("d", ["p1"]), dep("e", ["w"])] });
    expect(w.lines()).toEqual(["d: FREE memory->released", "d: FETCH released->fetch", "e: CONFIRM memory->memory", "d: GATHER fetch->flight"]);
    expect(w.sent).toEqual([{ op: "add-keys", worker: "w", id: "w#1", keys: [{ key: "e", nbytes: 8 }] }]);
    expect(w.gathered).toEqual([{ from: "p1", keys: ["d"] }]);
  });
});

describe("the scatter lease", () => {
  it("confirms what the scheduler lists here, drops and forgets the rest", () => {
    const w = new Worker();
    w.put("kept", "orphan");
    w.reset();
    w.handle({ op: "scatter-lease", held: ["kept"], unclaimed: ["orphan"] });
    expect(w.transitions.map((t) => [t.line, t.why !== undefined && "rule" in t.why ? t.why.rule : undefined])).toEqual([
      ["kept: CONFIRM memory->memory", "scatter-confirmed"],
      ["orphan: FREE memory->released", "scatter-lease-expired"],
    ]);
    expect(w.freed).toEqual(["orphan"]);
    expect(w.core.tasks.has("orphan")).toBe(false);
    expect(w.core.holding()).toEqual([{ key: "kept", nbytes: 8 }]);
    // The key is free again for a scatter.
    expect(w.core.putDataRefusal(["orphan"])).toBeNull();
  });

  it("leaves alone keys confirmed, computed or freed since it was asked", () => {
    const w = new Worker();
    w.put("a", "b", "c");
    w.compute("x", [dep("a", ["w"])]);
    w.compute("b");
    w.handle({ op: "free-keys", keys: ["c"], run: 1, attempt: 1000 });
    w.reset();
    w.handle({ op: "scatter-lease", held: [], unclaimed: ["a", "b", "c", "never-here"] });
    expect(w.lines()).toEqual([]);
    expect(w.freed).toEqual([]);
  });
});
