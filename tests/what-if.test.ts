/** `natsched what-if`: a recorded LocalCluster run's workload, re-run on the simulator. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { simulate } from "../sim/simulator.js";
import { runCli } from "../cli/run.js";
import { readLogSync } from "../log/reader.js";
import type { InputRecord, LogRecord } from "../log/types.js";
import { whatIf } from "../tools/what-if.js";
import { extractWorkload } from "../tools/workload-extract.js";
import { recordRun, type RunLog } from "./replay-fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-what-if-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const SLOW = 24;

/**
 * 24 tasks of 30 ms pinned (loosely) to worker a, and a total over all of them: worker b
 * gets work only by stealing, and the total then needs b's results moved.
 */
async function recordPinnedRun(path: string): Promise<void> {
  const cluster = await LocalCluster.start({
    workers: [
      { name: "a", nthreads: 2 },
      { name: "b", nthreads: 2 },
    ],
    functions: {
      slow: async (x: number) => {
        await sleep(30);
        return x;
      },
      total: (...xs: number[]) => xs.reduce((a, b) => a + b, 0),
    },
    log: { path },
    configFile: false,
  });
  const client = cluster.client();
  const xs = client.map<number>("slow", Array.from({ length: SLOW }, (_, i) => i), { workers: ["a"], allowOtherWorkers: true });
  const total = client.submit<number>("total", xs);
  if ((await total.result()) !== (SLOW * (SLOW - 1)) / 2) throw new Error("wrong total");
  await cluster.close();
}

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const inputs = (records: LogRecord[], op: string) => records.filter((r): r is InputRecord => r.kind === "input" && r.event.op === op);

