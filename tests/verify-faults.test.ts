/**
 * The simulator's optional network-fault model (sim/faults.ts) and its observer
 * hooks: off by default, deterministic from the scenario seed, and each kind of fault does
 * what the docs say (delays keep each sender's order, reordering breaks it, duplicates
 * deliver twice).
 */
import { describe, expect, it } from "vitest";
import type { NatschedError } from "../machines/errors.js";
import { simulate, type NetworkFaultSpec, type Scenario } from "../sim.js";

const base: Scenario = {
  seed: 5,
  network: { latency: 0.01 },
  workers: [{ name: "a", nthreads: 2 }, { name: "b" }, { name: "c" }],
  tasks: [
    ...Array.from({ length: 12 }, (_, i) => ({ key: `load-${i}`, duration: 0.2, nbytes: 1000 })),
    ...Array.from({ length: 6 }, (_, i) => ({ key: `add-${i}`, duration: 0.1, deps: [`load-${2 * i}`, `load-${2 * i + 1}`] })),
    { key: "sum-0", duration: 0.1, deps: Array.from({ length: 6 }, (_, i) => `add-${i}`) },
  ],
};

interface Envelope {
  link: string;
  sentAt: number;
  arrivals: readonly number[];
  ops: readonly unknown[];
}

function run(faults?: NetworkFaultSpec, scenario: Scenario = base) {
  const envelopes: Envelope[] = [];
  const result = simulate(
    { ...structuredClone(scenario), ...(faults ? { faults } : {}) },
    { observer: { mail: (from, to, ops, sentAt, arrivals) => envelopes.push({ link: `${from}>${to}`, sentAt, arrivals: [...arrivals], ops }) } },
  );
  return { result, envelopes };
}

function errorOf(scenario: unknown): NatschedError {
  try {
    simulate(scenario as Scenario);
  } catch (error) {
    return error as NatschedError;
  }
  throw new Error("the scenario was accepted");
}

describe("network faults", () => {
  it("are off by default, and zero probabilities change nothing", () => {
    const plain = run();
    expect(run({ delay: 0, reorder: 0, duplicate: 0 }).result).toEqual(plain.result);
    for (const e of plain.envelopes) expect(e.arrivals).toEqual([e.sentAt + 0.01]);
    expect(plain.result.tasks["sum-0"]!.state).toBe("memory");
  });

  it("are the same for the same seed, and differ for another", () => {
    const faults = { delay: 0.5, reorder: 0.2, maxDelay: 0.2 };
    const one = run(faults);
    expect(run(faults).result).toEqual(one.result);
    const other = run(faults, { ...base, seed: 6 });
    expect(other.envelopes.map((e) => e.arrivals)).not.toEqual(one.envelopes.map((e) => e.arrivals));
  });

  it("delays keep each sender's order on each link; the run still finishes", () => {
    const { result, envelopes } = run({ delay: 0.7, maxDelay: 0.3 });
    expect(envelopes.some((e) => e.arrivals[0]! > e.sentAt + 0.01 + 1e-9)).toBe(true);
    const last = new Map<string, number>();
    for (const e of envelopes) {
      expect(e.arrivals).toHaveLength(1);
      expect(e.arrivals[0]!).toBeGreaterThanOrEqual(last.get(e.link) ?? 0);
      last.set(e.link, e.arrivals[0]!);
    }
    expect(result.tasks["sum-0"]!.state).toBe("memory");
    expect(result.makespan).toBeGreaterThan(run().result.makespan);
  });

  it("reordering lets a later envelope overtake an earlier one of the same sender", () => {
    const { envelopes } = run({ reorder: 0.5, maxDelay: 0.3 });
    const overtaken = envelopes.some((e, i) => envelopes.slice(i + 1).some((later) => later.link === e.link && later.arrivals[0]! < e.arrivals[0]!));
    expect(overtaken).toBe(true);
  });

  it("duplication delivers an envelope twice: the worker takes the same ops again", () => {
    const { result, envelopes } = run({ duplicate: 1, maxDelay: 0.05 });
    expect(envelopes.every((e) => e.arrivals.length === 2 && e.arrivals[1]! >= e.arrivals[0]!)).toBe(true);
    const computes = result.log.filter((r) => r.kind === "input" && r.actor.startsWith("worker.") && r.event.op === "compute-task");
    const keys = computes.map((r) => (r.kind === "input" ? String(r.event.key) : ""));
    expect(new Set(keys).size).toBeLessThan(keys.length);
  });

  it("bad fault settings are typed errors naming the field", () => {
    expect(errorOf({ ...base, faults: { delay: 2 } }).message).toMatch(/faults\.delay.*probability/);
    expect(errorOf({ ...base, faults: { delay: 2 } }).code).toBe("BAD_OPTION");
    expect(errorOf({ ...base, faults: { reoder: 0.1 } }).message).toMatch(/faults\.reoder.*did you mean "reorder"/);
    expect(errorOf({ ...base, faults: { maxDelay: -1 } }).message).toMatch(/faults\.maxDelay/);
    expect(errorOf({ ...base, faults: 3 }).message).toMatch(/faults/);
  });
});

describe("mail to a worker that died", () => {
  it("is lost, even when a new incarnation has its name by the time it arrives", () => {
    const scenario: Scenario = {
      network: { latency: 0.5 },
      workers: [{ name: "w" }],
      tasks: [{ key: "a", duration: 0.1 }],
      actions: [
        { at: 0.2, do: "kill-worker", worker: "w" },
        { at: 0.2, do: "add-worker", worker: { name: "w" } },
      ],
    };
    const { result, envelopes } = run(undefined, scenario);
    // The first compute-task was sent to the first incarnation, and arrives after its death.
    const first = envelopes.find((e) => e.link === "scheduler>worker.w")!;
    expect(first.sentAt).toBe(0);
    expect(first.arrivals[0]).toBeGreaterThan(0.2);
    const starts = result.log.filter((r) => r.actor === "worker.w" && r.kind === "start");
    expect(starts).toHaveLength(2);
    const second = result.log.slice(result.log.indexOf(starts[1]!));
    const computes = second.filter((r) => r.actor === "worker.w" && r.kind === "input" && r.event.op === "compute-task");
    expect(computes).toHaveLength(1);
    expect(result.tasks.a!.state).toBe("memory");
    expect(result.tasks.a!.executions).toBe(1);
  });
});

describe("the observer", () => {
  it("sees every step with the log so far, and every envelope", () => {
    const seen: { now: number; records: number }[] = [];
    let mail = 0;
    const result = simulate(structuredClone(base), {
      observer: {
        turn: (view, log) => seen.push({ now: view.now, records: log.length }),
        mail: () => {
          mail += 1;
        },
      },
    });
    expect(seen.length).toBeGreaterThan(10);
    for (let i = 1; i < seen.length; i++) {
      expect(seen[i]!.now).toBeGreaterThanOrEqual(seen[i - 1]!.now);
      expect(seen[i]!.records).toBeGreaterThanOrEqual(seen[i - 1]!.records);
    }
    expect(seen.at(-1)!.records).toBe(result.log.length);
    expect(mail).toBeGreaterThan(0);
    // Watching does not change the run.
    expect(simulate(structuredClone(base))).toEqual(result);
  });
});
