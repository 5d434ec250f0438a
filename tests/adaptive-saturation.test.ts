/**
 * Adaptive worker saturation (workerSaturation "adaptive", machines/scheduler/saturation.ts):
 * the rule's bounds on its own, then in simulated runs whose round trips the simulator makes
 * (latency, a slow worker's own delay), read back from each placement's reasons.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { resolveConfig, type Config } from "../machines/config.js";
import { isPlacement, readReason } from "../machines/reasons.js";
import { adaptiveSlotCount, adaptiveSlots, type SaturationWhy } from "../machines/scheduler/saturation.js";
import { Estimates } from "../machines/scheduler/estimates.js";
import { GroupRec, PrefixRec, TaskRec, WorkerRec } from "../machines/scheduler/state.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerToScheduler } from "../machines/protocol.js";
import type { InputRecord, LogRecord, TransitionRecord } from "../log/types.js";
import { simulate, type Scenario, type SimTaskSpec } from "../sim.js";
import { storyLines } from "../tools/story.js";
import { extractWorkload } from "../tools/workload-extract.js";
import { replayLog, transitions } from "./sim-helpers.js";

const MiB = 2 ** 20;

function worker(config: Config, nthreads: number, roundTrip: number): WorkerRec {
  const ws = new WorkerRec("w", "w-1", nthreads, "h", {}, [], 0, new Estimates(config));
  ws.roundTrip = roundTrip;
  return ws;
}

/** A group of prefix "f" with `duration` (-1: unknown) and, if given, one finished output of `nbytes`. */
function group(duration: number, nbytes?: number): GroupRec {
  const g = new GroupRec("f-0", new PrefixRec("f", duration));
  if (nbytes !== undefined) {
    g.outputBytes = nbytes;
    g.outputCount = 1;
  }
  return g;
}

