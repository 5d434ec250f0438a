/**
 * `natsched inspect`, `keys` and `story` on a recorded incident: a worker killed while it
 * executes, a failing task, a second graph submitted later. inspect shows the killed worker
 * stopped (with why) and executing nothing; its cut is replay --until's; every tool prints
 * times from the run's start; story and keys take key prefixes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../index.js";
import { runCli } from "../cli/run.js";
import { readLogSync } from "../log/reader.js";
import { FileLogSink } from "../log/file-log.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import { simulate } from "../sim/simulator.js";
import { LogCut, parseCut } from "../replay/log-cut.js";
import { replay } from "../replay/replay.js";
import { ClusterFold } from "../log/cluster-fold.js";
import { AmbiguousKeyError, NoSuchKeyError, resolveKey } from "../tools/keys.js";
import { TimeBase } from "../log/time-base.js";
import { until } from "./support/until.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-inspect-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const path = join(dir, "incident.natlog");
let records: LogRecord[];
let holds: string[];
let late: string;
let failed: string;

beforeAll(async () => {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let started = 0;
  const cluster = await LocalCluster.start({
    workers: 2,
    functions: {
      hold: async (x: number) => {
        started++;
        await gate;
        return x;
      },
      inc: (x: number) => x + 1,
      boom: (x: number) => {
        throw new Error(`boom ${x}`);
      },
    },
    log: { path },
    configFile: false,
  });
  const client = cluster.client();
  const futures = client.map<number>("hold", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  holds = futures.map((f) => f.key);
  // Both workers (one thread each) are executing a task when worker-0 is killed.
  await until(() => started >= 2);
  cluster.killWorker("worker-0");
  open();
  for (const f of futures) await f.result();
  const bad = client.submit<number>("boom", [1]);
  failed = bad.key;
  await bad.result().catch(() => undefined);
  const next = client.submit<number>("inc", [41]);
  late = next.key;
  expect(await next.result()).toBe(42);
  await cluster.close();
  const log = readLogSync(path);
  expect(log.problems).toEqual([]);
  records = log.records;
}, 30_000);

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

function find(test: (r: LogRecord) => boolean, what: string): LogRecord {
  const record = records.find(test);
  if (record === undefined) throw new Error(`the log has no ${what}`);
  return record;
}

const stopRecord = (): LogRecord => find((r) => r.actor === "worker.worker-0" && r.kind === "stop", "stop record of worker-0");
const workerLost = (): LogRecord => find((r) => r.actor === "scheduler" && r.kind === "input" && r.event.op === "worker-lost", "worker-lost input");

describe("natsched inspect: workers", () => {
  it("a killed worker executes a task before its stop record, and after it is stopped, killed, executing nothing", async () => {
    const stop = stopRecord();
    const before = JSON.parse((await cli("inspect", path, "--at", `worker.worker-0:${stop.seq - 1}`, "--json")).out);
    const w0 = before.workers.find((w: { name: string }) => w.name === "worker-0");
    expect(w0.status).toBe("running");
    expect(w0.executing).toHaveLength(1);
    expect(holds).toContain(w0.executing[0]);

    for (const at of [`scheduler:${workerLost().seq}`, `worker.worker-0:${stop.seq}`, undefined]) {
      const { code, out } = await cli("inspect", path, ...(at ? ["--at", at] : []), "--json");
      expect(code).toBe(0);
      const view = JSON.parse(out);
      const killed = view.workers.find((w: { name: string }) => w.name === "worker-0");
      expect(killed).toMatchObject({ status: "stopped", stopReason: "killed", executing: [], tasks: {}, occupancy: 0 });
      if (at !== `worker.worker-0:${stop.seq}`) expect(killed.scheduler).toMatchObject({ state: "closed", reason: "killed" });
    }
    const text = (await cli("inspect", path, "--at", String(workerLost().seq))).out;
    expect(text).toMatch(/worker-0\s+stopped at \+\d+\.\d{3}s: killed \(scheduler: closed, killed at \+\d+\.\d{3}s\); executes nothing/);
    expect(text).toMatch(/worker-1\s+running/);
    expect(text).toMatch(/1\/1 threads busy, occupancy \d+\.\d{3} s, processing \d+ \(scheduler\)/);
    // The absolute time shows once, on the line that says what the times mean.
    expect(text.split("\n").filter((l) => /t=1\d{9}/.test(l)).map((l) => l.slice(0, 6))).toEqual(["times:"]);
  });

  it("--key (a prefix will do) marks a killed worker's task as gone with it", async () => {
    const stop = stopRecord();
    const view = JSON.parse((await cli("inspect", path, "--at", `worker.worker-0:${stop.seq - 1}`, "--json")).out);
    const key: string = view.workers.find((w: { name: string }) => w.name === "worker-0").executing[0];
    const prefix = key.slice(0, "hold-".length + 6);
    expect(holds.filter((k) => k.startsWith(prefix))).toEqual([key]);
    const { out } = await cli("inspect", path, "--key", prefix);
    expect(out).toMatch(new RegExp(`worker\\.worker-0\\s+wtask\\s+${key}\\s+executing .*\\(gone: worker\\.worker-0 stopped at \\+\\d+\\.\\d{3}s, killed\\)`));
  });
});

/** The records the shared cut takes, in log order. */
function taken(text: string): LogRecord[] {
  const cut = new LogCut(parseCut(text, "--at"));
  const out: LogRecord[] = [];
  for (const record of records) {
    const verdict = cut.admit(record);
    if (verdict === "end") break;
    if (verdict === "take") out.push(record);
  }
  return out;
}

