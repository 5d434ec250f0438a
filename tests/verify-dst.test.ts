/**
 * Deterministic simulation testing (verify/, docs/invariants.md): random clusters, graphs,
 * worker deaths, steals, network delays and scheduler restarts from one seed, every
 * invariant checked after every step. A failing case is shrunk and saved under
 * tests/fixtures/dst/, and every saved fixture is replayed here from then on.
 *
 * The campaign uses a fixed seed so the suite is repeatable; DST_SEED=<n> (or "random")
 * runs it from another one (tests/support/dst-seed.ts). Long campaigns: `npm run verify -- --runs N --seed S`.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { workerStartInit } from "../log/start-init.js";
import { resolveConfig } from "../machines/config.js";
import { NatschedError } from "../machines/errors.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { LogRecord } from "../log/types.js";
import type { Scenario, SimView } from "../sim.js";
import { runCampaign } from "../verify/campaign.js";
import { DstChecker } from "../verify/checker.js";
import type { DstCase } from "../verify/dst-case.js";
import { FIXTURE_FORMAT, fixtureFor, fixtureReport, type DstFixture, judgeFixture, loadFixtures, parseFixture, saveFixture } from "../verify/fixtures.js";
import { runCase } from "../verify/run-case.js";
import { FIXTURES, SEED } from "./support/dst-seed.js";


describe("deterministic simulation testing", () => {
  it(`random cases hold every invariant (seed ${SEED})`, async () => {
    const summary = await runCampaign({ runs: 600, seed: SEED, faults: "fifo", fixturesDir: FIXTURES, maxFailures: 1 });
    const failures = summary.failures.map((f) => `${f.invariant}: ${f.message} -- shrunk case saved as ${f.fixture}; rerun with DST_SEED=${f.seed}`);
    expect(failures).toEqual([]);
    expect(summary.runs).toBe(600);
    // The campaign did exercise what it claims to check.
    const t = summary.totals;
    expect(t.deaths).toBeGreaterThan(0);
    expect(t.reexecutions).toBeGreaterThan(0);
    expect(t.lateEnvelopes).toBeGreaterThan(0);
    expect(t.stealsConfirmed).toBeGreaterThan(0);
    expect(t.stealsRejected).toBeGreaterThan(0);
    expect(t.restartsChecked).toBeGreaterThan(0);
    expect(summary.coverage.task!.missing).not.toContain("task: processing.assigned -STEAL-> processing.stealing");
  }, 120_000);

  // The campaigns with reorder and duplicate faults: tests/verify-dst-faults.test.ts (a file
  // of their own, so that vitest runs them beside this one).

  it("the same seed draws the same cases and gives the same summary", async () => {
    const a = await runCampaign({ runs: 15, seed: 7, fixturesDir: null });
    const b = await runCampaign({ runs: 15, seed: 7, fixturesDir: null });
    expect({ ...a, seconds: 0 }).toEqual({ ...b, seconds: 0 });
  });
});

describe("regression fixtures (tests/fixtures/dst)", () => {
  const fixtures = loadFixtures(FIXTURES);

  it("are there, and each names a case and the invariant it broke", () => {
    expect(fixtures.length).toBeGreaterThan(0);
    for (const { fixture } of fixtures) expect(fixture.format).toBe(FIXTURE_FORMAT);
  });

  it.each(fixtures.map(({ path, fixture }) => [path.slice(path.lastIndexOf("/") + 1), fixture] as const))("%s replays as expected", async (_name, fixture) => {
    const report = await runCase(fixture.case);
    const verdict = judgeFixture(fixture, report.violations);
    expect(verdict.detail).not.toMatch(/^regressed|no longer shows/);
    expect(verdict.ok).toBe(true);
  });
});

describe("fixture files", () => {
  const dirs: string[] = [];
  const tempDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), "natsched-dst-"));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const sample: DstCase = {
    scenario: { seed: 3, config: { workerSaturation: "inf" as unknown as number }, workers: [{ name: "w0" }], tasks: [{ key: "a", duration: 1 }] },
    restartAt: 0.5,
  };

  it("a saved fixture loads back as it was, and saving it again keeps one file", () => {
    const dir = tempDir();
    const fixture = fixtureFor(sample, { invariant: "liveness", at: -1, message: "a ends waiting" }, { seed: 9, path: "1:2", profile: "fifo" });
    const path = saveFixture(dir, fixture);
    expect(saveFixture(dir, fixture)).toBe(path);
    expect(readdirSync(dir)).toEqual([path.slice(dir.length + 1)]);
    expect(path).toMatch(/liveness-[0-9a-f]{8}\.json$/);
    expect(loadFixtures(dir)).toEqual([{ path, fixture }]);
  });

  it("a saved case replays the same run", async () => {
    const dir = tempDir();
    saveFixture(dir, fixtureFor(sample, { invariant: "liveness", at: -1, message: "m" }, { seed: 1, profile: "none" }));
    const [loaded] = loadFixtures(dir);
    const fixture = loaded!.fixture;
    const a = await runCase(sample);
    const b = await runCase(fixture.case);
    expect(b.stats).toEqual(a.stats);
    expect([...b.coverage]).toEqual([...a.coverage]);
  });

  it("a malformed fixture is a typed error naming the file and the field", () => {
    const bad = (text: string): NatschedError => {
      try {
        parseFixture(text, "x.json");
      } catch (error) {
        return error as NatschedError;
      }
      throw new Error("parseFixture accepted it");
    };
    expect(bad("{").code).toBe("BAD_OPTION");
    expect(bad("{").message).toMatch(/x\.json.*not JSON/);
    expect(bad('{"format":"other"}').message).toMatch(/format/);
    const good = { format: FIXTURE_FORMAT, invariant: "liveness", message: "m", found: { seed: 1, profile: "fifo" }, case: sample };
    expect(parseFixture(JSON.stringify(good), "x.json")).toEqual(good);
    expect(bad(JSON.stringify({ ...good, invariant: "nonsense" })).message).toMatch(/invariant.*liveness/);
    expect(bad(JSON.stringify({ ...good, case: {} })).message).toMatch(/case/);
    expect(bad(JSON.stringify({ ...good, known: 3 })).message).toMatch(/known/);
    const dir = tempDir();
    writeFileSync(join(dir, "broken.json"), "[]");
    expect(() => loadFixtures(dir)).toThrow(/broken\.json/);
  });

  it("a known problem must still show; a fixed one must hold", () => {
    const base: DstFixture = { format: FIXTURE_FORMAT, invariant: "quiescence", message: "m", found: { seed: 1, profile: "reorder" }, case: sample };
    const quiet = { invariant: "quiescence" as const, at: -1, message: "w1 still has x waiting" };
    expect(judgeFixture(base, []).ok).toBe(true);
    expect(judgeFixture(base, [quiet]).ok).toBe(false);
    expect(judgeFixture({ ...base, known: "why" }, [quiet]).ok).toBe(true);
    expect(judgeFixture({ ...base, known: "why" }, []).detail).toMatch(/no longer shows/);
  });

  it("a verify summary reports a known problem as a problem, not as a pass", () => {
    const base: DstFixture = { format: FIXTURE_FORMAT, invariant: "quiescence", message: "m", found: { seed: 1, profile: "reorder" }, case: sample };
    const quiet = { invariant: "quiescence" as const, at: -1, message: "w1 still has x waiting" };
    expect(fixtureReport({ ...base, known: "why" }, [quiet])).toEqual({ invariant: "quiescence", holds: false, asExpected: true, known: "why", detail: "known problem still shows" });
    expect(fixtureReport(base, [])).toEqual({ invariant: "quiescence", holds: true, asExpected: true, detail: "holds" });
    expect(fixtureReport(base, [quiet])).toMatchObject({ holds: false, asExpected: false });
  });

  it("no fixture is marked known: every problem found so far is fixed", () => {
    expect(loadFixtures(FIXTURES).filter(({ fixture }) => fixture.known !== undefined).map(({ path }) => path)).toEqual([]);
  });
});

/** A checker fed by hand: a log and cores we build, to show each check can fail. */
function handChecker(scenario: Partial<Scenario> = {}): { checker: DstChecker; log: LogRecord[]; view: SimView; worker: WorkerCore } {
  const full: Scenario = { workers: [{ name: "w0" }], tasks: [{ key: "a", duration: 1 }, { key: "b", duration: 1, deps: ["a"] }], ...scenario };
  const checker = new DstChecker({ scenario: full });
  const scheduler = new SchedulerCore(resolveConfig({}), { toWorker() {}, toClient() {}, transition() {} });
  const worker = new WorkerCore({ name: "w0", id: "w0-1", nthreads: 1, transferIncomingCountLimit: 4 }, { toScheduler() {}, execute() {}, gather() {}, freeData() {}, transition() {} });
  const view: SimView = { now: 1, scheduler, workers: new Map([["w0", worker]]), stores: new Map([["w0", new Set<string>()]]) };
  const log: LogRecord[] = [{ actor: "worker.w0", seq: 0, t: 0, kind: "start", role: "worker", init: workerStartInit(worker.init) }];
  return { checker, log, view, worker };
}