describe("the adaptive rule", () => {
  const config = resolveConfig({ workerSaturation: "adaptive" });

  it("adds ceil(nthreads x rtt / duration) to Dask's ceil(1.1 x nthreads)", () => {
    // 2 threads, 3 ms round trip, 1 ms tasks: 3 + 6.
    expect(adaptiveSlots(config, worker(config, 2, 0.003), group(0.001, 8), true)).toEqual({ slots: 9, limit: "round-trip", rtt: 0.003, duration: 0.001, nbytes: 8 });
    // A round trip of nothing adds nothing.
    expect(adaptiveSlots(config, worker(config, 4, 0), group(0.5, 8), true).slots).toBe(5);
    expect(adaptiveSlots(config, worker(config, 4, 0), group(0, 8), true)).toMatchObject({ slots: 5, limit: "round-trip" });
  });

  it("adds the tasks a worker's threads run during its report hold, for tasks this short that nothing waits on (reportHold)", () => {
    const holding = worker(config, 2, 0.003);
    holding.reportHold = 0.05;
    // 20 ms tasks: 3 + ceil(2 x 3 / 20) + ceil(2 x 50 / 20).
    expect(adaptiveSlots(config, holding, group(0.02, 8), true)).toEqual({ slots: 9, limit: "round-trip", rtt: 0.003, duration: 0.02, nbytes: 8, hold: 0.05 });
    expect(adaptiveSlotCount(config, holding, group(0.02, 8), true)).toBe(9);
    // 30 ms tasks on 1 thread: 2 + ceil(3 / 30) + ceil(50 / 30).
    const single = worker(config, 1, 0.003);
    single.reportHold = 0.05;
    expect(adaptiveSlotCount(config, single, group(0.03, 8), true)).toBe(5);
    // A task with dependents: its report is never held, nothing more.
    expect(adaptiveSlots(config, holding, group(0.02, 8), false)).toEqual({ slots: 4, limit: "round-trip", rtt: 0.003, duration: 0.02, nbytes: 8 });
    expect(adaptiveSlotCount(config, holding, group(0.02, 8), false)).toBe(4);
    // Tasks as long as the hold or longer: their reports are never held, nothing more.
    expect(adaptiveSlots(config, holding, group(0.05, 8), true)).toEqual({ slots: 4, limit: "round-trip", rtt: 0.003, duration: 0.05, nbytes: 8 });
    // Unmeasured: Dask's count, hold or not.
    expect(adaptiveSlots(config, holding, group(-1, 8), true).slots).toBe(3);
    // The cap still holds.
    const capped = resolveConfig({ workerSaturation: "adaptive", adaptiveSaturationCap: 3 });
    const cappedHolder = worker(capped, 2, 0.003);
    cappedHolder.reportHold = 0.05;
    expect(adaptiveSlots(capped, cappedHolder, group(0.001, 8), true)).toMatchObject({ slots: 6, limit: "cap", hold: 0.05 });
  });

  it.each([
    ["round trip", -1, 0.001, 8],
    ["duration", 0.003, -1, 8],
    ["output size", 0.003, 0.001, undefined],
  ])("is Dask's count while the %s is unmeasured", (_, rtt, duration, nbytes) => {
    for (const nthreads of [1, 2, 3, 8]) {
      const why = adaptiveSlots(config, worker(config, nthreads, rtt), group(duration, nbytes), true);
      expect(why.slots).toBe(Math.max(Math.ceil(1.1 * nthreads), 1));
      expect(why.limit).toBe("dask");
    }
  });

  it("never gives more than adaptiveSaturationCap tasks per thread", () => {
    const capped = resolveConfig({ workerSaturation: "adaptive", adaptiveSaturationCap: 4 });
    // 0.1 s round trip over 1 ms tasks wants 100 more; 3 threads x 4.
    expect(adaptiveSlots(capped, worker(capped, 3, 0.1), group(0.001, 8), true)).toMatchObject({ slots: 12, limit: "cap" });
    // A task measured at 0 s wants infinitely many: the cap still holds.
    expect(adaptiveSlots(capped, worker(capped, 1, 0.001), group(0, 8), true)).toMatchObject({ slots: 4, limit: "cap" });
    // Below Dask's count, the cap gives way: never fewer than Dask.
    const low = resolveConfig({ workerSaturation: "adaptive", adaptiveSaturationCap: 1 });
    expect(adaptiveSlots(low, worker(low, 4, 0.1), group(0.001, 8), true)).toMatchObject({ slots: 5, limit: "cap" });
  });

  it("keeps the tasks' outputs within adaptiveSaturationMemory, but never below Dask's count", () => {
    const budget = resolveConfig({ workerSaturation: "adaptive", adaptiveSaturationMemory: 100 * MiB });
    // 10 MiB outputs: 10 tasks fit, where the round trip wants 3 + 100.
    expect(adaptiveSlots(budget, worker(budget, 2, 0.1), group(0.001, 10 * MiB), true)).toMatchObject({ slots: 10, limit: "memory" });
    // 80 MiB outputs: one fits, Dask's 3 still go.
    expect(adaptiveSlots(budget, worker(budget, 2, 0.1), group(0.001, 80 * MiB), true)).toMatchObject({ slots: 3, limit: "memory" });
  });
});

describe("the count placement asks for", () => {
  it("is the count the reasons give, whatever is measured", () => {
    const measure = fc.oneof(fc.constant(-1), fc.constant(0), fc.double({ min: 0, max: 10, noNaN: true }));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }),
        measure,
        measure,
        fc.option(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2 ** 32 }))),
        fc.integer({ min: 1, max: 1024 }),
        fc.integer({ min: 1, max: 2 ** 31 }),
        (nthreads, rtt, duration, nbytes, cap, memory) => {
          const config = resolveConfig({ workerSaturation: "adaptive", adaptiveSaturationCap: cap, adaptiveSaturationMemory: memory });
          const ws = worker(config, nthreads, rtt);
          const g = group(duration, nbytes ?? undefined);
          expect(adaptiveSlotCount(config, ws, g, true)).toBe(adaptiveSlots(config, ws, g, true).slots);
        },
      ),
      { numRuns: 500 },
    );
  });
});

