/** `natsched scheduler|worker --log-level`: progress and membership lines at info, none at warn (real processes on a real nats-server). */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { NatsServer } from "./support/nats-server.js";
import { until } from "./support/until.js";

const ROOT = join(import.meta.dirname, "..");
let server: NatsServer;
const children: ChildProcess[] = [];

function natsched(args: string[]): { child: ChildProcess; out: () => string } {
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "cli/main.ts"), ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let text = "";
  child.stdout!.on("data", (d: Buffer) => (text += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (text += d.toString()));
  return { child, out: () => text };
}

beforeAll(async () => {
  server = await NatsServer.start();
});
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await server?.dispose();
});

async function run(cluster: string, level: string) {
  const common = ["--nats", server.url, "--cluster", cluster, "--log-level", level, "--progress-every", "0.2"];
  const scheduler = natsched(["scheduler", ...common, "--no-log"]);
  await until(() => scheduler.out().includes("natsched scheduler: cluster"), 30_000, "scheduler start");
  const worker = natsched(["worker", ...common, "--name", "w", "--functions", join(ROOT, "tests/support/cluster-tasks.ts"), "--executor", "loop"]);
  await until(() => worker.out().includes("registered with cluster"), 30_000, "worker start");
  const client = await connectClient({ servers: server.url, cluster });
  try {
    expect(await client.gather(client.map("inc", [1, 2, 3]))).toEqual([2, 3, 4]);
    await expect(client.submit("fail", ["x"]).result()).rejects.toThrow("x");
  } finally {
    await client.close();
  }
  return { scheduler, worker };
}

describe("--log-level of the processes", () => {
  it("info: the scheduler reports the worker joining and its progress; the worker its own", async () => {
    const { scheduler, worker } = await run("level-info", "info");
    await until(() => /progress: 3 tasks done, 1 erred/.test(scheduler.out()) && /progress: 3 tasks done, 1 erred/.test(worker.out()), 20_000, "progress lines");
    expect(scheduler.out()).toMatch(/natsched scheduler: .*\bw\b.*joined|joined.*\bw\b/);
    expect(scheduler.out()).toMatch(/natsched scheduler: progress: 3 tasks done, 1 erred; now 0 processing, 0 queued, 0 waiting, \d+ in memory; 1 workers \(1 threads\)/);
    expect(worker.out()).toMatch(/natsched worker w: progress: 3 tasks done, 1 erred; now 0 executing \(1 threads\)/);
  }, 60_000);

  it("warn: only the start and stop lines, no membership or progress", async () => {
    const { scheduler, worker } = await run("level-warn", "warn");
    // Progress would have been printed every 0.2 s: give it a second to (not) appear.
    await new Promise((r) => setTimeout(r, 1000));
    expect(scheduler.out()).not.toContain("progress:");
    expect(scheduler.out()).not.toContain("joined");
    expect(worker.out()).not.toContain("progress:");
  }, 60_000);

  it("refuses an unknown level (exit 1, as every refused flag value)", async () => {
    const bad = natsched(["scheduler", "--nats", server.url, "--log-level", "loud"]);
    const code = await new Promise<number | null>((resolve) => bad.child.once("exit", resolve));
    expect(code).toBe(1);
    expect(bad.out()).toContain("option log-level: one of error, warn, info, debug");
  }, 30_000);
});
