/** The executor thread pool on its own: jobs, errors, a thread that dies, stop and close. */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ThreadPool } from "../actors/executor/thread-pool.js";
import { EXECUTOR_THREAD_NAME } from "../actors/executor/thread-source.js";
import { until } from "./support/until.js";

const MODULE = pathToFileURL(resolve("tests/support/cpu-tasks.mjs")).href;
const dir = mkdtempSync(join(tmpdir(), "natsched-pool-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));


describe("ThreadPool", () => {
  it("runs jobs beyond its threads in order, moves a result's buffer back, and rebuilds errors", async () => {
    const pool = new ThreadPool({ size: 1, modules: [MODULE] });
    try {
      const results = await Promise.all([1, 2, 3].map((n) => pool.run(`k${n}`, MODULE, "ramp", [n])));
      expect(results).toEqual([Float64Array.from([0]), Float64Array.from([0, 1]), Float64Array.from([0, 1, 2])]);
      await expect(pool.run("f", MODULE, "fail", ["bad"])).rejects.toMatchObject({ message: "bad", code: "E_TASK" });
      await expect(pool.run("g", MODULE, "makeFunction", [])).rejects.toMatchObject({ name: "DataCloneError" });
      await expect(pool.run("h", MODULE, "nope", [])).rejects.toThrow(/exports no function nope/);
    } finally {
      await pool.close();
    }
  });

  it.runIf(process.platform === "linux")("names its threads natsched-exec, the replacement of a dead one too", async () => {
    const execThreads = () => readdirSync("/proc/self/task").filter((tid) => {
      try {
        return readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim() === EXECUTOR_THREAD_NAME;
      } catch {
        return false;
      }
    });
    const before = new Set(execThreads());
    const pool = new ThreadPool({ size: 2, modules: [MODULE] });
    try {
      await Promise.all([pool.run("a", MODULE, "total", [[1]]), pool.run("b", MODULE, "total", [[2]])]);
      const named = execThreads().filter((tid) => !before.has(tid));
      expect(named).toHaveLength(2);
      await expect(pool.run("x", MODULE, "exitThread", [3])).rejects.toThrow(/exited/);
      expect(await pool.run("y", MODULE, "total", [[1, 2]])).toBe(3);
      await until(() => execThreads().filter((tid) => !before.has(tid)).length === 2 && !named.every((tid) => execThreads().includes(tid)));
    } finally {
      await pool.close();
    }
  });

  it("a thread that exits fails its job and is replaced", async () => {
    const pool = new ThreadPool({ size: 1, modules: [MODULE] });
    try {
      await expect(pool.run("x", MODULE, "exitThread", [3])).rejects.toThrow(/exited \(code 3\)/);
      expect(await pool.run("y", MODULE, "total", [[1, 2]])).toBe(3);
    } finally {
      await pool.close();
    }
  });

  it("stop(key) terminates the thread running that job and a new one takes the next; close rejects what is left", async () => {
    const pool = new ThreadPool({ size: 1, modules: [MODULE] });
    const started = join(dir, "started");
    const running = pool.run("busy", MODULE, "spinUntil", [join(dir, "never"), started, 60_000]);
    const queued = pool.run("queued", MODULE, "total", [[4, 5]]);
    await until(() => existsSync(started));
    expect(pool.busy).toBe(1);
    expect(pool.stop("busy", new Error("stopped"))).toBe(true);
    await expect(running).rejects.toThrow("stopped");
    expect(await queued).toBe(9);
    expect(pool.stop("busy", new Error("again"))).toBe(false);
    const late = expect(pool.run("late", MODULE, "spin", [60_000])).rejects.toMatchObject({ code: "CLOSED" });
    await pool.close();
    await late;
    await expect(pool.run("after", MODULE, "total", [[1]])).rejects.toMatchObject({ code: "CLOSED" });
  });
});
