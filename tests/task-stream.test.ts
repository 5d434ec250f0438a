/**
 * The task-stream fold (tools/task-stream.ts) on real logs: one bar per execution the
 * workers recorded, lanes that never overlap, transfers, steals and deaths as the records
 * have them, the live builder's deltas adding up to the whole, and the wire codec.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { InputRecord, LogRecord, TransitionRecord } from "../log/types.js";
import { decodeTaskStream, encodeTaskStream, taskStreamOf, TaskStreamBuilder, type StreamBar, type TaskStream } from "../tools/task-stream.js";
import { embeddedRun, simulatedRun } from "./support/task-stream-runs.js";

const executes = (records: LogRecord[]) =>
  records.filter((r): r is TransitionRecord => r.kind === "transition" && r.actor.startsWith("worker.") && r.machine === "wtask" && r.event === "EXECUTE");

function workerInputs(records: LogRecord[], op: string): Record<string, unknown>[] {
  return records.filter((r): r is InputRecord => r.kind === "input" && r.actor.startsWith("worker.") && r.event.op === op).map((r) => r.event);
}

function expectLanesApart(stream: TaskStream): void {
  const byLane = new Map<string, StreamBar[]>();
  for (const bar of stream.bars) {
    const worker = stream.workers.find((w) => w.name === bar.worker)!;
    expect(bar.lane).toBeGreaterThanOrEqual(0);
    expect(bar.lane).toBeLessThan(worker.lanes);
    expect(bar.end).toBeGreaterThanOrEqual(bar.start);
    const lane = `${bar.worker}/${bar.lane}`;
    byLane.set(lane, [...(byLane.get(lane) ?? []), bar]);
  }
  for (const bars of byLane.values()) {
    bars.sort((a, b) => a.start - b.start);
    for (let i = 1; i < bars.length; i++) expect(bars[i]!.start).toBeGreaterThanOrEqual(bars[i - 1]!.end);
  }
}

describe("taskStreamOf on an embedded run (failure, stealing, a worker killed)", () => {
  let records: LogRecord[];
  let stream: TaskStream;
  beforeAll(async () => {
    records = await embeddedRun();
    stream = taskStreamOf(records);
  }, 60_000);

  it("has one bar per execution, on the worker and with the key each EXECUTE names", () => {
    const runs = executes(records);
    expect(stream.bars.length).toBe(runs.length);
    const bars = stream.bars.map((b) => `${b.worker} ${b.key}`).sort();
    expect(bars).toEqual(runs.map((r) => `${r.actor.slice("worker.".length)} ${r.id}`).sort());
    expect(stream.bars.every((b) => b.prefix === b.key.split("-")[0])).toBe(true);
  });

  it("puts bars on lanes that never overlap, within each worker's threads", () => {
    expectLanesApart(stream);
    expect(stream.workers.map((w) => [w.name, w.threads, w.lanes])).toEqual([
      ["alpha", 2, 2],
      ["beta", 2, 2],
      ["gamma", 1, 1],
    ]);
    // Two threads that were both busy at once use both lanes.
    expect(new Set(stream.bars.filter((b) => b.worker === "alpha").map((b) => b.lane))).toEqual(new Set([0, 1]));
  });

  it("marks the failure erred and gamma's death, with what it was running lost", () => {
    const failed = workerInputs(records, "execute-failed").map((e) => e.key);
    expect(stream.bars.filter((b) => b.outcome === "erred").map((b) => b.key)).toEqual(failed);
    expect(stream.bars.find((b) => b.prefix === "boom")?.outcome).toBe("erred");
    const gammaStop = records.find((r) => r.kind === "stop" && r.actor === "worker.gamma")!;
    expect(stream.deaths).toEqual([{ worker: "gamma", t: gammaStop.t - records[0]!.t, why: "killed" }]);
    expect(stream.workers.find((w) => w.name === "gamma")).toMatchObject({ died: true, why: "killed" });
    expect(stream.workers.find((w) => w.name === "alpha")?.died).toBeUndefined();
    const lost = stream.bars.filter((b) => b.outcome === "lost");
    expect(lost.length).toBeGreaterThan(0);
    expect(lost.every((b) => b.worker === "gamma")).toBe(true);
    // The lost work ran again on a worker that lived.
    for (const bar of lost) expect(stream.bars.some((b) => b.key === bar.key && b.worker !== "gamma" && b.outcome === "ok")).toBe(true);
  });

  it("has a transfer per key a worker fetched, with its bytes, and the steals the scheduler logged", () => {
    const fetched = workerInputs(records, "gather-done").flatMap((e) => (e.received as { key: string; nbytes: number }[]).map((x) => `${e.from} ${x.key} ${x.nbytes}`));
    expect(fetched.length).toBeGreaterThan(0);
    expect(stream.transfers.filter((x) => x.bytes !== undefined).map((x) => `${x.from} ${x.key} ${x.bytes}`).sort()).toEqual(fetched.sort());
    for (const x of stream.transfers) expect(x.end).toBeGreaterThanOrEqual(x.start);
    const asked = records.filter((r) => r.kind === "transition" && r.actor === "scheduler" && r.event === "STEAL");
    expect(stream.steals.length).toBe(asked.length);
    const confirmed = records.filter((r) => r.kind === "transition" && r.actor === "scheduler" && r.event === "STEAL_CONFIRM").length;
    expect(stream.steals.filter((s) => s.outcome === "confirmed").length).toBe(confirmed);
  });

  it("gives the same stream from a live builder drained in pieces", () => {
    const builder = new TaskStreamBuilder();
    const bars: StreamBar[] = [];
    let transfers = 0;
    for (let i = 0; i < records.length; i++) {
      builder.add(records[i]!);
      if (i % 97 === 0) {
        const delta = builder.drain();
        bars.push(...delta.bars);
        transfers += delta.transfers.length;
      }
    }
    const last = builder.drain();
    bars.push(...last.bars);
    transfers += last.transfers.length;
    expect(bars.sort((a, b) => a.start - b.start)).toEqual(stream.bars.filter((b) => b.outcome !== "running"));
    expect(transfers).toBe(stream.transfers.length);
    expect(last.workers.map((w) => w.name)).toEqual(["alpha", "beta", "gamma"]);
    expect(builder.drain().bars).toEqual([]);
  });

  it("draws a scheduler's own log (no worker records) from the executions reported to it", () => {
    const scheduler = records.filter((r) => r.actor === "scheduler");
    const reported = scheduler.filter((r): r is InputRecord => r.kind === "input" && (r.event.op === "task-finished" || r.event.op === "task-erred"));
    const own = taskStreamOf(scheduler);
    expect(own.bars.length).toBe(reported.length);
    expect(own.bars.map((b) => `${b.worker} ${b.key} ${b.outcome}`).sort()).toEqual(reported.map((r) => `${r.event.worker} ${r.event.key} ${r.event.op === "task-finished" ? "ok" : "erred"}`).sort());
    expectLanesApart(own);
    expect(own.workers.map((w) => [w.name, w.threads])).toEqual([
      ["alpha", 2],
      ["beta", 2],
      ["gamma", 1],
    ]);
    expect(own.deaths.map((d) => [d.worker, d.why])).toEqual([["gamma", "killed"]]);
    expect(own.workers.filter((w) => w.died).map((w) => w.name)).toEqual(["gamma"]);
  });

  it("survives its wire form (JSON) to the microsecond", () => {
    const wire = JSON.parse(JSON.stringify(encodeTaskStream(stream)));
    const back = decodeTaskStream(wire);
    expect(back.bars.map(({ start, end, ...rest }) => rest)).toEqual(stream.bars.map(({ start, end, ...rest }) => rest));
    back.bars.forEach((b, i) => {
      expect(Math.abs(b.start - stream.bars[i]!.start)).toBeLessThan(1e-6);
      expect(Math.abs(b.end - stream.bars[i]!.end)).toBeLessThan(1e-6);
    });
    expect(back.transfers.map((x) => [x.key, x.from, x.to, x.bytes])).toEqual(stream.transfers.map((x) => [x.key, x.from, x.to, x.bytes]));
    expect(back.steals.map((s) => [s.key, s.victim, s.thief, s.outcome])).toEqual(stream.steals.map((s) => [s.key, s.victim, s.thief, s.outcome]));
    expect(back.workers).toEqual(stream.workers);
    expect(back.deaths).toEqual(stream.deaths);
    expect(() => decodeTaskStream({ v: 99 } as never)).toThrow(/wire version/);
  });
});

describe("taskStreamOf on the simulator's log", () => {
  const records = simulatedRun();
  const stream = taskStreamOf(records);

  it("draws the simulated run: its executions, the kill of b and the steal", () => {
    expect(stream.bars.length).toBe(executes(records).length);
    expectLanesApart(stream);
    expect(stream.runStart).toBe(0);
    expect(stream.deaths).toEqual([{ worker: "b", t: 0.5, why: "killed" }]);
    expect(stream.bars.filter((b) => b.outcome === "lost").map((b) => b.worker)).toEqual(["b"]);
    expect(stream.steals.map((s) => [s.victim, s.thief, s.outcome])).toEqual([["b", "c", "aborted"]]);
    expect(stream.workers.find((w) => w.name === "c")).toMatchObject({ threads: 2, joined: 1 });
    expect(stream.transfers.length).toBe(workerInputs(records, "gather-done").reduce((n, e) => n + (e.received as unknown[]).length + (e.missing as unknown[]).length, 0));
  });

  it("shows an execution cut off by the log's end as running to the end", () => {
    const cut = records.slice(0, records.findIndex((r) => r.kind === "transition" && r.event === "EXECUTE") + 1);
    const partial = taskStreamOf(cut);
    expect(partial.bars).toHaveLength(1);
    expect(partial.bars[0]).toMatchObject({ outcome: "running", end: partial.end });
    // Live, it is in each drain's running list until it ends, and then a bar.
    const builder = new TaskStreamBuilder();
    for (const record of cut) builder.add(record);
    expect(builder.drain()).toMatchObject({ bars: [], running: [partial.bars[0]] });
    const done = records.findIndex((r, i) => i >= cut.length && r.kind === "input" && r.event.op === "execute-done" && r.event.key === partial.bars[0]!.key);
    for (const record of records.slice(cut.length, done + 1)) builder.add(record);
    const next = builder.drain();
    expect(next.bars.map((b) => [b.key, b.outcome])).toContainEqual([partial.bars[0]!.key, "ok"]);
    expect(next.running!.map((b) => b.key)).not.toContain(partial.bars[0]!.key);
  });
});