/** Every rootish-queuing placement's adaptive saturation, with its worker and time, in log order (simulated workers: all with figures). */
function saturations(log: LogRecord[]): { key: string; worker: string; t: number; s: Required<SaturationWhy> }[] {
  const out: { key: string; worker: string; t: number; s: Required<SaturationWhy> }[] = [];
  for (const r of transitions(log, { actor: "scheduler", machine: "task", event: "ASSIGN" })) {
    const reason = readReason(r, true);
    if (!isPlacement(reason) || reason.kind !== "rootish-queuing") continue;
    const s = reason.why.saturation;
    expect(s, r.id).toBeDefined();
    expect([s!.rtt, s!.duration, s!.nbytes].every((x) => typeof x === "number"), r.id).toBe(true);
    out.push({ key: r.id, worker: reason.why.worker, t: r.t, s: s as Required<SaturationWhy> });
  }
  return out;
}

/** The most tasks each worker was processing at once, by the scheduler's log (assigned, not finished or released). */
function peakProcessing(log: LogRecord[]): Record<string, number> {
  const on = new Map<string, string>();
  const now: Record<string, number> = {};
  const peak: Record<string, number> = {};
  for (const r of log) {
    if (r.kind !== "transition" || r.actor !== "scheduler" || r.machine !== "task") continue;
    const t = r as TransitionRecord;
    if (t.to.startsWith("processing") && !t.from.startsWith("processing")) {
      const reason = readReason(t);
      const name = isPlacement(reason) ? reason.why.worker : (t.why as { worker: string }).worker;
      on.set(t.id, name);
      now[name] = (now[name] ?? 0) + 1;
      peak[name] = Math.max(peak[name] ?? 0, now[name]!);
    } else if (t.from.startsWith("processing") && !t.to.startsWith("processing")) {
      const name = on.get(t.id)!;
      on.delete(t.id);
      now[name]! -= 1;
    }
  }
  return peak;
}

/** Keys padded so that priority order (by key) is index order. */
const rootKey = (i: number) => `root-${String(i).padStart(4, "0")}`;
const roots = (n: number, task: (i: number) => Partial<SimTaskSpec>): SimTaskSpec[] => Array.from({ length: n }, (_, i) => ({ key: rootKey(i), duration: 0.001, nbytes: 8, ...task(i) }));

/** A run in which every task wanted ends in memory. */
function run(scenario: Scenario, wanted?: string) {
  const result = simulate(scenario);
  for (const [key, t] of Object.entries(result.tasks)) if (wanted === undefined || key === wanted) expect(t.state, key).toBe("memory");
  return result;
}