describe("what-if on a run with a slow prefix pinned on one worker", () => {
  const path = join(dir, "pinned.natlog");
  let records: LogRecord[];

  beforeAll(async () => {
    await recordPinnedRun(path);
    records = readLogSync(path).records;
  });

  it("extracts the graph, the measured durations, the workers and the recorded config", () => {
    const { scenario, summary, recorded, config } = extractWorkload(records);
    expect(summary).toMatchObject({ tasks: SLOW + 1, graphs: 2, workers: 2, measured: SLOW + 1, estimated: 0, failed: 0, leaves: 0 });
    // In-process workers running their tasks on the scheduler's thread: no round trips measured.
    expect(scenario.workers).toEqual([
      { name: "a", nthreads: 2, roundTrips: false },
      { name: "b", nthreads: 2, roundTrips: false },
    ]);
    expect(config.workStealing).toBe(true);
    expect(scenario.config).toMatchObject({ workStealing: true, workerSaturation: "adaptive" });
    const slow = scenario.tasks.filter((t) => t.key.startsWith("slow-"));
    expect(slow).toHaveLength(SLOW);
    for (const t of slow) {
      expect(t).toMatchObject({ workers: ["a"], allowOtherWorkers: true });
      expect(t.duration).toBeGreaterThanOrEqual(0.029);
    }
    const total = scenario.tasks.find((t) => t.key.startsWith("total-"))!;
    expect(new Set(total.deps)).toEqual(new Set(slow.map((t) => t.key)));
    // Submitted in the same turn as the map, it is taken with it: one graph at its time (0), or later.
    expect(total.submitAt ?? 0).toBeGreaterThanOrEqual(0);
    // Runs: each function's own time, run by run; with the host's mean time to start one, the
    // thread time its worker recorded (EXECUTE to the function's stop).
    const done = inputs(records, "execute-done");
    expect(done).toHaveLength(SLOW + 1);
    for (const t of scenario.tasks) expect(t.runs).toHaveLength(1);
    const sumDurations = scenario.tasks.reduce((n, t) => n + t.runs![0]!, 0);
    // A run the recording did not make takes the median run of the key's prefix.
    const slowRuns = slow.map((t) => t.runs![0]!).sort((x, y) => x - y);
    for (const t of slow) expect(t.duration).toBe(slowRuns[Math.floor(SLOW / 2)]);
    expect(sumDurations).toBeCloseTo(done.reduce((n, r) => n + Number(r.event.stop) - Number(r.event.start), 0), 4);
    const sumBusy = Object.values(recorded.workers).reduce((n, w) => n + w.busy, 0);
    expect(Math.abs(sumDurations + (SLOW + 1) * scenario.hostCosts!.taskStart! - sumBusy)).toBeLessThan(1e-5 * (SLOW + 1));
    // The recorded metrics are what the log says.
    const stealRecords = records.filter((r) => r.kind === "transition" && r.actor === "scheduler" && r.event === "STEAL");
    expect(recorded.stealsRequested).toBe(stealRecords.length);
    const moved = inputs(records, "gather-done").flatMap((r) => r.event.received as { nbytes: number }[]);
    expect(recorded.bytesTransferred).toBe(moved.reduce((n, m) => n + m.nbytes, 0));
    expect(recorded.workers.a!.tasks + recorded.workers.b!.tasks).toBe(SLOW + 1);
    expect(scenario.network?.latency).toBeGreaterThan(0);
  });

  it("simulates the recorded config close to the recorded run, and the change without stealing", () => {
    const result = whatIf(records, { changes: { workStealing: false, workerSaturation: Infinity } });
    const { recorded, original, changed } = result;
    // Close: same durations and placement rules; the simulator leaves out the host's own CPU time.
    expect(result.ratio).toBeGreaterThan(0.6);
    expect(result.ratio).toBeLessThan(1.4);
    expect(original.unfinished).toBe(0);
    expect(original.workers.a!.tasks + original.workers.b!.tasks).toBe(SLOW + 1);
    const busy = (m: { workers: Record<string, { busy: number }> }) => Object.values(m.workers).reduce((n, w) => n + w.busy, 0);
    expect(Math.abs(busy(original) - busy(recorded))).toBeLessThan(1e-5 * (SLOW + 1));

    // Without stealing the pinned tasks stay on a: nothing is stolen or moved, b idles.
    expect(changed).not.toBeNull();
    expect(changed!.stealsRequested).toBe(0);
    expect(changed!.workers.b!.tasks).toBe(0);
    expect(changed!.transfers).toBe(0);
    expect(changed!.bytesTransferred).toBe(0);
    expect(changed!.unfinished).toBe(0);
    if (original.workers.b!.tasks > 0) {
      // b's results had to reach the total, and sharing the work made it faster.
      expect(original.transfers).toBeGreaterThan(0);
      expect(changed!.makespan).toBeGreaterThan(original.makespan * 1.2);
    } else {
      expect(changed!.makespan).toBeCloseTo(original.makespan, 6);
    }
  });

  it("natsched what-if prints the table, and --scenario writes what natsched simulate runs", async () => {
    const scenarioPath = join(dir, "pinned.json");
    const text = await cli("what-if", path, "--set", "workStealing=false", "--set", "workerSaturation=inf", "--scenario", scenarioPath);
    expect(text.code).toBe(0);
    expect(text.out).toContain(`what-if on ${path}: ${SLOW + 1} tasks in 2 graph(s)`);
    expect(text.out).toContain("changes: workStealing=false workerSaturation=inf");
    expect(text.out).toMatch(/^ {2}makespan +\d+\.\d+ s +\d+\.\d+ s +\d+\.\d+ s$/m);
    expect(text.out).toMatch(/^ {2}tasks on b +\d+ +\d+ +0$/m);
    expect(text.out).toMatch(/^simulated original vs recorded: makespan .* ratio \d\.\d\d/m);

    const json = await cli("what-if", path, "--set", "workStealing=false", "--set", "workerSaturation=inf", "--json");
    expect(json.code).toBe(0);
    const report = JSON.parse(json.out);
    expect(report.changes).toEqual({ workStealing: false, workerSaturation: "Infinity" });
    expect(report.changed.stealsRequested).toBe(0);

    const simulated = await cli("simulate", scenarioPath, "--json");
    expect(simulated.code).toBe(0);
    expect(JSON.parse(simulated.out).makespan).toBe(report.original.makespan);
    const changedRun = await cli("simulate", scenarioPath, "--set", "workStealing=false", "--set", "workerSaturation=inf", "--json");
    expect(JSON.parse(changedRun.out).makespan).toBe(report.changed.makespan);
  });

  it("shows the host costs it measured, and runs both simulations with those given by --host", async () => {
    const measured = await cli("what-if", path, "--json");
    const report = JSON.parse(measured.out);
    expect(report.workload.hostCosts.samples.taskStart).toBe(SLOW + 1);
    expect(Object.keys(report.workload.hostCosts.hostCosts).sort()).toEqual(["graphIntake", "schedulerDelay", "schedulerOp", "stealAnswer", "taskStart", "warmUp", "workerDelay"]);
    const text = await cli("what-if", path);
    expect(text.out).toMatch(/^ {2}host costs: to worker \+\d+\.\d{3} ms, to scheduler \+\d+\.\d{3} ms, function start \d+\.\d{3} ms/m);
    const plain = await cli("what-if", path, "--host", "taskStart=0.5", "--json");
    expect(plain.code).toBe(0);
    const given = JSON.parse(plain.out);
    expect(given.workload.hostCosts.hostCosts.taskStart).toBe(0.5);
    // Every one of the 25 executions holds its thread 0.5 s longer: 2 workers x 2 threads.
    expect(given.original.makespan).toBeGreaterThan(report.original.makespan + 0.5 * Math.ceil((SLOW + 1) / 4) - 0.5);
  });

  it("reads --set values like NATSCHED_* variables: a bad key or value is the typed config error", async () => {
    const badKey = await cli("what-if", path, "--set", "workStealin=false");
    expect(badKey.code).toBe(1);
    expect(badKey.err).toContain('config workStealin: unknown setting; did you mean "workStealing"? (from --set)');
    const badValue = await cli("what-if", path, "--set", "workerSaturation=lots");
    expect(badValue.code).toBe(1);
    expect(badValue.err).toContain("config workerSaturation:");
    const badHost = await cli("what-if", path, "--host", "gcPause=0.1");
    expect(badHost.code).toBe(2);
    expect(badHost.err).toContain("--host.gcPause: unknown field");
    expect((await cli("what-if", path, "--host", "taskStart=-1")).code).toBe(2);
    const usage = await cli("what-if");
    expect(usage.code).toBe(2);
    expect(usage.err).toContain("usage: natsched what-if <log>");
  });
});

