/**
 * The event log of a real run on LocalCluster, read back from the file: complete, in
 * order, and enough to re-run every actor's machines and get the same transitions.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { replay } from "../replay/replay.js";
import { LocalCluster, type Future } from "../index.js";
import { readSchedulerStart, readWorkerStart, serializableConfig } from "../log/start-init.js";
import { readClientStart } from "../log/client-start.js";
import { ClientCore } from "../machines/client/core.js";
import type { ClientInput } from "../machines/client/inputs.js";
import { CONFIG_KEYS, resolveConfig } from "../machines/config.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput } from "../machines/scheduler/inputs.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInit, WorkerInput } from "../machines/worker/inputs.js";
import { readLogSync } from "../log/index.js";
import type { InputRecord, LogRecord, StartRecord, TransitionRecord } from "../log/types.js";
import type { Why } from "../machines/reasons.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-log-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const functions = {
  inc: (x: number) => x + 1,
  add: (a: number, b: number) => a + b,
  sum: (xs: number[]) => xs.reduce((a, b) => a + b, 0),
  slow: async (x: number) => {
    await sleep(2);
    return x;
  },
  boom: () => {
    throw new Error("boom");
  },
};

function byActor(records: LogRecord[]): Map<string, LogRecord[]> {
  const out = new Map<string, LogRecord[]>();
  for (const r of records) {
    let list = out.get(r.actor);
    if (list === undefined) out.set(r.actor, (list = []));
    list.push(r);
  }
  return out;
}

const isTransition = (r: LogRecord): r is TransitionRecord => r.kind === "transition";

/** A machine instance's transitions in one actor, checked to chain (each starts where the last ended). */
function story(records: LogRecord[], actor: string, machine: string, id: string): string[] {
  const ts = records.filter((r): r is TransitionRecord => isTransition(r) && r.actor === actor && r.machine === machine && r.id === id);
  for (let i = 1; i < ts.length; i++) expect(`${id}: ${ts[i]!.from}`).toBe(`${id}: ${ts[i - 1]!.to}`);
  return ts.length === 0 ? [] : [ts[0]!.from, ...ts.map((t) => t.to)];
}

function compact(t: { machine: string; id: string; event: string; from: string; to: string; why?: unknown }): string {
  return JSON.stringify([t.machine, t.id, t.event, t.from, t.to, t.why === undefined ? null : t.why]);
}

/**
 * Re-runs one actor's core from its recorded start and inputs, and checks that the
 * transitions each input produces are exactly the transitions recorded right after it
 * (before the actor's next input).
 */
function replayActor(records: LogRecord[]): { transitions: number; mismatches: { cause: string; recorded: string[]; replayed: string[] }[] } {
  const start = records[0] as StartRecord;
  expect(start.kind).toBe("start");
  let produced: string[] = [];
  const transition = (machine: string, id: string, event: string, from: string, to: string, why?: Why) =>
    produced.push(compact({ machine, id, event, from, to, why: why === undefined ? undefined : JSON.parse(JSON.stringify(why)) }));
  // Only recorded inputs drive the replay: the lifecycle too must be an input (for the
  // scheduler, its "scheduler-start"/"scheduler-close" stimuli).
  let feed: (r: InputRecord) => void;
  if (start.role === "scheduler") {
    const core = new SchedulerCore(readSchedulerStart(start.init).config, { toWorker: () => undefined, toClient: () => undefined, transition });
    feed = (r) => void core.handle(r.event as unknown as SchedulerInput);
  } else if (start.role === "client") {
    // The client's core takes milliseconds; its records, seconds (actors/client-recording.ts).
    const core = new ClientCore(readClientStart(start.init), { transition });
    feed = (r) => void core.handle({ ...r.event, t: r.t * 1000 } as unknown as ClientInput);
  } else {
    expect(start.role).toBe("worker");
    const core = new WorkerCore(readWorkerStart(start.init), { toScheduler: () => undefined, execute: () => undefined, gather: () => undefined, freeData: () => undefined, transition });
    feed = (r) => core.handle(r.event as unknown as WorkerInput);
  }
  let expected: string[] = [];
  let cause = `start of ${start.actor}`;
  let total = 0;
  const mismatches: { cause: string; recorded: string[]; replayed: string[] }[] = [];
  const settle = () => {
    if (JSON.stringify(expected) !== JSON.stringify(produced)) mismatches.push({ cause, recorded: expected, replayed: produced });
    total += expected.length;
    expected = [];
    produced = [];
  };
  for (const r of records.slice(1)) {
    if (r.kind === "transition") {
      expected.push(compact(r));
    } else if (r.kind === "input") {
      settle();
      cause = `${r.actor} input #${r.seq} ${r.event.op}`;
      feed(r);
    } else if (r.kind === "stop") {
      settle();
      // Nothing may follow an actor's stop record.
      cause = `${r.actor} after stop #${r.seq}`;
    }
  }
  settle();
  return { transitions: total, mismatches };
}

