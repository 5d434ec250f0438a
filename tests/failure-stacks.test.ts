/**
 * A failing task keeps its stack, bounded (20 frames, 4 KB): in the worker's task-erred,
 * in the scheduler's record of it, in the error the future rejects with, and in `story`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { runCli } from "../cli/run.js";
import { readLogSync } from "../log/reader.js";
import type { InputRecord } from "../log/types.js";
import { boundStack, MAX_STACK_CHARS, MAX_STACK_FRAMES } from "../machines/error-stack.js";
import { TaskFailedError } from "../machines/errors.js";
import { PROTOCOL_VERSION, type ErrorInfo } from "../machines/protocol.js";
import { subjects } from "../transport/subjects.js";
import { until } from "./support/until.js";

/** Raises at the bottom of `depth` nested calls, with V8 asked to keep every frame. */
function recurseThenRaise(depth: number): never {
  if (depth > 0) return recurseThenRaise(depth - 1);
  throw new RangeError("bottom of the recursion");
}

const functions = {
  deep: (depth: number) => {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = Infinity;
    try {
      return recurseThenRaise(depth);
    } finally {
      Error.stackTraceLimit = limit;
    }
  },
};

const dir = mkdtempSync(join(tmpdir(), "natsched-stacks-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const path = join(dir, "run.natlog");
let deep: unknown;
let fromThread: unknown;
let deepKey: string;

beforeAll(async () => {
  const cluster = await LocalCluster.start({ workers: 1, functions: [functions, "tests/support/cpu-tasks.mjs"], log: { path }, configFile: false });
  const client = cluster.client();
  const f = client.submit("deep", [500]);
  deepKey = f.key;
  deep = await f.result().catch((e: unknown) => e);
  fromThread = await client.submit("fail", ["raised on an executor thread"]).result().catch((e: unknown) => e);
  await cluster.close();
}, 30_000);

const frames = (stack: string) => stack.split("\n").filter((l) => /^\s+at /.test(l)).length;

describe("a failure's stack", () => {
  it("reaches the future's error, bounded", () => {
    expect(deep).toBeInstanceOf(TaskFailedError);
    const stack = (deep as TaskFailedError).remoteStack!;
    expect(stack.split("\n")[0]).toBe("RangeError: bottom of the recursion");
    expect(stack).toContain("recurseThenRaise");
    expect(frames(stack)).toBe(MAX_STACK_FRAMES);
    expect(stack).toMatch(/\n    \.\.\. \d+ more frames$/);
    expect(stack.length).toBeLessThanOrEqual(MAX_STACK_CHARS);
  });

  it("of a function on an executor thread is the thread's", () => {
    const stack = (fromThread as TaskFailedError).remoteStack!;
    expect(stack.split("\n")[0]).toBe("Error: raised on an executor thread");
    expect(stack).toContain("cpu-tasks.mjs");
  });

  it("is in the worker's task-erred as the scheduler recorded it, and in the worker's own record", () => {
    const inputs = readLogSync(path).records.filter((r): r is InputRecord => r.kind === "input" && r.event.key === deepKey);
    const erred = inputs.find((r) => r.actor === "scheduler" && r.event.op === "task-erred")!;
    const failed = inputs.find((r) => r.actor.startsWith("worker.") && r.event.op === "execute-failed")!;
    expect((erred.event.error as ErrorInfo).stack).toBe((deep as TaskFailedError).remoteStack);
    expect((failed.event.error as ErrorInfo).stack).toBe((deep as TaskFailedError).remoteStack);
  });

  it("shows its first lines in the key's story", async () => {
    const out: string[] = [];
    expect(await runCli(["story", path, deepKey], { out: (t) => out.push(t), err: () => undefined })).toBe(0);
    const text = out.join("\n");
    expect(text).toContain("| RangeError: bottom of the recursion");
    expect(text).toContain("| " + "    at recurseThenRaise");
    // Only the first lines, and once.
    expect(text.match(/\| RangeError/g)).toHaveLength(1);
    expect(text.split("\n").filter((l) => l.includes("|     at ")).length).toBeLessThan(10);
  });

  it("sent longer by a worker of another make, is bounded by the scheduler before it is logged", async () => {
    const cluster = await LocalCluster.start({ workers: 1, functions: { hang: () => new Promise(() => undefined) }, log: { path: join(dir, "foreign.natlog") }, configFile: false });
    const client = cluster.client();
    const f = client.submit("hang", []);
    await until(() => cluster.scheduler.core.taskState(f.key) === "processing.assigned");
    const worker = cluster.workers.get("worker-0")!;
    const ts = cluster.scheduler.core.tasks.get(f.key)!;
    const stack = `Error: elsewhere\n${"    at somewhere (far.py:1)\n".repeat(1000)}`;
    const error: ErrorInfo = { name: "Error", message: "elsewhere", stack };
    const op = { op: "task-erred", worker: "worker-0", id: worker.id, key: f.key, error, attempt: ts.attempt, run: cluster.scheduler.core.run };
    cluster.bus.connect("foreign").publish(subjects(cluster.name).workerOps("worker-0"), { v: PROTOCOL_VERSION, from: "worker.worker-0", ops: [op] });
    const failed = (await f.result().catch((e: unknown) => e)) as TaskFailedError;
    expect(failed.remoteStack).toBe(boundStack(stack));
    await cluster.close();
    const erred = readLogSync(join(dir, "foreign.natlog")).records.find((r): r is InputRecord => r.kind === "input" && r.event.op === "task-erred")!;
    expect((erred.event.error as ErrorInfo).stack).toBe(boundStack(stack));
  });

  it("is cut at 4 KB when its lines are long", () => {
    const long = `Error: ${"x".repeat(10_000)}\n    at f (file.js:1:1)`;
    const bounded = boundStack(long);
    expect(bounded.length).toBeLessThanOrEqual(MAX_STACK_CHARS);
    expect(bounded).toMatch(/cut at 4096 characters\)$/);
  });
});
