/**
 * A compute-task for a newer assignment of a key, whatever state the worker holds the key
 * in, is answered: a report (task-finished or task-erred) numbered with that assignment
 * reaches the scheduler once the work under way ends, however it ends. A worker that kept
 * silent (the key in `error`), or answered with an older number (a request kept from
 * before), held the scheduler's slot for ever (issue 20).
 */
import { describe, expect, it } from "vitest";
import type { ComputeTaskOp, DepInfo, ErrorInfo, WorkerToScheduler } from "../machines/protocol.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerEffects, WorkerInput } from "../machines/worker/inputs.js";
import type { WorkerTaskStateName } from "../machines/tables.js";
import type { Why } from "../machines/reasons.js";
import { exactReason } from "./exact-reason.js";

const RUN = 100;
const BOOM: ErrorInfo = { name: "Error", message: "boom" };

type Op = WorkerInput extends infer I ? (I extends unknown ? Omit<I, "t"> : never) : never;

class Harness {
  readonly core: WorkerCore;
  readonly reports: WorkerToScheduler[] = [];
  readonly transitions: { id: string; event: string; from: string; to: string; why?: Why }[] = [];
  /** Executions and gathers the worker asked its host for, not answered yet. */
  readonly executing: string[] = [];
  readonly gathering = new Map<string, string[]>();
  private t = 0;
  private attempt = 0;

  constructor(nthreads = 1, limit = 50) {
    const fx: WorkerEffects = {
      toScheduler: (op) => this.reports.push(structuredClone(op)),
      execute: (key) => this.executing.push(key),
      gather: (from, keys) => this.gathering.set(from, [...keys]),
      freeData: () => undefined,
      transition: (machine, id, event, from, to, why) => {
        exactReason(machine, event, why);
        this.transitions.push(why === undefined ? { id, event, from, to } : { id, event, from, to, why });
      },
    };
    this.core = new WorkerCore({ name: "w", id: "w#1", nthreads, transferIncomingCountLimit: limit }, fx);
    this.handle({ op: "registered" });
  }

  handle(op: Op): void {
    this.core.handle({ ...op, t: ++this.t } as WorkerInput);
  }

  /** A compute-task for a new assignment (numbers grow, as the scheduler's do); returns its number. */
  compute(key: string, deps: DepInfo[] = []): number {
    const attempt = ++this.attempt;
    const op: ComputeTaskOp = { op: "compute-task", key, func: "f", args: [], deps, priority: [0, 0, 0], duration: 1, run: RUN, attempt };
    this.handle(op);
    return attempt;
  }

  free(keys: string[]): void {
    this.handle({ op: "free-keys", keys, run: RUN, attempt: ++this.attempt });
  }

  finish(key: string, fails: boolean): void {
    this.executing.splice(this.executing.indexOf(key), 1);
    if (fails) this.handle({ op: "execute-failed", key, error: BOOM, start: 0, stop: 1 });
    else this.handle({ op: "execute-done", key, nbytes: 8, start: 0, stop: 1 });
  }

  /**
   * Let everything under way end: executions as `fails` says, transfers from `p1` failing
   * (its holder is gone: the worst case), the others delivering.
   */
  settle(fails: (key: string) => boolean): void {
    for (let rounds = 0; rounds < 20; rounds++) {
      const key = this.executing[0];
      if (key !== undefined) {
        this.finish(key, fails(key));
        continue;
      }
      const [from, keys] = [...this.gathering][0] ?? [];
      if (from === undefined) return;
      this.gathering.delete(from);
      if (from === "p1") this.handle({ op: "gather-failed", from, keys: keys!, reason: "gone" });
      else this.handle({ op: "gather-done", from, received: keys!.map((k) => ({ key: k, nbytes: 8 })), missing: [] });
    }
    throw new Error("the worker did not settle");
  }

  state(key: string): WorkerTaskStateName | undefined {
    return this.core.tasks.get(key)?.state;
  }

  /** Reports about `key` sent since `from` (an index into reports). */
  reportsOf(key: string, from = 0): WorkerToScheduler[] {
    return this.reports.slice(from).filter((r) => (r as { key?: string }).key === key && (r.op === "task-finished" || r.op === "task-erred"));
  }
}

