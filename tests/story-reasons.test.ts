/** The reasons of decisions in the log, and `natsched story` showing them. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { simulate } from "../sim/simulator.js";
import type { Scenario } from "../sim/scenario.js";
import { runCli } from "../cli/run.js";
import { LOGGED_CANDIDATES } from "../machines/scheduler/placement.js";
import { FileLogSink } from "../log/file-log.js";
import { storyLines } from "../tools/story.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import { killedToldAtOnce, replayLog, transitions } from "./sim-helpers.js";
import { readReason } from "../machines/reasons.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-story-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MB = 1e6;

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

async function writeLog(name: string, log: LogRecord[]): Promise<string> {
  const path = join(dir, name);
  const sink = await FileLogSink.open(path, { meta: { test: name } });
  for (const record of log) sink.append(record);
  await sink.close();
  return path;
}

const assignOf = (log: LogRecord[], key: string): TransitionRecord => transitions(log, { actor: "scheduler", id: key, event: "ASSIGN" })[0]!;

/** Seven workers, each holding one input of a different size; `sink` needs all seven. */
const gather: Scenario = {
  workers: Array.from({ length: 7 }, (_, i) => ({ name: `w${i}` })),
  tasks: [
    ...Array.from({ length: 7 }, (_, i) => ({ key: `part-${i}`, duration: 1, nbytes: (i + 1) * MB, workers: [`w${i}`] })),
    { key: "sink", deps: Array.from({ length: 7 }, (_, i) => `part-${i}`), duration: 1 },
  ],
};

describe("placement reasons in the log", () => {
  it("objective: the best candidates first, as [name, occupancy / nthreads, missing bytes, nbytes held], at most 5, with the count", () => {
    const { log } = simulate(gather);
    const why = assignOf(log, "sink").why!;
    const total = 28 * MB;
    expect(LOGGED_CANDIDATES).toBe(5);
    expect(why).toEqual({
      worker: "w6",
      rule: "objective",
      n: 7,
      candidates: [6, 5, 4, 3, 2].map((i) => [`w${i}`, 0, total - (i + 1) * MB, (i + 1) * MB]),
    });
    expect(replayLog(log).mismatches).toEqual([]);
  });

  it("root-ish tasks with queuing: the workers with a free slot, by tasks processing per thread", () => {
    const { log } = simulate({
      // Dask's saturation: the reasons as Dask's rule gives them (adaptive adds `saturation`).
      config: { workerSaturation: 1.1 },
      workers: [
        { name: "a", nthreads: 2 },
        { name: "b", nthreads: 2 },
      ],
      tasks: Array.from({ length: 20 }, (_, i) => ({ key: `root-${i}`, duration: 1 })),
    });
    const assigns = transitions(log, { actor: "scheduler", event: "ASSIGN" });
    expect(assigns[0]!.why).toEqual({ worker: "a", rule: "rootish-queuing", candidates: [["a", 0], ["b", 0]] });
    expect(assigns[1]!.why).toEqual({ worker: "b", rule: "rootish-queuing", candidates: [["b", 0], ["a", 0.5]] });
    // Later, when one slot opens at a time, the one worker with a free slot needs no list.
    const fromQueue = assigns.filter((r) => r.from === "queued");
    expect(fromQueue.length).toBeGreaterThan(0);
    const unlisted = fromQueue.filter((r) => {
      const reason = readReason(r);
      return reason.kind === "rootish-queuing" && reason.why.candidates === undefined;
    });
    expect(unlisted.length).toBeGreaterThan(0);
    expect(transitions(log, { actor: "scheduler", event: "QUEUE" }).length).toBe(fromQueue.length);
  });

  it("root-ish tasks without queuing: co-assignment lists the candidates when a new run of the group starts", () => {
    const { log } = simulate({
      config: { workerSaturation: Infinity },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: Array.from({ length: 8 }, (_, i) => ({ key: `root-${i}`, duration: 1 })),
    });
    const whys = transitions(log, { actor: "scheduler", event: "ASSIGN" }).map((r) => r.why);
    expect(whys[0]).toEqual({ worker: "a", rule: "co-assign", left: 3, candidates: [["a", 0], ["b", 0]] });
    expect(whys[1]).toEqual({ worker: "a", rule: "co-assign", left: 2 });
    // a is busy with its four by then: b, the one idle worker, is the only candidate; a new
    // run lists it anyway, so a continued run (no list) is told apart.
    expect(whys[4]).toEqual({ worker: "b", rule: "co-assign", left: 3, candidates: [["b", 0]] });
  });

  it("small independent tasks: the least occupied idle worker, with each candidate's occupancy, the winner first", () => {
    const { log } = simulate({
      workers: [{ name: "a" }, { name: "b" }, { name: "c" }],
      tasks: [
        { key: "x-1", duration: 1 },
        { key: "y-1", duration: 1 },
      ],
    });
    expect(assignOf(log, "x-1").why).toEqual({ worker: "a", rule: "least-occupied", candidates: [["a", 0], ["b", 0], ["c", 0]] });
    // a is busy; b and c are equally idle and the round-robin picks c: it is listed first.
    expect(assignOf(log, "y-1").why).toEqual({ worker: "c", rule: "least-occupied", candidates: [["c", 0], ["b", 0]] });
  });
});

