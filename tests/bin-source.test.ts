/**
 * `natsched` as a clone runs it (bin/natsched.mjs: the TypeScript sources through tsx's API):
 * a worker process whose functions are a `.ts` module runs them on its executor threads.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { NatsServer } from "./support/nats-server.js";

const ROOT = join(import.meta.dirname, "..");
const CLUSTER = "bin-source";
let server: NatsServer;
let scheduler: SchedulerProcess;
let worker: ChildProcess;

beforeAll(async () => {
  server = await NatsServer.start();
  scheduler = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, log: false, configFile: false });
  worker = spawn(process.execPath, [join(ROOT, "bin/natsched.mjs"), "worker", "--nats", server.url, "--cluster", CLUSTER, "--name", "w", "--functions", join(ROOT, "tests/support/cluster-tasks.ts")], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const seen = (d: Buffer) => {
      out += d.toString();
      if (/registered with cluster/.test(out)) resolve();
    };
    worker.stdout!.on("data", seen);
    worker.stderr!.on("data", seen);
    worker.once("exit", (code) => reject(new Error(`worker exited ${code}: ${out}`)));
  });
}, 60_000);

afterAll(async () => {
  worker?.kill("SIGTERM");
  await scheduler?.close();
  await server?.dispose();
});

describe("bin/natsched.mjs from a clone", () => {
  it("runs a .ts module's functions on the worker's executor threads", async () => {
    const client = await connectClient({ servers: server.url, cluster: CLUSTER });
    try {
      expect(await client.submit("inc", [41]).result({ timeout: 20_000 })).toBe(42);
      expect(await client.gather(client.map("double", [1, 2, 3]))).toEqual([2, 4, 6]);
    } finally {
      await client.close();
    }
  }, 30_000);
});
