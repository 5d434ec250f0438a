/**
 * Causes in the log and in stories, on the embedded cluster: a recorded incident (a killed
 * worker whose result is recomputed, a failing task, a client leaving, a steal), each story
 * step saying what caused it; every message a worker took naming the scheduler's stimulus
 * that sent it; the log still replaying clean. And an old log (no causes) still tells why.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { openLog, readLogSync } from "../log/reader.js";
import type { InputRecord, LogRecord, TransitionRecord } from "../log/types.js";
import { replay } from "../replay/replay.js";
import { clientReportProblem, schedulerOpProblem, workerOpProblem } from "../actors/validate-ops.js";
import { storyLines } from "../tools/story.js";
import { addCauses, recordsSource, type CausedStoryLine } from "../tools/story-causes.js";
import { causeId } from "../log/cause-id.js";
import { appendOp } from "../actors/host/op-batch.js";
import { REPO_ROOT } from "./support/natsched-process.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-causes-"));
const path = join(dir, "incident.natlog");
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
let records: LogRecord[];
let leaver = "";
let keeper = "";
let stolen: string[] = [];

beforeAll(async () => {
  const cluster = await LocalCluster.start({
    workers: [{ name: "a" }, { name: "b" }, { name: "c" }],
    functions: {
      inc: (x: number) => x + 1,
      boom: () => {
        throw new Error("boom");
      },
      slow: async (x: number) => {
        await sleep(40);
        return x;
      },
    },
    executor: "loop",
    log: { path },
    configFile: false,
  });
  const client = cluster.client();
  keeper = client.id;
  // x is made on c, which is killed: its result is gone, and y needs it.
  const x = client.submit("inc", [1], { key: "x", workers: "c", allowOtherWorkers: true });
  await x.result();
  cluster.killWorker("c");
  expect(await client.submit("inc", [x], { key: "y" }).result()).toBe(3);
  await expect(client.submit("boom", [], { key: "bad" }).result()).rejects.toThrow(/boom/);
  const other = cluster.client();
  leaver = other.id;
  await other.submit("slow", [5], { key: "z" }).result();
  await other.close();
  // Slow tasks pinned on a (a preference), b idle: stealing moves some to b.
  const pinned = client.map("slow", Array.from({ length: 12 }, (_, i) => i), { workers: "a", allowOtherWorkers: true });
  await Promise.all(pinned.map((f) => f.result()));
  await cluster.close();
  records = readLogSync(path).records;
  stolen = records.filter((r): r is TransitionRecord => r.kind === "transition" && r.event === "STEAL_CONFIRM").map((r) => r.id);
}, 30_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function story(key: string): Promise<CausedStoryLine[]> {
  const reader = await openLog(path);
  const mine: LogRecord[] = [];
  for await (const r of reader.records({ key })) mine.push(r);
  return addCauses(storyLines(mine, key), mine, key, reader);
}

const causes = (lines: CausedStoryLine[], actor: string, text: RegExp) => lines.filter((l) => l.actor === actor && l.text.match(text)).map((l) => l.cause);

describe("story causes on the embedded cluster", () => {
  it("a result lost with a killed worker: the loss and the recomputation, on the scheduler and on the worker that ran it again", async () => {
    const lines = await story("x");
    expect(causes(lines, "scheduler", /memory -> released/)).toEqual([expect.stringMatching(/^result lost: worker c \(killed\)  \[scheduler:\d+\]$/), expect.stringMatching(/^released: client .* left/)]);
    expect(causes(lines, "scheduler", /released -> processing/)).toEqual([expect.stringMatching(/^processing: client .* submitted it/), expect.stringMatching(/^recomputed: its result was lost with worker c \(killed\)/)]);
    const redo = causes(lines, "worker.a", /released -> ready/);
    expect(redo).toEqual([expect.stringMatching(/^recomputed: its result was lost with worker c \(killed\)  \[worker\.a:\d+ <- scheduler:\d+\]$/)]);
    // The worker's compute-task input names the scheduler's worker-lost input that sent it.
    const lost = records.find((r): r is InputRecord => r.kind === "input" && r.event.op === "worker-lost")!;
    expect(causes(lines, "worker.a", /input compute-task/)).toEqual([`sent by scheduler for: worker c was lost (killed)  [scheduler:${lost.seq}]`]);
  });

  it("the client's side: the report that brought the result and the error to the client that waited for it", async () => {
    const reported = (await story("y")).filter((l) => l.actor.startsWith("client.") && l.text.startsWith("input reports"));
    expect(reported.map((l) => l.text)).toEqual([expect.stringMatching(/^input reports: key-in-memory/)]);
    const erred = (await story("bad")).filter((l) => l.actor.startsWith("client.") && l.text.startsWith("input reports"));
    expect(erred.map((l) => l.text)).toEqual([expect.stringMatching(/^input reports: key-erred.*boom/)]);
  });

  it("a failing task: erred on the worker and on the scheduler, with the error and the worker", async () => {
    const lines = await story("bad");
    expect(causes(lines, "scheduler", /-> erred/)).toEqual([expect.stringMatching(/^erred: it failed on worker [ab]: Error: boom  \[scheduler:\d+\]$/)]);
    expect(causes(lines, /* the worker that ran it */ lines.find((l) => l.text.includes("-> error"))!.actor, /-> error/)).toEqual([expect.stringMatching(/^erred: it failed: Error: boom/)]);
  });

  it("a client leaving: its task released and forgotten on the scheduler, freed on the worker, each saying the client left", async () => {
    const lines = await story("z");
    const released = lines.filter((l) => /-> (released|forgotten)/.test(l.text));
    expect(released.length).toBe(3);
    for (const line of released) expect(line.cause).toMatch(new RegExp(`^released: client ${leaver} left  \\[`));
    expect(released.find((l) => l.actor.startsWith("worker."))!.cause).toMatch(/\[worker\.\w+:\d+ <- scheduler:\d+\]$/);
    // The cause is shown first under its line.
    expect(released[0]!.reasons?.[0]).toBe(released[0]!.cause);
  });

  it("a steal: requested by a stealing pass, confirmed by the victim, and the thief's run names the steal", async () => {
    expect(stolen.length).toBeGreaterThan(0);
    const lines = await story(stolen[0]!);
    expect(causes(lines, "scheduler", /\(STEAL\)/)).toEqual([expect.stringMatching(/^steal requested from a to b: a work-stealing pass/)]);
    expect(causes(lines, "scheduler", /STEAL_CONFIRM/)).toEqual([expect.stringMatching(/^stolen from a to b: worker a gave it up \((ready|waiting) there\)/)]);
    expect(causes(lines, "worker.a", /\(STEAL\)/)).toEqual([expect.stringMatching(/^given up to a steal: .*a work-stealing pass/)]);
    expect(causes(lines, "worker.b", /released -> ready/)).toEqual([expect.stringMatching(/^stolen from a to b: the scheduler assigned it: worker a gave it up/)]);
  });

  it("every op a worker took from the scheduler names a scheduler input, after which the scheduler made the move it carries", () => {
    const scheduler = new Map<number, LogRecord>();
    for (const r of records) if (r.actor === "scheduler") scheduler.set(r.seq, r);
    const computeTasks = records.filter((r): r is InputRecord => r.kind === "input" && r.actor.startsWith("worker.") && r.event.op === "compute-task");
    expect(computeTasks.length).toBeGreaterThan(15);
    for (const input of computeTasks) {
      const id = causeId(input)!;
      expect(id).toBe(`scheduler:${String(input.event.cause)}`);
      const seq = Number(input.event.cause);
      const stimulus = scheduler.get(seq);
      expect(stimulus?.kind).toBe("input");
      // Between that input and the scheduler's next one: the key assigned (or stolen) to this worker.
      const moves: TransitionRecord[] = [];
      for (let s = seq + 1; scheduler.get(s)?.kind === "transition"; s++) moves.push(scheduler.get(s) as TransitionRecord);
      const worker = input.actor.slice("worker.".length);
      expect(moves.some((m) => m.id === input.event.key && m.to.startsWith("processing") && (m.why as { worker?: string; thief?: string } | undefined)?.[m.event === "STEAL_CONFIRM" ? "thief" : "worker"] === worker)).toBe(true);
    }
    // Worker inputs that are not messages (execute-done, ...) name no cause; the scheduler's
    // task-finished names the worker's execute-done of the key.
    const inputs = new Map<string, InputRecord>();
    for (const r of records) if (r.kind === "input") inputs.set(`${r.actor}:${r.seq}`, r);
    expect(records.some((r) => r.kind === "input" && r.event.op === "execute-done" && r.event.cause !== undefined)).toBe(false);
    for (const r of records) {
      if (r.kind !== "input" || r.event.op !== "task-finished") continue;
      expect(causeId(r)).toMatch(/^worker\.[abc]:\d+$/);
      expect(inputs.get(causeId(r)!)?.event).toMatchObject({ op: "execute-done", key: r.event.key });
    }
    expect(keeper).not.toBe(leaver);
  });

  it("the log with causes replays clean", async () => {
    const result = await replay(path);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    // The clients are logged actors too (client.<id>), verified like the others.
    expect(Object.keys(result.actors).filter((a) => !a.startsWith("client.")).sort()).toEqual(["scheduler", "worker.a", "worker.b", "worker.c"]);
    expect(Object.keys(result.actors).filter((a) => a.startsWith("client.")).length).toBeGreaterThan(0);
  });
});