describe("inspect --at and replay --until: one cut", () => {
  it("stop at the same record: the same tasks in the same states, the same worker cores, the same last time", async () => {
    const schedulerInputs = records.filter((r) => r.actor === "scheduler" && r.kind === "input");
    const start = records[0]!.t;
    const middle = records[Math.floor(records.length / 2)]!;
    const cuts = [
      ...[0.2, 0.4, 0.6, 0.8].map((f) => String(schedulerInputs[Math.floor(f * schedulerInputs.length)]!.seq)),
      String(workerLost().seq),
      `worker.worker-1:${middle.actor === "worker.worker-1" ? middle.seq : 10}`,
      `+${(middle.t - start).toFixed(4)}`,
      String(middle.t),
    ];
    for (const at of cuts) {
      const spec = parseCut(at, "--until");
      const replayed = await replay(path, { until: spec.value, untilKind: spec.kind, ...(spec.actor ? { untilActor: spec.actor } : {}), openOk: true });
      const fold = new ClusterFold();
      const mine = taken(at);
      for (const record of mine) fold.add(record);

      const replayedTasks = new Map<string, string>();
      for (const [state, keys] of Object.entries(replayed.state.scheduler!.tasks)) for (const key of keys) replayedTasks.set(key, state);
      const foldTasks = new Map([...fold.tasks.values()].filter((t) => t.state !== "forgotten").map((t) => [t.key, t.state]));
      expect(foldTasks, `scheduler tasks at ${at}`).toEqual(replayedTasks);

      for (const [name, core] of Object.entries(replayed.state.workers)) {
        const tasks = Object.fromEntries([...(fold.workerTasks.get(core.actor) ?? new Map()).values()].reduce((m, t) => m.set(t.state, (m.get(t.state) ?? 0) + 1), new Map<string, number>()));
        if (core.stopped) expect(tasks, `${name} at ${at}`).toEqual({});
        else expect(tasks, `${name} at ${at}`).toEqual(Object.fromEntries(Object.entries(core.tasks).filter(([state]) => state !== "released")));
      }
      const lastT = Math.max(...mine.filter((r) => r.kind !== "transition").map((r) => r.t));
      expect(replayed.state.t, `last time at ${at}`).toBe(lastT);

      const inspected = JSON.parse((await cli("inspect", path, "--at", at, "--json")).out);
      expect(inspected.records).toBe(mine.length);
      const last = mine[mine.length - 1]!;
      expect(inspected.last).toEqual({ actor: last.actor, seq: last.seq, t: last.t });
    }
  });

  it("a seq cut takes its input's transitions and stops at the actor's next input", () => {
    const lost = workerLost();
    const mine = taken(String(lost.seq));
    const ofScheduler = mine.filter((r) => r.actor === "scheduler");
    const next = records.find((r) => r.actor === "scheduler" && r.seq > lost.seq && r.kind !== "transition")!;
    expect(ofScheduler[ofScheduler.length - 1]!.seq).toBe(next.seq - 1);
    expect(mine).toEqual(records.slice(0, records.indexOf(next)));
  });

  it("the same cut syntax, and the same typed error for a bad one, in both commands", async () => {
    for (const command of ["inspect", "keys"]) {
      const bad = await cli(command, path, "--at", "soon");
      expect(bad.code).toBe(2);
      expect(bad.err).toContain('--at takes a seq (1234), an actor and seq (worker.a:40), a time (1763785.5) or seconds from the start (+2.5), got "soon"');
    }
    expect((await cli("replay", path, "--until", `worker.worker-1:3`)).code).toBe(0);
    const mixed = await cli("replay", path, "--until", "worker.worker-1:3", "--actor", "scheduler");
    expect(mixed.code).toBe(1);
    expect(mixed.err).toContain("a cut at worker.worker-1's record with only scheduler replayed");
  });
});

