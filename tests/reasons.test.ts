/**
 * The reasons the cores write (machines/reasons.ts): every why of a run is one of the known
 * kinds, exactly (no field a kind does not name), in memory and read back from a file; a why
 * of no known kind reads as `unknown` and never throws; and the types refuse what no kind is.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { readReason, type LoggedWhy, type Reason, type Why } from "../machines/reasons.js";
import type { SchedulerEffects } from "../machines/scheduler/inputs.js";
import type { WorkerEffects } from "../machines/worker/inputs.js";
import { FileLogSink, readLogSync } from "../log/index.js";
import { storyLines } from "../tools/story.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import { simulate } from "../sim.js";
import { dstCaseArb } from "../verify/dst-case.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-reasons-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let simulated: LogRecord[][] | undefined;
/** The logs of random simulated runs: worker deaths, retirements, scatters, steals, new scheduler runs, reordered and duplicated messages. */
function runs(): LogRecord[][] {
  simulated ??= fc.sample(dstCaseArb({ faults: "duplicate", maxTasks: 30 }), { seed: 1, numRuns: 400 }).map((c) => simulate(c.scenario).log);
  return simulated;
}

function whys(log: LogRecord[]): TransitionRecord[] {
  return log.filter((r): r is TransitionRecord => r.kind === "transition" && r.why !== undefined);
}

/** "kind (machine EVENT)" of every why that is not exactly one of the kinds. */
function notExact(records: Iterable<TransitionRecord>, seen: Set<string>): string[] {
  const bad: string[] = [];
  for (const r of records) {
    const reason = readReason(r, true);
    if (reason.kind === "unknown") bad.push(`${r.machine} ${r.event} ${JSON.stringify(r.why)}`);
    else seen.add(reason.kind === "steal-aborted" ? `steal-aborted by ${reason.by.kind}` : reason.kind);
  }
  return bad;
}

describe("every why a core writes is a known kind", () => {
  it("in the simulator's log: each decision's fields are exactly its kind's", () => {
    const seen = new Set<string>();
    const bad = runs().flatMap((log) => notExact(whys(log), seen));
    expect(bad).toEqual([]);
    // The runs reach the scheduler's placements, steals and failures and the workers' drops.
    for (const kind of [
      "objective",
      "only-candidate",
      "least-occupied",
      "rootish-queuing",
      "co-assign",
      "no-candidate",
      "steal-request",
      "steal-confirmed",
      "steal-rejected",
      "steal-reschedule",
      "steal-aborted by none",
      "scatter",
      "scatter-shared",
      "held-by-joining-worker",
      "worker-left",
      "worker-retiring",
      "killed-worker",
      "data-lost",
      "free-erred",
      "task-erred",
      "dependency-erred",
      "retire",
      "worker-closed",
      "past-run",
      "stale-assignment",
      "scatter-confirmed",
      "new-run",
      "void-assignments",
      "retry",
    ]) {
      expect(seen, kind).toContain(kind);
    }
  });

  it("read back from a file, binary and JSON lines: the same kinds", async () => {
    for (const [i, log] of runs().slice(0, 30).entries()) {
      for (const format of ["binary", "jsonl"] as const) {
        const path = join(dir, `run-${i}.${format}.natlog`);
        const sink = await FileLogSink.open(path, { format });
        for (const r of log) sink.append(r);
        await sink.close();
        const back = readLogSync(path);
        expect(back.problems).toEqual([]);
        const read = whys(back.records);
        expect(notExact(read, new Set())).toEqual([]);
        expect(read.map((r) => readReason(r).kind)).toEqual(whys(log).map((r) => readReason(r).kind));
      }
    }
  });
});