describe("story causes in an old log (written before causes)", () => {
  it("still names each transition's stimulus (the rule needs no new field); messages have no sender's cause", async () => {
    const old = readLogSync(join(REPO_ROOT, "tests", "fixtures", "logs", "old-98e2957.natlog")).records;
    const key = old.find((r): r is TransitionRecord => r.kind === "transition" && r.machine === "task" && r.to === "memory")!.id;
    const mine = old.filter((r) => (r.kind === "transition" && r.id === key) || (r.kind === "input" && JSON.stringify(r.event).includes(JSON.stringify(key))));
    const lines = await addCauses(storyLines(mine, key), mine, key, recordsSource(old));
    const transitions = lines.filter((l) => / -> /.test(l.text));
    expect(transitions.length).toBeGreaterThan(0);
    for (const line of transitions) expect(line.cause).toMatch(/\[\S+:\d+\]$/);
    expect(lines.some((l) => l.cause?.includes("<-"))).toBe(false);
  });
});

describe("cause on the wire", () => {
  it("is optional on every op; one that is not a short string makes the op malformed", () => {
    const finished = { op: "task-finished", worker: "a", id: "a-1", key: "x", nbytes: 8, start: 0, stop: 1 };
    expect(schedulerOpProblem(finished)).toBeUndefined();
    expect(schedulerOpProblem({ ...finished, cause: 7 })).toBeUndefined();
    expect(schedulerOpProblem({ ...finished, cause: "worker.a:7" })).toBe("task-finished: bad or missing cause");
    expect(workerOpProblem({ op: "free-keys", keys: ["x"], cause: -1 })).toBe("free-keys: bad or missing cause");
    expect(workerOpProblem({ op: "free-keys", keys: ["x"], cause: 1.5 })).toBe("free-keys: bad or missing cause");
    expect(clientReportProblem({ op: "key-cancelled", key: "x", reason: "gone", cause: null })).toBe("key-cancelled: bad or missing cause");
    expect(clientReportProblem({ op: "key-cancelled", key: "x", reason: "gone", cause: 3 })).toBeUndefined();
  });

  it("free-keys of one stimulus join in a batch; of two, they stay apart so each key keeps its cause", () => {
    const ops: object[] = [];
    appendOp(ops, { op: "free-keys", keys: ["a"], run: 1, attempt: 3, cause: 7 });
    appendOp(ops, { op: "free-keys", keys: ["b"], run: 1, attempt: 3, cause: 7 });
    appendOp(ops, { op: "free-keys", keys: ["c"], run: 1, attempt: 3, cause: 9 });
    expect(ops).toEqual([
      { op: "free-keys", keys: ["a", "b"], run: 1, attempt: 3, cause: 7 },
      { op: "free-keys", keys: ["c"], run: 1, attempt: 3, cause: 9 },
    ]);
  });

  it("names the sender's input: the scheduler's to a worker or client, the named worker's or client's to the scheduler", () => {
    const input = (actor: string, event: Record<string, unknown>): InputRecord => ({ actor, seq: 9, t: 0, kind: "input", event: { op: "x", ...event } });
    expect(causeId(input("worker.a", { op: "compute-task", cause: 4 }))).toBe("scheduler:4");
    expect(causeId(input("client.c1", { op: "key-in-memory", cause: 0 }))).toBe("scheduler:0");
    expect(causeId(input("scheduler", { op: "task-finished", worker: "a", cause: 12 }))).toBe("worker.a:12");
    expect(causeId(input("scheduler", { op: "unregister-worker", name: "b", cause: 3 }))).toBe("worker.b:3");
    expect(causeId(input("scheduler", { op: "update-graph", client: "c1", cause: 5 }))).toBe("client.c1:5");
    expect(causeId(input("scheduler", { op: "worker-lost", name: "b", reason: "killed" }))).toBeUndefined();
    expect(causeId(input("scheduler", { op: "balance", cause: 5 }))).toBeUndefined();
  });
});