function wtask(log: LogRecord[], id: string, event: string, from: string, to: string, t = 1): void {
  log.push({ actor: "worker.w0", seq: log.length, t, kind: "transition", machine: "wtask", id, event, from, to });
}

function input(log: LogRecord[], event: { op: string; [k: string]: unknown }, t = 1): void {
  log.push({ actor: "worker.w0", seq: log.length, t, kind: "input", event });
}

describe("the checker catches what it claims to", () => {
  it("a task run twice with no worker death", () => {
    const { checker, log, view } = handChecker();
    wtask(log, "a", "EXECUTE", "ready", "executing");
    input(log, { op: "execute-done", key: "a" });
    wtask(log, "a", "DONE", "executing", "memory");
    wtask(log, "a", "FREE", "memory", "released");
    wtask(log, "a", "EXECUTE", "ready", "executing", 2);
    checker.turn(view, log);
    expect(checker.violations.map((v) => v.invariant)).toContain("at-most-once");
  });

  it("a task started without its input, whose value then differs from the reference", () => {
    const { checker, log, view } = handChecker();
    wtask(log, "b", "EXECUTE", "ready", "executing");
    input(log, { op: "execute-done", key: "b" });
    wtask(log, "b", "DONE", "executing", "memory");
    checker.turn(view, log);
    expect(checker.violations.map((v) => v.invariant)).toEqual(["inputs-present", "reference-result"]);
  });

  it("data that arrives from nowhere, and a transition the machine does not have", () => {
    const { checker, log, view } = handChecker();
    input(log, { op: "gather-done", from: "w9", received: [{ key: "a", nbytes: 8 }], missing: [] });
    wtask(log, "a", "RECEIVED", "released", "memory");
    checker.turn(view, log);
    expect(checker.violations.map((v) => v.invariant)).toEqual(["inputs-present", "legal-transition", "inputs-present"]);
  });

  it("a worker left busy at the end, and scheduler records that disagree", () => {
    const { checker, log, view, worker } = handChecker();
    worker.handle({ op: "registered", t: 0 });
    worker.handle({ op: "compute-task", key: "a", func: "f", args: [], deps: [], priority: [0, 0, 0], duration: 1, t: 0 });
    wtask(log, "a", "READY", "released", "ready", 0);
    wtask(log, "a", "EXECUTE", "ready", "executing", 0);
    view.scheduler.networkBytes = 2e8; // the cluster total no longer matches what the workers book
    checker.turn(view, log);
    const done = { worker: "w0", start: 0, end: 1, state: "memory" as const, executions: 1 };
    const futures = { "sim-client": { b: { state: "memory" as const, wantedAt: 0, settledAt: 1 } } };
    checker.finish({ makespan: 1, tasks: { a: done, b: done }, futures, transfers: [], steals: [], refused: 0, log });
    const found = new Set(checker.violations.map((v) => v.invariant));
    expect(found).toEqual(new Set(["occupancy", "quiescence"]));
  });

  it("a future that never settles, a failure a worker keeps that nobody will free, and a result stored for nothing", () => {
    const { checker, log, view, worker } = handChecker({ tasks: [{ key: "a", duration: 1, error: "boom" }, { key: "b", duration: 1 }] });
    worker.handle({ op: "registered", t: 0 });
    worker.handle({ op: "compute-task", key: "a", func: "f", args: [], deps: [], priority: [0, 0, 0], duration: 1, t: 0 });
    worker.handle({ op: "execute-failed", key: "a", error: { name: "SimulatedError", message: "boom" }, start: 0, stop: 1, t: 1 });
    (view.stores.get("w0") as Set<string>).add("c");
    checker.turn(view, log);
    const done = { worker: "w0", start: 0, end: 1, state: "forgotten" as const, executions: 1 };
    const futures = {
      "sim-client": {
        a: { state: "erred" as const, wantedAt: 0, settledAt: 1, error: "SimulatedError" },
        b: { state: "pending" as const, wantedAt: 0, settledAt: -1 },
      },
    };
    checker.finish({ makespan: 1, tasks: { a: { ...done, state: "erred" }, b: done }, futures, transfers: [], steals: [], refused: 0, log });
    const messages = checker.violations.filter((v) => v.invariant === "futures" || v.invariant === "no-leak").map((v) => v.message);
    expect(messages).toEqual([
      "sim-client's future for b (wanted at 0) never settled: the scheduler has it forgotten",
      "w0 keeps the failure of a, which the scheduler will never free (forgotten there)",
      "w0's data store still holds c, which its core no longer knows",
    ]);
  });

  it("a scheduler that is not what its recorded inputs make", () => {
    const checker = new DstChecker({ scenario: { workers: [{ name: "w0" }], tasks: [{ key: "a", duration: 1 }] }, restartAt: 0 });
    const config = resolveConfig({});
    const live = new SchedulerCore(config, { toWorker() {}, toClient() {}, transition() {} });
    live.handle({ op: "scheduler-start", t: 0 });
    live.handle({ op: "client-join", client: "c", t: 0 });
    const log: LogRecord[] = [
      { actor: "scheduler", seq: 0, t: 0, kind: "start", role: "scheduler", init: { config: {} } },
      { actor: "scheduler", seq: 1, t: 0, kind: "input", event: { op: "scheduler-start", t: 0 } },
    ];
    checker.turn({ now: 0, scheduler: live, workers: new Map(), stores: new Map() }, log);
    expect(checker.violations.map((v) => v.invariant)).toEqual(["restart"]);
    expect(checker.violations[0]!.message).toMatch(/clients/);
  });

  it("a run that does not end within its step budget", async () => {
    const report = await runCase({ scenario: { workers: [{ name: "w0" }], tasks: [{ key: "a", duration: 1 }, { key: "b", duration: 1 }] } }, { maxSteps: 3 });
    expect(Object.keys(report.counts)).toEqual(["termination"]);
  });
});