const held = (key: string, holders: string[]): DepInfo => ({ key, nbytes: 8, holders });

/** Ways to bring key `k` into each state, on a worker with one thread. */
const REACH: Record<string, (h: Harness) => void> = {
  absent: () => undefined,
  waiting: (h) => void h.compute("k", [held("x", ["p2"])]),
  ready: (h) => {
    h.compute("busy");
    h.compute("k");
  },
  executing: (h) => void h.compute("k"),
  fetch: (h) => {
    // One transfer at a time: k waits for x's.
    h.compute("d", [held("x", ["p2"]), held("k", ["p1"])]);
  },
  flight: (h) => void h.compute("d", [held("k", ["p1"])]),
  "cancelled (from executing)": (h) => {
    h.compute("k");
    h.free(["k"]);
  },
  "cancelled (from flight)": (h) => {
    h.compute("d", [held("k", ["p1"])]);
    h.free(["d"]);
  },
  "resumed (from executing)": (h) => {
    h.compute("k");
    h.free(["k"]);
    h.compute("k");
  },
  "resumed (from flight)": (h) => {
    h.compute("d", [held("k", ["p1"])]);
    h.free(["d"]);
    h.compute("k");
  },
  memory: (h) => {
    h.compute("k");
    h.finish("k", false);
  },
  error: (h) => {
    h.compute("k");
    h.finish("k", true);
  },
};

const EXPECTED_STATE: Record<string, WorkerTaskStateName | undefined> = {
  absent: undefined,
  waiting: "waiting",
  ready: "ready",
  executing: "executing",
  fetch: "fetch",
  flight: "flight",
  "cancelled (from executing)": "cancelled",
  "cancelled (from flight)": "cancelled",
  "resumed (from executing)": "resumed",
  "resumed (from flight)": "resumed",
  memory: "memory",
  error: "error",
};