describe("a why of no known kind", () => {
  const at = (machine: string, event: string, why: unknown): Reason => readReason({ machine, event, why: why as LoggedWhy });

  it("reads as unknown, with its fields, and never throws", () => {
    const odd: [string, string, unknown][] = [
      ["task", "ERR", { rule: "a-rule-from-elsewhere" }],
      ["task", "ASSIGN", { worker: 5, rule: "objective" }],
      ["task", "ASSIGN", { worker: "a", rule: "objective", candidates: [["a", null, 0, 0]] }],
      ["task", "DATA", { rule: "worker-left", worker: "a" }], // a RELEASE's reason on DATA
      ["wtask", "STALE", { rule: "scatter" }],
      ["client", "X", { rule: "scatter" }],
      ["task", "DATA", []],
      ["task", "DATA", "scatter"],
      ["task", "DATA", null],
      ["task", "FINISH", { steal: "aborted", victim: "a" }],
    ];
    for (const [machine, event, why] of odd) expect(at(machine, event, why), JSON.stringify(why)).toEqual({ kind: "unknown", why });
    expect(at("task", "FINISH", undefined)).toEqual({ kind: "none" });
  });

  it("fields a newer log adds are allowed, unless exact", () => {
    const why = { rule: "scatter", since: "a later version" };
    expect(readReason({ machine: "task", event: "DATA", why })).toEqual({ kind: "scatter", why });
    expect(readReason({ machine: "task", event: "DATA", why }, true)).toEqual({ kind: "unknown", why });
  });

  it("a steal cut short by a decision of no known kind: the steal is read, the decision is unknown", () => {
    const request = { victim: "a", thief: "b", level: 0, requestId: "steal-0", compute: 1, commVictim: 0, commThief: 0, occVictim: 2, occThief: 0 };
    const why = { rule: "a-rule-from-elsewhere", worker: "a", steal: "aborted", ...request };
    const reason = readReason({ machine: "task", event: "RELEASE", why });
    expect(reason).toEqual({ kind: "steal-aborted", why, by: { kind: "unknown", why: { rule: "a-rule-from-elsewhere", worker: "a" } } });
    expect(readReason({ machine: "task", event: "RELEASE", why }, true).kind).toBe("unknown");
    const byRetiring = { rule: "worker-retiring", worker: "a", steal: "aborted", ...request };
    expect(readReason({ machine: "task", event: "RELEASE", why: byRetiring }, true)).toEqual({ kind: "steal-aborted", why: byRetiring, by: { kind: "worker-retiring", why: byRetiring } });
  });

  it("natsched story shows it as key=value", () => {
    const log: LogRecord[] = [
      { actor: "scheduler", seq: 0, t: 1, kind: "transition", machine: "task", id: "k", event: "ERR", from: "processing.assigned", to: "erred", why: { rule: "a-rule-from-elsewhere", n: [1] } },
      { actor: "scheduler", seq: 1, t: 2, kind: "transition", machine: "task", id: "k", event: "RELEASE", from: "erred", to: "released", why: { rule: "free-erred", worker: "a", attempt: 3 } },
    ];
    expect(storyLines(log, "k").map((l) => l.reasons)).toEqual([["rule=a-rule-from-elsewhere n=[1]"], ["rule free-erred (worker=a attempt=3)"]]);
  });
});

/** Compile-time: `tsc -p tests` fails if the types below stop refusing what no kind is. */
export function typeChecks(scheduler: SchedulerEffects, worker: WorkerEffects, record: TransitionRecord): Why[] {
  // @ts-expect-error a rule no kind has
  scheduler.transition("task", "k", "ERR", "processing.assigned", "erred", { rule: "a-rule-no-core-writes" });
  // @ts-expect-error a field its kind does not name
  scheduler.transition("task", "k", "DATA", "released", "memory", { rule: "scatter", client: "c" });
  // @ts-expect-error a field of the wrong type
  worker.transition("wtask", "k", "STALE", "memory", "memory", { rule: "past-run", op: "compute-task", run: "1" });
  // @ts-expect-error a machine no core has
  worker.transition("client", "k", "STALE", "memory", "memory");
  // @ts-expect-error a logged why's fields are read through readReason, not by name
  const worker_ = record.why?.worker;
  return [{ rule: "scatter-shared", client: "c" }, { blame: "x" }, worker_ as Why];
}