describe("one time base", () => {
  it("two stories print the same time for the same record, seconds from the run's start, with the start once", async () => {
    const start = records[0]!.t;
    const first = await cli("story", path, holds[0]!);
    const second = await cli("story", path, late);
    expect(first.code).toBe(0);
    expect(second.code).toBe(0);
    const iso = new Date(start * 1000).toISOString();
    for (const story of [first.out, second.out]) expect(story.split("\n").filter((l) => l.startsWith("times: "))).toEqual([`times: seconds from the run's start, ${iso} (t=${start})`]);
    // The worker that frees both keys does so in one input: one record, one time, in both stories.
    const shared = find((r) => r.kind === "input" && r.event.op === "free-keys" && Array.isArray(r.event.keys) && r.event.keys.includes(holds[0]) && r.event.keys.includes(late), "free-keys of both keys");
    const at = `+${(shared.t - start).toFixed(6)}s`;
    const line = (story: string) => story.split("\n").find((l) => l.includes(shared.actor) && l.includes(`#${shared.seq} `));
    expect(line(first.out)!.startsWith(at)).toBe(true);
    expect(line(second.out)!.startsWith(at)).toBe(true);
    // The late key's story does not start at +0: it is on the run's clock, not its own.
    expect(second.out.split("\n")[2]!.startsWith("+0.000000s")).toBe(false);
  });

  it("log, inspect, export and what-if print the run's start once and times from it", async () => {
    const start = records[0]!.t;
    const info = await cli("log", path);
    expect(info.out.match(/times: seconds from the run's start/g)).toHaveLength(1);
    expect(info.out).toMatch(/scheduler\s+\d+ records .* s, \+0\.000s to \+\d+\.\d{3}s/);
    const inspected = await cli("inspect", path);
    expect(inspected.out.match(/times: seconds from the run's start/g)).toHaveLength(1);
    expect(inspected.out).toContain(`(t=${start})`);
    const lost = workerLost();
    const since = (lost.t - start).toFixed(6);
    const sliced = await cli("export", path, "--around", `+${since}`, "--out", join(dir, "slice.natlog"));
    expect(sliced.out).toContain(`around time +${(start + Number(since) - start).toFixed(3)}s from the run's start (t=`);
    const whatIf = await cli("what-if", path);
    const graph = find((r) => r.actor === "scheduler" && r.kind === "input" && r.event.op === "update-graph", "first graph");
    expect(whatIf.out).toContain(`recorded run measured from its first graph, at +${(graph.t - start).toFixed(3)}s; times: seconds from the run's start`);
  });
});

describe("key prefixes", () => {
  it("story: a unique prefix is that key; an ambiguous one lists 10 candidates and the count; none is a typed error", async () => {
    const unique = failed.slice(0, "boom-".length + 4);
    expect(records.filter((r) => r.kind === "transition" && r.machine === "task" && r.id.startsWith(unique) && r.id !== failed)).toEqual([]);
    const story = await cli("story", path, unique);
    expect(story.code).toBe(0);
    expect(story.out).toContain(`story of ${failed} (`);

    const ambiguous = await cli("story", path, "hold-");
    expect(ambiguous.code).toBe(1);
    const sorted = [...holds].sort();
    expect(ambiguous.err).toContain(`12 keys start with "hold-": ${sorted.slice(0, 10).join(", ")}, ... (2 more); give more of the key`);

    const none = await cli("story", path, "nothing-");
    expect(none.code).toBe(1);
    expect(none.err).toContain(`no record of nothing- in ${path}`);
  });

  it("resolveKey: a whole key wins over longer keys it starts; typed errors carry the candidates", () => {
    expect(resolveKey(["inc-1", "inc-10", "inc-11"], "inc-1", "x")).toBe("inc-1");
    expect(resolveKey(["inc-1", "inc-10", "dec-1"], "d", "x")).toBe("dec-1");
    const many = Array.from({ length: 14 }, (_, i) => `k-${String(i).padStart(2, "0")}`);
    const error = (() => {
      try {
        resolveKey(many.reverse(), "k-", "x");
      } catch (e) {
        return e;
      }
    })() as AmbiguousKeyError;
    expect(error).toBeInstanceOf(AmbiguousKeyError);
    expect(error.code).toBe("AMBIGUOUS_KEY");
    expect(error.count).toBe(14);
    expect(error.candidates).toEqual(many.slice().sort().slice(0, 10));
    expect(() => resolveKey(many, "z", "x")).toThrow(NoSuchKeyError);
  });
});

describe("natsched keys", () => {
  it("lists keys by state with worker and function, by prefix, up to a limit", async () => {
    // Before the client left: the failed task erred, every hold in memory on the surviving worker.
    const leave = find((r) => r.actor === "scheduler" && r.kind === "input" && r.event.op === "client-leave", "client-leave");
    const erred = JSON.parse((await cli("keys", path, "--state", "erred", "--at", String(leave.seq - 1), "--json")).out);
    expect(erred.total).toBe(1);
    expect(erred.keys[0]).toMatchObject({ key: failed, state: "erred", worker: "worker-1", func: "boom" });
    const memory = JSON.parse((await cli("keys", path, "--state", "memory", "--prefix", "hold-", "--at", String(leave.seq - 1), "--json")).out);
    expect(memory.total).toBe(12);
    expect(memory.keys.map((k: { key: string }) => k.key)).toEqual([...holds].sort());
    for (const k of memory.keys) expect(k).toMatchObject({ state: "memory", worker: "worker-1", func: "hold" });

    const limited = await cli("keys", path, "--prefix", "hold-", "--limit", "3", "--at", String(leave.seq - 1));
    expect(limited.code).toBe(0);
    expect(limited.out.split("\n")[0]).toBe(`12 key(s) after scheduler #${leave.seq - 1} starting with "hold-", the first 3 (--limit)`);
    expect(limited.out.split("\n").filter((l) => /^\s+hold-/.test(l))).toHaveLength(3);

    const processing = JSON.parse((await cli("keys", path, "--state", "processing", "--at", String(workerLost().seq), "--json")).out);
    for (const k of processing.keys) expect(k.state.startsWith("processing.")).toBe(true);
    const badState = await cli("keys", path, "--state", "running");
    expect(badState.code).toBe(2);
    expect(badState.err).toContain('no task state "running" (states: released, waiting, queued, no-worker, processing, processing.assigned, processing.stealing, memory, erred, forgotten)');
    expect((await cli("keys", path, "--limit", "0")).code).toBe(2);
  });
});

describe("TimeBase", () => {
  it("a run on the wall clock prints its start as an ISO time; a simulated one says its clock is virtual", () => {
    const wall = TimeBase.of(1795743627.5, 1795743627400);
    expect(wall.at(1795743629)).toBe("+1.500000s");
    expect(wall.describe()).toBe("times: seconds from the run's start, 2026-11-27T01:40:27.500Z (t=1795743627.5)");
    const virtual = TimeBase.of(0, 1795743627400);
    expect(virtual.at(2.25, 3)).toBe("+2.250s");
    expect(virtual.describe()).toBe("times: seconds from the run's start, t=0 on the run's virtual clock (simulated); log written 2026-11-27T01:40:27.400Z");
  });
});

describe("natsched inspect: steals in flight (a simulated run)", () => {
  it("shows each steal in flight at a cut as replay does, on the run's virtual clock", async () => {
    const { log } = simulate({
      workers: [{ name: "a" }, { name: "b" }],
      tasks: Array.from({ length: 12 }, (_, i) => ({ key: `slow-${i}`, duration: 1, workers: ["a"], allowOtherWorkers: true })),
    });
    const stealPath = join(dir, "steal.natlog");
    const sink = await FileLogSink.open(stealPath, {});
    for (const record of log) sink.append(record);
    await sink.close();
    const requests = log.filter((r): r is TransitionRecord => r.kind === "transition" && r.actor === "scheduler" && r.event === "STEAL");
    expect(requests.length).toBeGreaterThan(0);
    const request = requests[0]!;
    const view = JSON.parse((await cli("inspect", stealPath, "--at", String(request.seq), "--json")).out);
    const replayed = await replay(stealPath, { until: request.seq, untilKind: "seq" });
    const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : 1);
    const shown = view.steals.map((s: { key: string; victim: string; thief: string; requestId: string }) => ({ key: s.key, victim: s.victim, thief: s.thief, requestId: s.requestId }));
    expect(shown.sort(byKey)).toEqual([...replayed.state.scheduler!.steals].sort(byKey));
    expect(view.steals).toContainEqual(expect.objectContaining({ key: request.id, victim: "a", thief: "b" }));
    const text = (await cli("inspect", stealPath, "--at", String(request.seq))).out;
    expect(text).toMatch(new RegExp(`^  ${request.id}: a -> b \\(request steal-\\d+, since \\+\\d+\\.\\d{3}s\\)$`, "m"));
    expect(text).toContain("on the run's virtual clock (simulated)");
  });
});