describe("WorkerCore: a compute-task for a newer assignment, in every state the key can be in", () => {
  for (const [name, reach] of Object.entries(REACH)) {
    for (const fails of [false, true]) {
      it(`${name}, the task ${fails ? "failing" : "succeeding"} when run: one report, numbered with the newest assignment`, () => {
        const h = new Harness(1, 1);
        reach(h);
        expect(h.state("k")).toBe(EXPECTED_STATE[name]);
        // A failure or result from before stays what it was: the state decides, not `fails`.
        const before = h.reports.length;
        const attempt = h.compute("k", name === "waiting" ? [held("x", ["p2"])] : []);
        h.settle((key) => (key === "k" ? fails : false));
        const reports = h.reportsOf("k", before);
        expect(reports.length, JSON.stringify(h.reports)).toBeGreaterThanOrEqual(1);
        const last = reports[reports.length - 1]! as { op: string; attempt?: number };
        expect(last.attempt).toBe(attempt);
        const outcome = name === "error" ? "task-erred" : name === "memory" ? "task-finished" : null;
        if (outcome !== null) expect(last.op).toBe(outcome);
        expect(["memory", "error"]).toContain(h.state("k"));
      });
    }
  }

  it("a failed task asked for again is answered with the same failure (Dask's TaskErredMsg), not silence", () => {
    const h = new Harness();
    h.compute("k");
    h.finish("k", true);
    expect(h.reportsOf("k")).toEqual([{ op: "task-erred", worker: "w", id: "w#1", key: "k", error: BOOM, attempt: 1, run: RUN }]);
    const attempt = h.compute("k");
    expect(h.reportsOf("k").slice(1)).toEqual([{ op: "task-erred", worker: "w", id: "w#1", key: "k", error: BOOM, attempt, run: RUN }]);
    expect(h.executing).toEqual([]);
  });

  it("free-keys forgets a failed task: the next compute-task runs it again", () => {
    const h = new Harness();
    h.compute("k");
    h.finish("k", true);
    h.free(["k"]);
    expect(h.core.tasks.has("k")).toBe(false);
    h.compute("k");
    expect(h.executing).toEqual(["k"]);
  });

  it("a task asked for while on its way from a peer is computed when the transfer fails, rather than waiting in fetch with no holder", () => {
    const h = new Harness();
    h.compute("d", [held("k", ["p1"])]);
    const attempt = h.compute("k");
    h.handle({ op: "gather-failed", from: "p1", keys: ["k"], reason: "gone" });
    expect(h.transitions.filter((t) => t.id === "k").map((t) => `${t.event} ${t.from}->${t.to}`)).toEqual([
      "FETCH released->fetch",
      "GATHER fetch->flight",
      "FETCH_FAILED flight->fetch",
      "READY fetch->ready",
      "EXECUTE ready->executing",
    ]);
    expect(h.transitions.find((t) => t.id === "k" && t.event === "FETCH_FAILED")!.why).toEqual({ rule: "compute-instead", attempt });
    h.finish("k", false);
    expect(h.reportsOf("k")).toEqual([expect.objectContaining({ op: "task-finished", attempt })]);
  });

  it("a resumed transfer that fails computes the newest request, not the one that resumed it", () => {
    const h = new Harness();
    h.compute("d", [held("k", ["p1"])]);
    h.free(["d"]);
    h.compute("k"); // resumed, with this request kept
    const newest = h.compute("k"); // the free-keys between the two was lost or is late
    h.handle({ op: "gather-failed", from: "p1", keys: ["k"], reason: "gone" });
    expect(h.executing).toEqual(["k"]);
    h.finish("k", false);
    const reports = h.reportsOf("k");
    expect(reports).toEqual([expect.objectContaining({ op: "task-finished", attempt: newest })]);
    // Its own number is not lowered, so a free-keys between the two requests is not mistaken for current.
    expect(h.core.tasks.get("k")!.attempt).toBe(newest);
  });

  it("a failure kept here of a key the scheduler asks to copy from elsewhere is dropped, and the key fetched", () => {
    const h = new Harness();
    h.compute("x");
    h.finish("x", true);
    h.handle({ op: "acquire-replicas", keys: [held("x", ["p2"])] });
    const x = h.transitions.filter((t) => t.id === "x").slice(-3);
    expect(x.map((t) => `${t.event} ${t.from}->${t.to}`)).toEqual(["FREE error->released", "FETCH released->fetch", "GATHER fetch->flight"]);
    expect(x[0]!.why).toEqual({ rule: "replica-in-memory-elsewhere" });
  });

  it("a failure kept here of an input the scheduler now has in memory elsewhere is dropped, and the input fetched", () => {
    const h = new Harness();
    h.compute("x");
    h.finish("x", true);
    h.compute("d", [held("x", ["p2"])]);
    const x = h.transitions.filter((t) => t.id === "x").slice(-3);
    expect(x.map((t) => `${t.event} ${t.from}->${t.to}`)).toEqual(["FREE error->released", "FETCH released->fetch", "GATHER fetch->flight"]);
    expect(x[0]!.why).toEqual({ rule: "input-in-memory-elsewhere" });
    h.settle(() => false);
    expect(h.state("d")).toBe("memory");
  });

  it("acquire-replicas of a key failed here copies it", () => {
    const h = new Harness();
    h.compute("x");
    h.finish("x", true);
    h.handle({ op: "acquire-replicas", keys: [held("x", ["p2"])] });
    expect(h.state("x")).toBe("flight");
    h.settle(() => false);
    expect(h.state("x")).toBe("memory");
    expect(h.reports.at(-1)).toEqual({ op: "add-keys", worker: "w", id: "w#1", keys: [{ key: "x", nbytes: 8 }] });
  });

  it("a new scheduler run forgets the failures the last one never freed", () => {
    const h = new Harness();
    h.compute("k");
    h.finish("k", true);
    h.handle({ op: "free-keys", keys: ["other"], run: RUN + 1, attempt: 1 });
    expect(h.core.tasks.has("k")).toBe(false);
    expect(h.transitions.at(-1)).toEqual({ id: "k", event: "FREE", from: "error", to: "released", why: { rule: "new-run", run: RUN + 1 } });
  });
});
