/**
 * Replay of real embedded runs: every actor's recorded transitions reproduced, from a file
 * or from memory, and the cluster state at a point of the run.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadOptionError } from "../machines/errors.js";
import { MemoryLogSink } from "../log/memory-log.js";
import { readLogSync } from "../log/reader.js";
import { replay } from "../replay/replay.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import { causeOf, isTransition, recordRun, type RunLog } from "./replay-fixtures.js";
import { readReason } from "../machines/reasons.js";
import { assignedWorker } from "./sim-helpers.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-replay-run-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const path = join(dir, "run.natlog");
let run: RunLog;
let records: LogRecord[];

beforeAll(async () => {
  run = await recordRun({ path });
  const read = readLogSync(path);
  expect(read.problems).toEqual([]);
  records = read.records;
});

const count = (actor: string, kind: LogRecord["kind"]) => records.filter((r) => r.actor === actor && r.kind === kind).length;
const lastSeq = (actor: string) => Math.max(...records.filter((r) => r.actor === actor).map((r) => r.seq));
const actorsOf = (list: LogRecord[]) => [...new Set(list.map((r) => r.actor))].sort();

describe("replaying a real run", () => {
  it("reproduces every recorded transition of the scheduler and every worker", async () => {
    // What the run must contain for this to mean something.
    expect(records.some((r) => isTransition(r) && r.machine === "task" && r.id === run.bad && r.to === "erred")).toBe(true);
    expect(records.some((r) => isTransition(r) && r.machine === "task" && r.id === run.after && r.to === "erred")).toBe(true);
    expect(records.some((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "worker-lost")).toBe(true);
    expect(records.some((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "update-data")).toBe(true);
    expect(records.some((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "release-keys")).toBe(true);
    expect(records.some((r) => r.kind === "stop" && r.actor === `worker.${run.killed}` && (r as { reason?: string }).reason === "killed")).toBe(true);

    const result = await replay(path);
    expect(result.problems).toEqual([]);
    expect(result.complete).toBe(true);
    expect(result.ok).toBe(true);
    expect(Object.keys(result.actors)).toEqual(actorsOf(records));
    for (const [actor, a] of Object.entries(result.actors)) {
      expect({ actor, divergence: a.divergence, halted: a.halted, threw: a.threw }).toEqual({ actor, divergence: undefined, halted: undefined, threw: undefined });
      expect({ actor, inputs: a.inputs, transitions: a.transitions, lastSeq: a.lastSeq, stopped: a.stopped }).toEqual({
        actor,
        inputs: count(actor, "input"),
        transitions: count(actor, "transition"),
        lastSeq: lastSeq(actor),
        stopped: true,
      });
    }
    expect(result.actors["scheduler"]!.role).toBe("scheduler");
    expect(result.actors[`worker.${run.killed}`]!.role).toBe("worker");
    expect(result.stats).toMatchObject({
      records: records.length,
      inputs: records.filter((r) => r.kind === "input").length,
      transitions: records.filter(isTransition).length,
      readTo: "end",
    });
    // The messages the replayed cores sent: one compute-task per assignment (or confirmed steal).
    const sentCompute = records.filter((r) => isTransition(r) && r.actor === "scheduler" && (r.event === "ASSIGN" || r.event === "STEAL_CONFIRM")).length;
    expect(result.actors["scheduler"]!.sent["compute-task"]).toBe(sentCompute);
    // At the end, everything was released and closed.
    expect(result.state.at).toEqual({ until: "end" });
    expect(result.state.scheduler).toMatchObject({ actor: "scheduler", state: "closed", tasks: {}, workers: [], steals: [], diverged: false });
    expect(Object.keys(result.state.workers).sort()).toEqual(["worker-0", "worker-1", "worker-2"]);
    expect(result.state.workers["worker-0"]).toMatchObject({ state: "closing", stopped: true, executing: 0, memory: 0 });
    expect(result.state.workers[run.killed]!.stopped).toBe(true);
  });

  it("gives the same result from the records in memory", async () => {
    const fromFile = await replay(path);
    const fromMemory = await replay(records);
    expect(fromMemory.ok).toBe(true);
    expect(fromMemory.actors).toEqual(fromFile.actors);
    expect(fromMemory.state).toEqual(fromFile.state);
  });

  it("replays a MemoryLogSink's records and an async stream of them", async () => {
    const sink = new MemoryLogSink();
    await recordRun(sink);
    const result = await replay(sink.records);
    expect(result.ok).toBe(true);
    expect(result.stats.transitions).toBe(sink.records.filter(isTransition).length);
    async function* stream() {
      yield* sink.records;
    }
    const streamed = await replay(stream());
    expect(streamed.ok).toBe(true);
    expect(streamed.actors).toEqual(result.actors);
  });

  it("replays one actor alone with --actor", async () => {
    const result = await replay(path, { actor: "worker.worker-0" });
    expect(Object.keys(result.actors)).toEqual(["worker.worker-0"]);
    expect(result.ok).toBe(true);
    expect(result.actors["worker.worker-0"]!.transitions).toBe(count("worker.worker-0", "transition"));
    expect(result.state.scheduler).toBeNull();
    expect(Object.keys(result.state.workers)).toEqual(["worker-0"]);
    await expect(replay(path, { actor: "worker.nobody" })).rejects.toThrow(BadOptionError);
    await expect(replay(path, { actor: "worker.nobody" })).rejects.toThrow(/no records of actor "worker.nobody" in the log \(actors: client\.client-[0-9a-f]+, scheduler, worker\.worker-0, worker\.worker-1, worker\.worker-2\)/);
  });
});

describe("the state at --until", () => {
  /** The scheduler's first ASSIGN of a "slow" task: it is processing right after. */
  function firstAssign(): TransitionRecord {
    return records.find((r): r is TransitionRecord => isTransition(r) && r.actor === "scheduler" && r.event === "ASSIGN" && r.id.startsWith("slow-"))!;
  }

  it("a seq: the scheduler right after that record's input, a task still processing", async () => {
    const assign = firstAssign();
    const worker = assignedWorker(assign);
    const result = await replay(path, { until: assign.seq });
    expect(result.ok).toBe(true);
    expect(result.stats.readTo).toBe("until");
    expect(result.state.at).toEqual({ until: "seq", actor: "scheduler", seq: assign.seq });
    const scheduler = result.state.scheduler!;
    expect(scheduler.state).toBe("running");
    expect(scheduler.tasks["processing.assigned"]).toContain(assign.id);
    expect(scheduler.tasks["memory"] ?? []).not.toContain(assign.id);
    // The whole input the record belongs to has taken effect, and nothing after it.
    const cause = causeOf(records, "scheduler", assign.seq);
    const next = records.find((r) => r.actor === "scheduler" && r.seq > cause.seq && !isTransition(r))!;
    expect(result.actors["scheduler"]!.lastSeq).toBe(next.seq - 1);
    expect(result.actors["scheduler"]!.inputs).toBe(records.filter((r) => r.actor === "scheduler" && r.kind === "input" && r.seq <= cause.seq).length);
    expect(result.actors["scheduler"]!.transitions).toBe(records.filter((r) => r.actor === "scheduler" && isTransition(r) && r.seq < next.seq).length);
    const onWorker = scheduler.workers.find((w) => w.name === worker)!;
    expect(onWorker.processing).toBeGreaterThanOrEqual(1);
    expect(onWorker.occupancy).toBeGreaterThan(0);
    // The other actors stop where that record sits in the file.
    const position = records.indexOf(next);
    for (const actor of ["worker.worker-0", "worker.worker-1", "worker.worker-2"]) {
      const inputs = records.slice(0, position).filter((r) => r.actor === actor && r.kind === "input").length;
      expect({ actor, inputs: result.actors[actor]?.inputs ?? 0 }).toEqual({ actor, inputs });
    }
  });

  it("a time: every actor's records up to it", async () => {
    const assign = firstAssign();
    const result = await replay(path, { until: assign.t, untilKind: "time" });
    expect(result.ok).toBe(true);
    expect(result.state.at).toEqual({ until: "time", t: assign.t });
    expect(result.state.scheduler!.tasks["processing.assigned"]).toContain(assign.id);
    for (const [actor, a] of Object.entries(result.actors)) {
      const upTo = records.filter((r) => r.actor === actor && r.kind === "input" && r.t <= assign.t).length;
      expect({ actor, inputs: a.inputs }).toEqual({ actor, inputs: upTo });
    }
    // The same point counted from the first record of the log.
    const since = assign.t - records[0]!.t;
    const elapsed = await replay(path, { until: since, untilKind: "elapsed" });
    expect(elapsed.state.at).toEqual({ until: "time", t: records[0]!.t + since });
    expect(elapsed.state).toEqual((await replay(path, { until: records[0]!.t + since, untilKind: "time" })).state);
  });

  it("a steal in flight: the task, its victim, its thief and the request", async () => {
    const steal = records.find((r): r is TransitionRecord => isTransition(r) && r.actor === "scheduler" && r.to === "processing.stealing")!;
    expect(steal).toBeDefined(); // the run's twelve 2 ms tasks on three workers always get balanced
    const result = await replay(path, { until: steal.seq });
    expect(result.ok).toBe(true);
    const request = readReason(steal);
    if (request.kind !== "steal-request") throw new Error(`the STEAL carries ${request.kind} reasons`);
    const { victim, thief, requestId } = request.why;
    expect(result.state.scheduler!.steals).toContainEqual({ key: steal.id, victim, thief, requestId });
    expect(result.state.scheduler!.tasks["processing.stealing"]).toContain(steal.id);
  });

  it("an integer is a seq and a fraction a time unless untilKind says", async () => {
    const assign = firstAssign();
    expect((await replay(path, { until: assign.seq })).state.at).toEqual({ until: "seq", actor: "scheduler", seq: assign.seq });
    expect((await replay(path, { until: assign.t })).state.at).toEqual({ until: "time", t: assign.t });
    await expect(replay(path, { until: 1.5, untilKind: "seq" })).rejects.toThrow(BadOptionError);
    await expect(replay(path, { untilKind: "seq" })).rejects.toThrow(BadOptionError);
  });
});
