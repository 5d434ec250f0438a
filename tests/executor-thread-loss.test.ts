/**
 * An executor thread that dies under its task (past config.executorThreadMemory, process.exit,
 * an uncaught error in a timer) takes down only that thread: the worker and its other tasks go
 * on, and the scheduler counts the loss like a worker death for that task (allowedFailures,
 * then KilledWorker). Embedded (LocalCluster); no timings: tasks wait on files.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../index.js";
import { replay } from "../replay/replay.js";
import { readLogSync } from "../log/index.js";
import { until } from "./support/until.js";

const TASKS = "tests/support/cpu-tasks.mjs";
const dir = mkdtempSync(join(tmpdir(), "natsched-thread-loss-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));


async function cluster(allowedFailures: number, logPath?: string): Promise<LocalCluster> {
  return LocalCluster.start({
    workers: 1,
    threadsPerWorker: 2,
    functions: TASKS,
    config: { allowedFailures, executorThreadMemory: 32 * 2 ** 20 },
    log: logPath !== undefined ? { path: logPath } : false,
    configFile: false,
  });
}

describe("a lost executor thread", () => {
  it("with allowedFailures 0: a task past the thread's heap limit, one that exits and one that throws in a timer fail with KilledWorker; the worker's other task goes on", async () => {
    const run = mkdtempSync(join(dir, "zero-"));
    const release = join(run, "release");
    const c = await cluster(0);
    try {
      const client = c.client();
      const worker = c.workers.get("worker-0")!;
      const kept = client.submit<string>("spinUntil", [release, join(run, "kept-started")], { pure: false });
      await until(() => existsSync(join(run, "kept-started")));
      for (const [func, args] of [["hog", []], ["exitThread", [2]], ["throwLater", ["late"]]] as const) {
        await expect(client.submit(func, [...args], { pure: false }).result(), func).rejects.toMatchObject({
          code: "TASK_FAILED",
          message: expect.stringMatching(/died each time \(last: a thread of worker-0/),
        });
      }
      expect(c.workers.get("worker-0")).toBe(worker);
      expect(worker.pool!.busy).toBe(1);
      writeFileSync(release, "");
      expect(await kept.result()).toBe("released");
      expect(await client.submit("total", [[1, 2, 3]]).result()).toBe(6);
    } finally {
      writeFileSync(release, "");
      await c.close();
    }
  });

  it("with allowedFailures 1: a task whose thread died once is run again and succeeds; one that kills every thread fails after two; the log replays", async () => {
    const run = mkdtempSync(join(dir, "one-"));
    const path = join(run, "loss.natlog");
    const c = await cluster(1, path);
    try {
      const client = c.client();
      const marker = join(run, "exited-once");
      expect(await client.submit("exitOnce", [marker], { pure: false }).result()).toBe("second run");
      expect(existsSync(marker)).toBe(true);
      await expect(client.submit("hog", [], { pure: false }).result()).rejects.toMatchObject({
        code: "TASK_FAILED",
        message: expect.stringMatching(/run task \S+ 2 times/),
      });
      expect(await client.submit("total", [[4, 5]]).result()).toBe(9);
    } finally {
      await c.close();
    }
    const result = await replay(path);
    expect(result.ok).toBe(true);
    const whys = readLogSync(path).records.flatMap((r) => (r.kind === "transition" && r.why !== undefined ? [r.why] : []));
    expect(whys).toContainEqual({ rule: "executor-lost", worker: "worker-0" });
    expect(whys).toContainEqual({ rule: "killed-worker", worker: "worker-0", suspicious: 2 });
  });

  it("a task's own error carrying the code EXECUTOR_LOST is its own error, not a lost thread", async () => {
    const c = await cluster(3);
    try {
      const client = c.client();
      const error = await client.submit("failWithCode", ["EXECUTOR_LOST"], { pure: false }).result().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "TASK_FAILED", message: expect.stringMatching(/posing/) });
    } finally {
      await c.close();
    }
  });
});
