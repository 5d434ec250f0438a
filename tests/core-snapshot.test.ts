/**
 * A scheduler core's snapshot restores exactly (log/core-snapshot.ts): on random
 * deterministic-simulation runs (worker deaths, steals, failures, restarts), a core replayed
 * to a random input, snapshotted and restored has the live core's fingerprint
 * (verify/scheduler-fingerprint.ts), then replays the rest of the log without a divergence
 * and ends with the fingerprint of the core that replayed the whole log. A worker core with
 * fetch queues per holder restores to a core that gathers as the live one does.
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { SchedulerCore } from "../machines/scheduler/core.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInput } from "../machines/worker/inputs.js";
import { restoreCore, snapshotCore, SnapshotError } from "../log/core-snapshot.js";
import { SchedulerHost } from "../replay/replay-cores.js";
import { ReplayEngine } from "../replay/replay-engine.js";
import type { LogRecord, StartRecord } from "../log/types.js";
import { simulate } from "../sim.js";
import { dstCaseArb } from "../verify/dst-case.js";
import { schedulerFingerprint } from "../verify/scheduler-fingerprint.js";

function replayed(records: LogRecord[]): { engine: ReplayEngine; core: SchedulerCore } {
  const engine = new ReplayEngine({ actor: "scheduler" });
  for (const record of records) engine.record(record);
  const host = engine.runs.get("scheduler")!.host as SchedulerHost;
  return { engine, core: host.core };
}

describe("a scheduler core's snapshot", () => {
  it("restores the core exactly: the same state, and the same transitions for the rest of the log", () => {
    let cuts = 0;
    fc.assert(
      fc.property(dstCaseArb(), fc.double({ min: 0, max: 1, noNaN: true }), (dst, where) => {
        const records = simulate(dst.scenario).log.filter((r) => r.actor === "scheduler");
        // A clean stop and a new run (the simulator's stop-scheduler) start the core afresh: the
        // snapshot is cut within the log's last run, whose start record builds the host.
        const runStart = records.findLastIndex((r) => r.kind === "start");
        const start = records[runStart] as StartRecord;
        const inputs = records.flatMap((r, i) => (r.kind === "input" && i > runStart ? [i] : []));
        if (inputs.length === 0) return;
        const cut = inputs[Math.min(inputs.length - 1, Math.floor(where * inputs.length))]!;
        const before = replayed(records.slice(0, cut));
        const snapshot = snapshotCore(before.core);
        const engine = new ReplayEngine({ actor: "scheduler" });
        let restored: SchedulerCore | undefined;
        engine.adopt(
          "scheduler",
          (fx) => {
            const host = new SchedulerHost(start.init, fx);
            restored = restoreCore(snapshot, host.core);
            return host;
          },
          records[cut - 1]!.seq,
        );
        expect(isDeepStrictEqual(schedulerFingerprint(restored!), schedulerFingerprint(before.core))).toBe(true);
        for (const record of records.slice(cut)) engine.record(record);
        engine.finish(false);
        const run = engine.runs.get("scheduler")!.summary;
        expect(run.divergence?.message).toBeUndefined();
        expect(run.halted).toBeUndefined();
        expect(isDeepStrictEqual(schedulerFingerprint(restored!), schedulerFingerprint(replayed(records).core))).toBe(true);
        cuts++;
      }),
      { numRuns: 60, seed: 20_261_126 },
    );
    expect(cuts).toBeGreaterThan(40);
  }, 60_000);

  it("refuses what it cannot copy exactly, saying where it is", () => {
    const records = simulate({ seed: 1, workers: [{ name: "a" }], tasks: [{ key: "x", duration: 0.01 }] }).log.filter((r) => r.actor === "scheduler");
    const { core } = replayed(records);
    (core as unknown as { extra: unknown }).extra = { when: new Date(0) };
    expect(() => snapshotCore(core)).toThrow(SnapshotError);
    expect(() => snapshotCore(core)).toThrow(/an instance of Date at core\.extra\.when/);
    (core as unknown as { extra: unknown }).extra = { [Symbol("mine")]: 1 };
    expect(() => snapshotCore(core)).toThrow(/the symbol key Symbol\(mine\) at core\.extra/);
    expect(() => restoreCore(Buffer.from("not a snapshot"), core)).toThrow(SnapshotError);
  });
});

describe("a worker core's snapshot", () => {
  it("restores its fetch queues per holder: the restored core gathers as the live one does", () => {
    const init = { name: "w", id: "w-1", nthreads: 1, transferIncomingCountLimit: 1, fetchByHolder: true };
    const make = (out: string[]) =>
      new WorkerCore(init, {
        toScheduler: (op) => out.push(`send ${op.op}`),
        execute: (key) => out.push(`execute ${key}`),
        gather: (from, keys) => out.push(`gather ${from} ${keys.join(",")}`),
        freeData: (key) => out.push(`free ${key}`),
        transition: (_machine, id, event) => out.push(`${id} ${event}`),
      });
    const before: string[] = [];
    const live = make(before);
    let t = 0;
    const feed = (core: WorkerCore, op: object) => core.handle({ ...op, t: ++t } as WorkerInput);
    feed(live, { op: "registered" });
    // One gather at a time: p1 busy with a; b (p1, p2) and c (p2) wait, queued under both holders.
    const compute = (key: string, deps: [string, string[]][], i: number) =>
      feed(live, { op: "compute-task", key, func: "f", args: [], deps: deps.map(([k, holders]) => ({ key: k, nbytes: 1, holders })), priority: [0, 0, i], duration: 0.1 });
    compute("x", [["a", ["p1"]]], 1);
    compute("y", [["b", ["p1", "p2"]]], 2);
    compute("z", [["c", ["p2"]]], 3);
    const after: string[] = [];
    const restored = restoreCore(snapshotCore(live), make(after));
    const rest = (core: WorkerCore, out: string[]) => {
      out.length = 0;
      core.handle({ op: "gather-done", from: "p1", received: [{ key: "a", nbytes: 1 }], missing: [], t: 100 });
      core.handle({ op: "gather-done", from: "p1", received: [{ key: "b", nbytes: 1 }], missing: [], t: 101 });
      return [...out];
    };
    const expected = rest(live, before);
    // b is first in both queues (p1 first by name), then c from p2.
    expect(expected.filter((line) => line.startsWith("gather"))).toEqual(["gather p1 b", "gather p2 c"]);
    expect(rest(restored, after)).toEqual(expected);
  });
});