describe("natsched story", () => {
  it("shows each candidate's objective, the winner marked, with transfer times from the logged bandwidth", async () => {
    const { log } = simulate(gather);
    const path = await writeLog("gather.natlog", log);
    const { code, out } = await cli("story", path, "sink");
    expect(code).toBe(0);
    expect(out).toContain("task waiting -> processing.assigned (ASSIGN)");
    expect(out).toContain("to w6, the worker where it would start soonest: occupancy / nthreads + missing bytes / bandwidth, ties to the fewest bytes held; 7 candidates, best 5:");
    // 21 MB at the default 100 MB/s estimate.
    expect(out).toMatch(/^ +w6 +0 s queued per thread \+ 21\.0 MB to move \(210\.000 ms\) = starts in 210\.000 ms; holds 7\.0 MB {2}<- chosen$/m);
    expect(out).toMatch(/^ +w2 +0 s queued per thread \+ 25\.0 MB to move \(250\.000 ms\) = starts in 250\.000 ms; holds 3\.0 MB$/m);
    expect(out).not.toMatch(/^ +w1 /m);

    const json = JSON.parse((await cli("story", path, "sink", "--json")).out);
    expect(json.bandwidth).toBe(100e6);
    const assign = json.lines.find((l: { text: string }) => l.text.includes("(ASSIGN)"));
    expect(assign.why).toEqual(assignOf(log, "sink").why);
  });

  it("explains a steal: level, estimated costs, occupancies, and the victim's answer", async () => {
    const { log, steals } = simulate({
      workers: [{ name: "a" }, { name: "b" }],
      tasks: Array.from({ length: 12 }, (_, i) => ({ key: `slow-${i}`, duration: 1, workers: ["a"], allowOtherWorkers: true })),
    });
    const confirmed = steals.find((s) => s.outcome === "confirmed");
    expect(confirmed).toBeDefined();
    const request = transitions(log, { actor: "scheduler", id: confirmed!.key, event: "STEAL" })[0]!;
    const lines = storyLines(log, confirmed!.key).flatMap((l) => [l.text, ...(l.reasons ?? [])]);
    expect(lines).toContain(`steal request ${confirmed!.requestId}: from a to b, stealable level 0 (0: no dependencies; higher: more transfer per compute)`);
    expect(lines.some((l) => l.startsWith("  estimated: compute ") && l.includes("transfer to the thief 0 s"))).toBe(true);
    expect(readReason(request).kind).toBe("steal-request");
    expect(lines.some((l) => l.startsWith("  occupancy: victim ") && l.includes("it pays: thief"))).toBe(true);
    expect(lines).toContain(`steal ${confirmed!.requestId} confirmed by a (the task was ready there, not started): moved to b (level 0)`);

    const path = await writeLog("steal.natlog", log);
    const { code, out } = await cli("story", path, confirmed!.key);
    expect(code).toBe(0);
    expect(out).toContain("(STEAL)\n");
    expect(out).toMatch(/^ +steal request steal-\d+: from a to b/m);
  });

  it("an aborted steal: the transition that ends it carries the request id, level, costs and occupancies, and the story says why", async () => {
    // The race-free steal of tests/steal-races.test.ts, with the victim dying while the request is in flight.
    const { log, steals } = simulate({
      config: { defaultTaskDurations: { f: 1 } },
      network: { latency: 0.01 },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: Array.from({ length: 4 }, (_, i) => ({ key: `f-${i}`, duration: 1, workers: ["a"], allowOtherWorkers: true })),
      actions: killedToldAtOnce(0.005, "a"),
    });
    expect(steals).toEqual([expect.objectContaining({ key: "f-3", requestId: "steal-0", level: 0, outcome: "aborted" })]);
    const request = transitions(log, { actor: "scheduler", id: "f-3", event: "STEAL" })[0]!;
    const [aborted] = transitions(log, { actor: "scheduler", id: "f-3", event: "RELEASE" });
    expect(aborted!.from).toBe("processing.stealing");
    // Every reason of the request, plus what ended it.
    expect(aborted!.why).toEqual({ ...request.why, steal: "aborted", rule: "worker-left", worker: "a" });
    expect(aborted!.why).toMatchObject({ requestId: "steal-0", level: 0, compute: 1, commVictim: 0, commThief: 0, occVictim: expect.any(Number), occThief: expect.any(Number) });
    const lines = storyLines(log, "f-3").flatMap((l) => [l.text, ...(l.reasons ?? [])]);
    expect(lines).toContain("steal steal-0 from a to b (level 0) aborted: its worker left or died (a)");
    expect(lines.filter((l) => l.startsWith("  estimated: compute 1.000 s"))).toHaveLength(2);
    expect(replayLog(log).mismatches).toEqual([]);
  });

  it("says so for a key the log does not have, and shows usage without one", async () => {
    const path = await writeLog("plain.natlog", simulate(gather).log);
    const none = await cli("story", path, "nope");
    expect(none.code).toBe(1);
    expect(none.err).toContain(`no record of nope in ${path}`);
    expect((await cli("story", path)).code).toBe(2);
  });
});
