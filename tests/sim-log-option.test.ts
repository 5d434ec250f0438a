/** simulate()'s `log` option: the log kept in memory (default), streamed to a file, or not kept. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CompactLogSink } from "../log/compact-log.js";
import { MemoryLogSink } from "../log/memory-log.js";
import { FileLogSink, readLogSync } from "../log/index.js";
import { replay } from "../replay/index.js";
import { simulate, type Scenario } from "../sim.js";

const tree: Scenario = {
  seed: 3,
  workers: [{ name: "a", nthreads: 2 }, { name: "b" }],
  tasks: [
    ...Array.from({ length: 40 }, (_, i) => ({ key: `leaf-${i}`, duration: 0.01 * (1 + (i % 5)), nbytes: 1e5 })),
    ...Array.from({ length: 20 }, (_, i) => ({ key: `pair-${i}`, deps: [`leaf-${2 * i}`, `leaf-${2 * i + 1}`], duration: 0.02 })),
    { key: "root", deps: Array.from({ length: 20 }, (_, i) => `pair-${i}`), duration: 0.1 },
  ],
};

describe("simulate({ log })", () => {
  const dir = mkdtempSync(join(tmpdir(), "natsched-sim-log-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("streams to a FileLogSink exactly the records it would keep in memory, and the file replays", async () => {
    const kept = simulate(tree);
    const path = join(dir, "tree.natlog");
    const sink = await FileLogSink.open(path);
    const streamed = simulate(tree, { log: sink });
    await sink.close();
    expect(streamed.log).toEqual([]);
    expect({ ...streamed, log: kept.log }).toEqual(kept);
    const { records, problems } = readLogSync(path);
    expect(problems).toEqual([]);
    expect(records).toEqual(JSON.parse(JSON.stringify(kept.log)));
    // A simulation ends with its actors still running: no stop records, an open log.
    expect((await replay(path)).problems.map((p) => p.kind)).toContain("open");
    const replayed = await replay(path, { openOk: true });
    expect(replayed.ok).toBe(true);
    expect(replayed.stats.transitions).toBe(kept.log.filter((r) => r.kind === "transition").length);
  });

  it("with log: false keeps nothing and runs the same", () => {
    const kept = simulate(tree);
    const dropped = simulate(tree, { log: false });
    expect(dropped.log).toEqual([]);
    expect({ ...dropped, log: kept.log }).toEqual(kept);
  });
});

describe("the default in-memory log (CompactLogSink)", () => {
  // Failures, a kill and a restart, steals and data placed up front: every kind of record.
  const busy: Scenario = {
    seed: 11,
    workers: [{ name: "a", nthreads: 2 }, { name: "b" }, { name: "c", joinAt: 0.05 }],
    data: [{ key: "d0", nbytes: 5e6, on: ["a"] }],
    tasks: [
      ...Array.from({ length: 60 }, (_, i) => ({ key: `x-${i}`, duration: 0.005 * (1 + (i % 7)), nbytes: 1e4, ...(i % 9 === 0 ? { deps: ["d0"] } : {}) })),
      ...Array.from({ length: 10 }, (_, i) => ({ key: `y-${i}`, deps: [`x-${i}`, `x-${i + 10}`], duration: 0.01, priority: i % 3 })),
    ],
    actions: [{ at: 0.08, do: "kill-worker", worker: "b" }],
  };

  it("holds exactly the records a MemoryLogSink would, fields in the same order", () => {
    for (const scenario of [tree, busy]) {
      const reference = new MemoryLogSink({ copy: false });
      const plain = simulate(scenario, { log: reference });
      const compact = simulate(scenario);
      expect(plain.log).toBe(reference.records);
      expect(compact.log.length).toBe(reference.records.length);
      expect(JSON.stringify(compact.log)).toBe(JSON.stringify(reference.records));
      expect(compact.log).toEqual(reference.records);
      expect({ ...compact, log: [] }).toEqual({ ...plain, log: [] });
      expect(compact.log).toBe(compact.log); // built once, then kept
      expect(Object.keys(compact)).toEqual(["makespan", "tasks", "futures", "transfers", "steals", "refused", "log"]);
    }
  });

  it("builds records on demand, and keeps an assigned log", () => {
    const sink = new CompactLogSink();
    sink.appendTransition("scheduler", 0, 1.5, "task", "k", "QUEUE", "released", "queued");
    sink.appendTransition("scheduler", 1, -0, "task", "k", "ASSIGN", "queued", "processing", { worker: "w" });
    sink.appendInput("worker.a", 0, { op: "registered", t: 2 });
    sink.append({ actor: "worker.a", seq: 1, t: 3, kind: "stop" });
    sink.appendTransition("scheduler", 2 ** 31, 4, "task", "k", "QUEUE", "released", "queued");
    expect(sink.size).toBe(5);
    expect(sink.toArray()).toEqual([
      { actor: "scheduler", seq: 0, t: 1.5, kind: "transition", machine: "task", id: "k", event: "QUEUE", from: "released", to: "queued" },
      { actor: "scheduler", seq: 1, t: -0, kind: "transition", machine: "task", id: "k", event: "ASSIGN", from: "queued", to: "processing", why: { worker: "w" } },
      { actor: "worker.a", seq: 0, t: 2, kind: "input", event: { op: "registered", t: 2 } },
      { actor: "worker.a", seq: 1, t: 3, kind: "stop" },
      { actor: "scheduler", seq: 2 ** 31, t: 4, kind: "transition", machine: "task", id: "k", event: "QUEUE", from: "released", to: "queued" },
    ]);
    expect(Object.is(sink.record(1).t, -0)).toBe(true);
    // Payloads come back exactly, or are kept as the objects appended when the tape cannot hold them.
    const exact = [
      { op: "x", t: 1, a: undefined, b: NaN, c: -0, d: Infinity, e: [1, "two", null, [true, false, {}]], f: { g: { h: "i" } }, "7": 7 },
      { op: "y", t: 2, deep: JSON.parse("[".repeat(31) + "]".repeat(31)) },
    ];
    const kept = [
      { op: "z", t: 3, map: new Map([[1, 2]]) },
      { op: "z", t: 4, holes: [1, , 3] },
      { op: "z", t: 5, deep: JSON.parse("[".repeat(40) + "]".repeat(40)) },
      { op: "z", t: 6, ...JSON.parse('{"__proto__": {"x": 1}}') },
      { op: "z", t: 7, at: new Date(0) },
    ];
    const payloads = new CompactLogSink();
    [...exact, ...kept].forEach((event, seq) => payloads.appendInput("a", seq, event));
    payloads.appendTransition("a", 7, 8, "task", "k", "E", "f", "t", { nested: [{ x: -0 }], u: undefined });
    const back = payloads.toArray();
    exact.forEach((event, i) => {
      const got = (back[i] as { event: unknown }).event;
      expect(got).not.toBe(event);
      expect(got).toStrictEqual(event);
      expect(Object.keys(got as object)).toEqual(Object.keys(event));
    });
    expect(Object.is(((back[0] as unknown as { event: { c: number } }).event).c, -0)).toBe(true);
    kept.forEach((event, i) => expect((back[exact.length + i] as { event: unknown }).event).toBe(event));
    expect((back[7] as { why: unknown }).why).toStrictEqual({ nested: [{ x: -0 }], u: undefined });
    expect(Object.is(((back[7] as unknown as { why: { nested: { x: number }[] } }).why).nested[0]!.x, -0)).toBe(true);
    // Payloads across tape chunks (1M doubles each), and one bigger than a chunk.
    const big = new CompactLogSink();
    const events = Array.from({ length: 60 }, (_, i) => ({ op: "big", t: i, items: Array.from({ length: 9_000 }, (_, j) => (j % 3 === 0 ? `s${i}-${j}` : j)) }));
    const huge = { op: "huge", t: 99, items: Array.from({ length: 1_100_000 }, (_, j) => j) }; // one double an item: more than a chunk holds
    events.forEach((event, seq) => big.appendInput("a", seq, event));
    big.appendInput("a", 60, huge);
    big.appendInput("a", 61, events[0]!);
    const all = big.toArray();
    events.forEach((event, i) => expect((all[i] as { event: unknown }).event).toStrictEqual(event));
    expect((all[60] as { event: unknown }).event).toBe(huge);
    expect((all[61] as { event: unknown }).event).toStrictEqual(events[0]);
    const result = simulate(tree);
    result.log = [];
    expect(result.log).toEqual([]);
  });
  it("reads back every record of a log that spans many row and tape chunks (several slabs)", () => {
    const sink = new CompactLogSink();
    const n = 300_000; // 5 chunks of rows; 15 doubles of tape an input, 3 a why: 2.5M doubles, 3 tape chunks; 2 slabs
    const event = (i: number) => ({ op: "task-finished", key: `k-${i}`, worker: `w-${i % 3}`, nbytes: i, start: i / 7, deps: [`k-${i - 1}`, `k-${i - 2}`], priority: [0, -i, NaN], t: i });
    for (let i = 0; i < n; i++) {
      if (i % 2 === 0) sink.appendInput("scheduler", i, event(i));
      else sink.appendTransition("scheduler", i, i, "task", `k-${i}`, "FINISH", "processing", "memory", i % 4 === 1 ? { worker: `w-${i % 3}`, n: i } : undefined);
    }
    expect(sink.size).toBe(n);
    for (const i of [0, 1, 65_535, 65_536, 131_073, 174_762, 174_763, 262_143, 262_145, n - 2, n - 1]) {
      const r = sink.record(i);
      if (i % 2 === 0) expect(r).toEqual({ actor: "scheduler", seq: i, t: i, kind: "input", event: event(i) });
      else expect(r).toEqual({ actor: "scheduler", seq: i, t: i, kind: "transition", machine: "task", id: `k-${i}`, event: "FINISH", from: "processing", to: "memory", ...(i % 4 === 1 ? { why: { worker: `w-${i % 3}`, n: i } } : {}) });
    }
    let finished = 0;
    for (const r of sink.toArray()) if (r.kind === "input" && (r.event as { key?: string }).key === `k-${r.seq}`) finished++;
    expect(finished).toBe(n / 2);
  });
});