describe("event log of a run", () => {
  it("no problems, no gaps, every task's story from released to memory, inputs before what they caused", async () => {
    const path = join(dir, "run.natlog");
    const cluster = await LocalCluster.start({
      workers: [
        { name: "a", nthreads: 1 },
        { name: "b", nthreads: 2 },
      ],
      functions,
      log: { path },
      configFile: false,
      config: { workerSaturation: 2, allowedFailures: 2 },
    });
    expect(cluster.logPath).toBe(path);
    const client = cluster.client();
    const x = client.submit<number>("inc", [1], { workers: ["a"] });
    const y = client.submit<number>("add", [x, 10], { workers: ["b"] });
    const zs = client.map<number>("inc", [1, 2, 3, 4, 5]);
    const total = client.submit<number>("sum", [zs]);
    expect(await y.result()).toBe(12);
    expect(await total.result()).toBe(20);
    const keys = [x, y, ...zs, total].map((f: Future) => f.key);

    // While the futures are held, every task's story ends in memory.
    await cluster.flush();
    await cluster.log!.flush();
    const mid = readLogSync(path);
    expect(mid.problems).toEqual([]);
    for (const key of keys) {
      const s = story(mid.records, "scheduler", "task", key);
      expect(s[0]).toBe("released");
      expect(s[s.length - 1]).toBe("memory");
      expect(s).toContain("processing.assigned");
      const workerActors = [...new Set(mid.records.filter((r) => isTransition(r) && r.machine === "wtask" && r.id === key).map((r) => r.actor))];
      expect(workerActors.length).toBeGreaterThan(0);
      let computedOn = 0;
      for (const actor of workerActors) {
        const ws = story(mid.records, actor, "wtask", key);
        expect(ws[0]).toBe("released");
        expect(ws[ws.length - 1]).toBe("memory");
        if (ws.includes("executing")) computedOn++;
      }
      expect(computedOn).toBe(1);
    }
    // x was computed on a and fetched by b.
    expect(story(mid.records, "worker.a", "wtask", x.key)).toEqual(["released", "ready", "executing", "memory"]);
    expect(story(mid.records, "worker.b", "wtask", x.key)).toEqual(["released", "fetch", "flight", "memory"]);

    const aId = cluster.workers.get("a")!.id;
    await cluster.close();
    const { header, records, problems } = readLogSync(path);
    expect(problems).toEqual([]);
    expect(header).toBeTruthy();
    const actors = byActor(records);
    expect([...actors.keys()].sort()).toEqual([`client.${client.id}`, "scheduler", "worker.a", "worker.b"]);

    for (const [actor, list] of actors) {
      // Sequence numbers: 0, 1, 2, ... without gaps, in file order.
      expect({ actor, seqs: list.map((r) => r.seq) }).toEqual({ actor, seqs: list.map((_, i) => i) });
      expect(list[0]!.kind).toBe("start");
      expect(list[list.length - 1]!.kind).toBe("stop");
      expect(list.filter((r) => r.kind === "start")).toHaveLength(1);
      expect(list.filter((r) => r.kind === "stop")).toHaveLength(1);
      // Every transition follows an input (or the start) of the same actor and carries its time.
      let lastCause: LogRecord | undefined;
      for (const r of list) {
        if (r.kind === "input" || r.kind === "start") lastCause = r;
        if (r.kind !== "transition") continue;
        expect(lastCause).toBeDefined();
        expect(r.seq).toBeGreaterThan(lastCause!.seq);
        expect(r.t).toBe(lastCause!.t);
      }
      // Time never goes backwards within an actor.
      for (let i = 1; i < list.length; i++) expect(list[i]!.t).toBeGreaterThanOrEqual(list[i - 1]!.t);
    }

    // The scheduler's start record carries the config, all of it.
    const schedStart = actors.get("scheduler")![0] as StartRecord;
    expect(schedStart.role).toBe("scheduler");
    expect(schedStart.init.config).toEqual(serializableConfig(cluster.config));
    expect(Object.keys(schedStart.init.config as object).sort()).toEqual([...CONFIG_KEYS].sort());
    expect(schedStart.init.config).toMatchObject({ workerSaturation: 2, allowedFailures: 2 });
    expect(resolveConfig(schedStart.init.config)).toEqual(cluster.config);
    // Workers' start records carry what rebuilds them.
    const aStart = actors.get("worker.a")![0] as StartRecord;
    expect(aStart.role).toBe("worker");
    expect(aStart.init).toMatchObject({ name: "a", id: aId, nthreads: 1, transferIncomingCountLimit: cluster.config.transferIncomingCountLimit });
    expect((actors.get("worker.b")![0] as StartRecord).init).toMatchObject({ name: "b", nthreads: 2 });

    // After close, released keys were freed and forgotten on the scheduler.
    for (const key of keys) {
      const s = story(records, "scheduler", "task", key);
      expect(s[s.length - 1]).toBe("forgotten");
    }
  });

  it("the recorded inputs re-run every actor's machines to the same transitions (inputs precede what they cause)", async () => {
    const path = join(dir, "replay.natlog");
    const cluster = await LocalCluster.start({ workers: 3, threadsPerWorker: 2, functions, log: { path }, configFile: false });
    const client = cluster.client();
    const xs = client.map<number>("slow", Array.from({ length: 12 }, (_, i) => i));
    const ys = xs.map((x) => client.submit<number>("inc", [x]));
    const bad = client.submit("boom", []);
    const after = client.submit("inc", [bad]);
    await xs[2]!.wait();
    cluster.killWorker("worker-1");
    expect(await client.gather(ys)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    await after.wait();
    const [s] = await client.scatter([41], { workers: ["worker-2"] });
    expect(await client.submit("inc", [s]).result()).toBe(42);
    for (const f of xs) f.release();
    await cluster.close();

    const { records, problems } = readLogSync(path);
    expect(problems).toEqual([]);
    let replayed = 0;
    const mismatches: unknown[] = [];
    const actors = byActor(records);
    expect(actors.size).toBe(5);
    for (const [, list] of actors) {
      const result = replayActor(list);
      replayed += result.transitions;
      mismatches.push(...result.mismatches);
    }
    expect(mismatches).toEqual([]);
    expect(replayed).toBe(records.filter(isTransition).length);
    // The log saw the failure and the kill.
    expect(records.some((r) => r.kind === "input" && r.actor === "scheduler" && r.event.op === "worker-lost")).toBe(true);
    expect(records.some((r) => isTransition(r) && r.machine === "task" && r.id === bad.key && r.to === "erred")).toBe(true);
  });

  it("a worker name re-used after a kill continues its actor's sequence, and the log replays", async () => {
    const path = join(dir, "reincarnation.natlog");
    const cluster = await LocalCluster.start({ workers: 2, functions, log: { path }, configFile: false });
    const client = cluster.client();
    expect(await client.gather(client.map<number>("inc", [1, 2, 3, 4]))).toEqual([2, 3, 4, 5]);
    cluster.killWorker("worker-1");
    await cluster.addWorker({ name: "worker-1" });
    expect(await client.submit("inc", [10], { workers: ["worker-1"] }).result()).toBe(11);
    await cluster.close();

    const { records, problems } = readLogSync(path);
    expect(problems).toEqual([]);
    const worker1 = records.filter((r) => r.actor === "worker.worker-1");
    expect(worker1.map((r) => r.seq)).toEqual(worker1.map((_, i) => i));
    expect(worker1.filter((r) => r.kind === "start")).toHaveLength(2);
    const result = await replay(path);
    expect(result.ok).toBe(true);
  });
});
