/**
 * A worker process killed with SIGKILL, with workerTtl at Dask's default (300 s): the
 * scheduler notices within seconds that nobody serves the worker's subjects any more, as
 * Dask notices a closed comm, and reschedules its work.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { unreachableWindow } from "../actors/host/liveness.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { DEFAULT_CONFIG } from "../machines/config.js";
import { readLogSync } from "../log/reader.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "loss";
const FUNCTIONS = join(REPO_ROOT, "tests", "support", "cluster-tasks.ts");
let server: NatsServer;
let dir: string;
let scheduler: SchedulerProcess;
const workers = new Map<string, NatschedProcess>();
let client: Client;

beforeAll(async () => {
  server = await NatsServer.start();
  dir = mkdtempSync(join(tmpdir(), "natsched-loss-"));
  scheduler = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, log: join(dir, "scheduler.natlog"), configFile: false });
  for (const name of ["w1", "w2"]) {
    workers.set(name, NatschedProcess.spawn(name, ["worker", "--nats", server.url, "--cluster", CLUSTER, "--name", name, "--nthreads", "2", "--functions", FUNCTIONS]));
  }
  await Promise.all([...workers.values()].map((w) => w.waitFor(/registered/)));
  client = await connectClient({ servers: server.url, cluster: CLUSTER });
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await Promise.all([...workers.values()].map((w) => w.stop("SIGKILL")));
  await scheduler?.close();
  await server?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function until(check: () => boolean, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const running = () => scheduler.actor.core.running.map((w) => w.name).sort();

describe("failure detection on NATS", () => {
  it("keeps both workers through a nats-server restart", async () => {
    await server.restart();
    await new Promise((resolve) => setTimeout(resolve, 2 * unreachableWindow(DEFAULT_CONFIG.heartbeatInterval) * 1000));
    expect(running()).toEqual(["w1", "w2"]);
    expect(await client.submit("inc", [1], { pure: false }).result({ timeout: 10_000 })).toBe(2);
  }, 30_000);

  it("notices a SIGKILLed worker long before workerTtl and recomputes its work", async () => {
    expect(scheduler.actor.core.config.workerTtl).toBe(300);
    const futures = client.map<number>("slowInc", Array.from({ length: 40 }, (_, i) => i), { pure: false });
    await futures[3]!.wait();
    expect(await workers.get("w1")!.stop("SIGKILL")).toBe(-1);
    const killed = Date.now();
    await until(() => !running().includes("w1"), "w1 to be declared lost", 15_000);
    const seconds = (Date.now() - killed) / 1000;
    expect(seconds).toBeLessThan(15);
    expect(await client.gather(futures, { timeout: 20_000 })).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(running()).toEqual(["w2"]);

    await scheduler.log!.flush();
    const lost = readLogSync(join(dir, "scheduler.natlog")).records.filter((r) => r.kind === "input" && r.event.op === "worker-lost");
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ event: { name: "w1", reason: expect.stringMatching(/^connection gone: no message for [\d.]+s and nobody serving its subject for [\d.]+s$/) } });
  }, 40_000);
});