describe("what-if on a run with a worker killed, a failing task and scattered data", () => {
  const path = join(dir, "faults.natlog");
  let run: RunLog;
  let records: LogRecord[];

  beforeAll(async () => {
    run = await recordRun({ path });
    records = readLogSync(path).records;
  });

  it("turns the death into a kill, the failure into an erroring task, the scatter into data", () => {
    const { scenario, summary, origin } = extractWorkload(records);
    const lost = inputs(records, "worker-lost").find((r) => r.actor === "scheduler" && r.event.name === run.killed)!;
    // LocalCluster.killWorker told the scheduler at once: the simulated scheduler loses it at once too.
    expect(lost.event.reason).toBe("killed");
    const at = expect.closeTo(lost.t - origin, 5);
    expect(scenario.actions).toEqual([
      { at, do: "lose-worker", worker: run.killed, back: 0 },
      { at, do: "kill-worker", worker: run.killed },
    ]);
    expect(summary.leaves).toBe(1);
    expect(scenario.data).toEqual([{ key: run.scattered, nbytes: expect.any(Number), on: ["worker-2"] }]);
    const bad = scenario.tasks.find((t) => t.key === run.bad)!;
    expect(bad.error).toBe("Error: boom");
    expect(summary.failed).toBe(1);
    // Its dependent never ran: its duration is a guess, and it is counted as such.
    expect(summary.estimated).toBeGreaterThanOrEqual(1);
    expect(scenario.tasks.find((t) => t.key === run.fromScattered)!.deps).toEqual([run.scattered]);

    const result = simulate(scenario);
    expect(result.tasks[run.bad]!.state).toBe("erred");
    expect(result.tasks[run.after]!.state).toBe("erred");
    expect(result.tasks[run.fromScattered]!.state).toMatch(/^(memory|released|forgotten)$/);
    expect(Object.values(result.tasks).every((t) => ["memory", "released", "forgotten", "erred"].includes(t.state))).toBe(true);
  });

  it("refuses a log with no workload, with a clear error", () => {
    const header = records.filter((r) => r.actor === "scheduler").slice(0, 3);
    expect(() => extractWorkload(header)).toThrow(/no task graph or scattered data/);
  });
});