describe("adaptive saturation in the simulator", () => {
  it("places its first tasks as Dask does, then covers the round trip, and finishes sooner than 1.1", () => {
    // 1 ms tasks, 5 ms one way: a 10 ms round trip, ten tasks' worth.
    const scenario = (workerSaturation: Config["workerSaturation"]): Scenario => ({
      config: { workerSaturation, workStealing: false },
      network: { latency: 0.005 },
      workers: [{ name: "a" }, { name: "b", nthreads: 2 }],
      tasks: roots(400, () => ({})),
    });
    const adaptive = run(scenario("adaptive"));
    const dask = run(scenario(1.1));
    const seen = saturations(adaptive.log);
    const first = seen.filter((p) => p.t === seen[0]!.t);
    // Before any report: Dask's 2 and 3, nothing measured.
    expect(first.map((p) => p.s.limit)).toEqual(Array(5).fill("dask"));
    expect(first.filter((p) => p.worker === "a")).toHaveLength(2);
    expect(first.filter((p) => p.worker === "b")).toHaveLength(3);
    const later = seen.filter((p) => p.s.limit === "round-trip");
    expect(later.length).toBeGreaterThan(0);
    for (const p of later) {
      // rtt: twice the latency (the simulator's hosts add nothing here), smoothed samples of it.
      expect(p.s.rtt).toBeCloseTo(0.01, 6);
      // The reasons give rtt and duration to the microsecond: the count from them may be one off.
      const expected = p.worker === "a" ? 2 + Math.ceil(p.s.rtt / p.s.duration) : 3 + Math.ceil((2 * p.s.rtt) / p.s.duration);
      expect(Math.abs(p.s.slots - expected), `${p.key}: ${JSON.stringify(p.s)}`).toBeLessThanOrEqual(1);
    }
    expect(adaptive.makespan).toBeLessThan(0.6 * dask.makespan);
  });

  it("with no round trip to cover, places every task exactly as saturation 1.1 does", () => {
    const scenario = (workerSaturation: Config["workerSaturation"]): Scenario => ({
      config: { workerSaturation },
      network: { latency: 0 },
      workers: [{ name: "a" }, { name: "b", nthreads: 3 }],
      tasks: roots(60, (i) => ({ duration: 0.01 * (1 + (i % 3)) })),
    });
    const adaptive = run(scenario("adaptive"));
    const dask = run(scenario(1.1));
    expect(adaptive.tasks).toEqual(dask.tasks);
    expect(adaptive.makespan).toBe(dask.makespan);
  });

  it("stops at the cap: at most adaptiveSaturationCap tasks per thread on a worker", () => {
    const result = run({
      config: { workerSaturation: "adaptive", adaptiveSaturationCap: 6, workStealing: false },
      network: { latency: 0.01 },
      workers: [{ name: "a" }, { name: "b", nthreads: 2 }],
      tasks: roots(600, () => ({ duration: 0.0001 })),
    });
    const seen = saturations(result.log);
    expect(seen.some((p) => p.s.limit === "cap")).toBe(true);
    for (const p of seen) expect(p.s.slots).toBeLessThanOrEqual(p.worker === "a" ? 6 : 12);
    const peak = peakProcessing(result.log);
    expect(peak).toEqual({ a: 6, b: 12 });
  });

  it("keeps the outputs in flight within the memory budget", () => {
    const result = run({
      config: { workerSaturation: "adaptive", adaptiveSaturationMemory: 40 * MiB, workStealing: false },
      network: { latency: 0.01 },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: roots(200, () => ({ duration: 0.001, nbytes: 10 * MiB })),
    });
    const seen = saturations(result.log);
    expect(seen.some((p) => p.s.limit === "memory" && p.s.slots === 4)).toBe(true);
    for (const p of seen) expect(p.s.slots).toBeLessThanOrEqual(4);
    expect(Math.max(...Object.values(peakProcessing(result.log)))).toBe(4);
  });

  it("follows a prefix whose duration changes mid-run: fewer tasks once they grow longer", () => {
    // The first 300 tasks take 0.2 ms, the 300 after them 20 ms: the 10 ms round trip is then
    // half a task. (The ~100 long tasks placed before the first of them finishes keep the old count.)
    const result = run({
      config: { workerSaturation: "adaptive", workStealing: false },
      network: { latency: 0.005 },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: roots(600, (i) => ({ duration: i < 300 ? 0.0002 : 0.02 })),
    });
    const seen = saturations(result.log).filter((p) => p.s.limit !== "dask");
    const early = seen.filter((p) => p.key < rootKey(250));
    const late = seen.slice(-40);
    // 2 + ceil(0.01 / 0.0002) while they take 0.2 ms (one off: rtt and duration are smoothed).
    expect(Math.abs(Math.max(...early.map((p) => p.s.slots)) - 52)).toBeLessThanOrEqual(1);
    // 2 + ceil(0.01 / ~0.02) once the average has moved to the long tasks.
    for (const p of late) expect(p.s.slots).toBe(3);
  });

  it("with a worker that holds its reports (reportHold), the tasks its hold lasts, reports held and answered from when they left", () => {
    // 20 ms tasks, 1 ms each way: Dask's 2 + ceil(2 ms / 20 ms) + ceil(50 ms / 20 ms) for the hold.
    const scenario = (reportHold?: number): Scenario => ({
      config: { workerSaturation: "adaptive", workStealing: false },
      network: { latency: 0.001 },
      workers: [{ name: "a", ...(reportHold !== undefined ? { reportHold } : {}) }],
      tasks: roots(60, () => ({ duration: 0.02 })),
    });
    const holding = run(scenario(0.05));
    const plain = run(scenario());
    const measured = (log: LogRecord[]) => saturations(log).filter((p) => p.s.limit === "round-trip");
    expect(measured(holding.log).length).toBeGreaterThan(0);
    for (const p of measured(holding.log)) {
      expect(p.s).toMatchObject({ slots: 6, hold: 0.05 });
      // The round trip leaves the hold out: the network's 2 ms, not the tens a report waited.
      expect(p.s.rtt).toBeCloseTo(0.002, 6);
    }
    for (const p of measured(plain.log)) expect(p.s.slots).toBe(3);
    // story says what the hold added.
    const story = storyLines(holding.log, measured(holding.log).at(-1)!.key).map((line) => JSON.stringify(line)).join("\n");
    expect(story).toContain("may process 6 (Dask's count plus enough to cover the round trip and the worker's report hold;");
    expect(story).toContain("report hold 50.000 ms");
    const reports = (log: LogRecord[]) =>
      log.filter((r): r is InputRecord => r.actor === "scheduler" && r.kind === "input" && r.event.op === "task-finished").map((r) => r.event as { held?: number });
    expect(reports(holding.log).some((op) => (op.held ?? 0) > 0)).toBe(true);
    expect(reports(plain.log).every((op) => op.held === undefined)).toBe(true);
    expect(replayLog(holding.log).mismatches).toEqual([]);
    // what-if gives a recorded worker the hold it registered with.
    expect(extractWorkload(holding.log).scenario.workers).toEqual([{ name: "a", nthreads: 1, reportHold: 0.05 }]);
    // Roots that other tasks wait on: their reports go at once, so the hold adds nothing.
    const feeding = run({
      ...scenario(0.05),
      tasks: [...roots(60, () => ({ duration: 0.02 })), ...Array.from({ length: 30 }, (_, i) => ({ key: `pair-${i}`, deps: [rootKey(2 * i), rootKey(2 * i + 1)], duration: 0.001 }))],
    }, "pair-29");
    expect(measured(feeding.log).length).toBeGreaterThan(0);
    for (const p of measured(feeding.log)) {
      expect(p.s.slots).toBe(3);
      expect(p.s.hold).toBeUndefined();
    }
    expect(reports(feeding.log).filter((op) => (op as { key?: string }).key?.startsWith("root-")).every((op) => op.held === undefined)).toBe(true);
  });

  it("gives a slow worker (a longer round trip) more tasks than a fast one", () => {
    const result = run({
      config: { workerSaturation: "adaptive", workStealing: false },
      network: { latency: 0.001 },
      workers: [{ name: "fast" }, { name: "slow", delay: 0.004 }],
      tasks: roots(400, () => ({})),
    });
    const seen = saturations(result.log).filter((p) => p.s.limit === "round-trip");
    const last = (name: string) => seen.filter((p) => p.worker === name).at(-1)!.s;
    // Round trips: 2 ms, and 2 + 4 ms (every message to the slow worker waits 4 ms more).
    expect(last("fast").rtt).toBeCloseTo(0.002, 6);
    expect(last("slow").rtt).toBeCloseTo(0.006, 6);
    for (const s of [last("fast"), last("slow")]) expect(Math.abs(s.slots - (2 + Math.ceil(s.rtt / s.duration)))).toBeLessThanOrEqual(1);
    expect(last("slow").slots).toBeGreaterThan(last("fast").slots);
  });

  it("replays exactly: the round trips ride on the logged task-finished inputs", () => {
    const result = run(
      {
        config: { workerSaturation: "adaptive" },
        network: { latency: 0.002 },
        workers: [{ name: "a", nthreads: 2 }, { name: "b", delay: 0.003 }],
        tasks: [...roots(300, (i) => ({ duration: i < 150 ? 0.0005 : 0.004 })), { key: "total-0", deps: Array.from({ length: 300 }, (_, i) => rootKey(i)), duration: 0.001 }],
      },
      "total-0",
    );
    const reported = result.log.filter((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "task-finished" && r.event.roundTrip !== undefined);
    expect(reported.length).toBeGreaterThan(100);
    expect(replayLog(result.log).mismatches).toEqual([]);
  });
});

describe("a worker that measures no round trips", () => {
  it("is placed as Dask places (its reasons say so), and its compute-tasks carry no answers", () => {
    const scenario = (roundTrips: boolean): Scenario => ({
      config: { workerSaturation: "adaptive", workStealing: false },
      network: { latency: 0.005 },
      workers: [{ name: "a", ...(roundTrips ? {} : { roundTrips: false as const }) }, { name: "b" }],
      tasks: roots(200, () => ({})),
    });
    const result = run(scenario(false));
    const placed = transitions(result.log, { actor: "scheduler", machine: "task", event: "ASSIGN" }).map((r) => readReason(r, true));
    const onA = placed.filter((r) => isPlacement(r) && r.why.worker === "a");
    expect(onA.length).toBeGreaterThan(0);
    for (const r of onA) expect(isPlacement(r) && r.kind === "rootish-queuing" ? r.why.saturation : undefined).toEqual({ slots: 2, limit: "dask" });
    expect(placed.some((r) => isPlacement(r) && r.kind === "rootish-queuing" && r.why.worker === "b" && r.why.saturation?.limit === "round-trip")).toBe(true);
    const computes = (worker: string) => result.log.filter((r) => r.kind === "input" && r.actor === `worker.${worker}` && r.event.op === "compute-task");
    expect(computes("a").every((r) => r.kind === "input" && (r.event as { answers?: number }).answers === undefined)).toBe(true);
    expect(computes("b").some((r) => r.kind === "input" && (r.event as { answers?: number }).answers !== undefined)).toBe(true);
    expect(replayLog(result.log).mismatches).toEqual([]);
  });

  it("is the only false a scenario takes for roundTrips", () => {
    expect(() => simulate({ workers: [{ name: "a", roundTrips: true as unknown as false }], tasks: [{ key: "x", duration: 1 }] })).toThrow("roundTrips");
  });
});

describe("the worker's round trip", () => {
  /** Three tasks; the second's compute-task answers the first's report, 4 ms after its stop. */
  function reported(roundTrips?: false): (number | undefined)[] {
    const sent: WorkerToScheduler[] = [];
    const core = new WorkerCore(
      { name: "w", id: "w-1", nthreads: 1, transferIncomingCountLimit: 50, ...(roundTrips === false ? { roundTrips } : {}) },
      { toScheduler: (op) => sent.push(op), execute() {}, gather() {}, freeData() {}, transition() {} },
    );
    core.handle({ op: "registered", run: 1, t: 0 });
    const compute = (key: string, attempt: number, t: number, answers?: number) =>
      core.handle({ op: "compute-task", key, func: "f", args: [], deps: [], priority: [0, 0, attempt], duration: 0.001, run: 1, attempt, t, ...(answers === undefined ? {} : { answers }) });
    compute("x-1", 1, 1);
    core.handle({ op: "execute-done", key: "x-1", nbytes: 8, start: 1, stop: 1.5, t: 1.5 });
    compute("x-2", 2, 1.504, 1.5);
    core.handle({ op: "execute-done", key: "x-2", nbytes: 8, start: 1.504, stop: 1.6, t: 1.6 });
    compute("x-3", 3, 1.7);
    core.handle({ op: "execute-done", key: "x-3", nbytes: 8, start: 1.7, stop: 1.8, t: 1.8 });
    return sent.filter((op) => op.op === "task-finished").map((op) => op.roundTrip);
  }

  it("runs from its task-finished's stop to the compute-task that answers it, and rides on its next task-finished", () => {
    expect(reported()).toEqual([undefined, expect.closeTo(0.004, 9), undefined]);
  });

  it("is not measured by a worker started with roundTrips: false (in process, on the scheduler's thread)", () => {
    expect(reported(false)).toEqual([undefined, undefined, undefined]);
  });
});
