/**
 * Module functions on executor threads in worker processes on NATS (`natsched worker
 * --functions tests/support/cpu-tasks.mjs --nthreads 2`): parallel by overlap, data across
 * threads and processes, a worker that answers while every thread is busy, its log replays,
 * and a bad module is a clear error at start. No timing thresholds.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "../index.js";
import { fetchData } from "../actors/data-plane/fetch.js";
import { PROTOCOL_VERSION, type Envelope } from "../machines/protocol.js";
import { replay } from "../replay/replay.js";
import { NatsTransport } from "../transport/nats.js";
import { subjects } from "../transport/subjects.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";
import { until } from "./support/until.js";

const CLUSTER = "threads";
const TASKS = join(REPO_ROOT, "tests", "support", "cpu-tasks.mjs");
const s = subjects(CLUSTER);

type Met = { met: boolean; threadId: number; mainThread: boolean };

let server: NatsServer;
let dir: string;
let scheduler: NatschedProcess;
let workers: NatschedProcess[] = [];
let client: Client;
let nc: NatsConnection;
let transport: NatsTransport;

function natsArgs(): string[] {
  return ["--nats", server.url, "--cluster", CLUSTER];
}


beforeAll(async () => {
  server = await NatsServer.start();
  dir = mkdtempSync(join(tmpdir(), "natsched-nats-threads-"));
  scheduler = NatschedProcess.spawn("scheduler", ["scheduler", ...natsArgs(), "--log", join(dir, "scheduler.natlog")]);
  workers = ["w1", "w2"].map((name) =>
    NatschedProcess.spawn(name, ["worker", ...natsArgs(), "--name", name, "--nthreads", "2", "--functions", TASKS, "--log", join(dir, `${name}.natlog`)], { NATSCHED_SCHEDULER__HEARTBEAT_INTERVAL: "0.05", NATSCHED_SCHEDULER__EXECUTOR_THREAD_MEMORY: "64MiB" }),
  );
  await scheduler.waitFor(/natsched scheduler: cluster threads/);
  await Promise.all(workers.map((w) => w.waitFor(/registered with cluster threads/)));
  client = await Client.connect({ servers: server.url, cluster: CLUSTER });
  nc = await connect({ servers: server.url });
  transport = await NatsTransport.connect({ servers: server.url });
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await transport?.close().catch(() => undefined);
  await nc?.close().catch(() => undefined);
  await Promise.all([...workers, scheduler].filter(Boolean).map((p) => p.stop("SIGKILL")));
  await server?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("executor threads in worker processes on NATS", () => {
  it("two CPU-bound tasks on a worker with --nthreads 2 run on two threads at the same time", async () => {
    // Each spins until the other has started: both meet only if they ran at the same time.
    const [pa, pb] = [join(dir, "meet-a"), join(dir, "meet-b")];
    const [a, b] = (await client.gather([client.submit<Met>("meet", [pa, pb], { workers: "w1", pure: false }), client.submit<Met>("meet", [pb, pa], { workers: "w1", pure: false })])) as Met[];
    expect([a!.met, b!.met]).toEqual([true, true]);
    expect([a!.mainThread, b!.mainThread]).toEqual([false, false]);
    expect(a!.threadId).not.toBe(b!.threadId);
  });

  it("a 48 MB Float64Array as result and argument, across workers", async () => {
    const n = 6_000_000;
    const big = client.submit<Float64Array>("ramp", [n], { workers: "w1" });
    const doubled = client.submit<Float64Array>("scale", [big, 2], { workers: "w2" });
    expect(await client.submit<number>("total", [doubled], { workers: "w1" }).result()).toBe(n * (n - 1));
    const value = await doubled.result();
    expect(value).toBeInstanceOf(Float64Array);
    expect([value.length, value[n - 1]]).toEqual([n, 2 * (n - 1)]);
    await expect(client.submit("fail", ["on a thread"]).result()).rejects.toThrow(/on a thread/);
  });

  it("with both threads busy, the worker answers its status endpoint, heartbeats, a steal request and a peer's data request", async () => {
    const release = join(dir, "release");
    const busy = [0, 1].map((i) => client.submit<string>("spinUntil", [release, join(dir, `started-${i}`)], { workers: "w1", pure: false }));
    try {
      await until(() => existsSync(join(dir, "started-0")) && existsSync(join(dir, "started-1")));

      const status = (await nc.request(`natsched.${CLUSTER}.status.worker.w1`, "", { timeout: 10_000 })).json<{ executing: number; nthreads: number }>();
      expect(status).toMatchObject({ executing: 2, nthreads: 2 });

      const seen: string[] = [];
      const sub = transport.subscribe(s.workerOps("w1"), (msg) => {
        for (const op of (msg.data as Envelope<{ op: string }>).ops) seen.push(op.op);
      });
      await until(() => seen.includes("heartbeat"));
      const steal: Envelope<unknown> = { v: PROTOCOL_VERSION, from: "scheduler", ops: [{ op: "steal-request", key: busy[0]!.key, requestId: "probe" }] };
      expect(await transport.request(s.worker("w1"), steal, { timeout: 10_000 })).toEqual({ replies: [{ ok: true }] });
      await until(() => seen.includes("steal-response"));
      sub.unsubscribe();

      const [held] = await client.scatter([{ answer: 42 }], { workers: ["w1"] });
      const fetched = await fetchData(transport, s.workerData("w1"), [held!.key], "peer", 10_000);
      expect(fetched.values).toEqual([{ answer: 42 }]);

      writeFileSync(release, "");
      expect(await client.gather(busy)).toEqual(["released", "released"]);
    } finally {
      writeFileSync(release, "");
    }
  });

  it("a cancelled task on a thread is stopped: with both threads held before, the next task runs on a fresh one", async () => {
    const release = join(dir, "release-kept");
    const never = join(dir, "release-never");
    const stuck = client.submit<string>("spinUntil", [never, join(dir, "stuck-started"), 3_600_000], { workers: "w1", pure: false });
    const kept = client.submit<string>("spinUntil", [release, join(dir, "kept-started")], { workers: "w1", pure: false });
    try {
      await until(() => existsSync(join(dir, "stuck-started")) && existsSync(join(dir, "kept-started")));
      const held = [join(dir, "stuck-started"), join(dir, "kept-started")].map((path) => Number(readFileSync(path, "utf8")));
      await stuck.cancel();
      const next = await client.submit<{ threadId: number; mainThread: boolean }>("where", [], { workers: "w1", pure: false }).result();
      expect(next.mainThread).toBe(false);
      expect(held).not.toContain(next.threadId);
      expect(existsSync(never)).toBe(false);
      writeFileSync(release, "");
      expect(await kept.result()).toBe("released");
    } finally {
      writeFileSync(release, "");
    }
  });

  it("a thread that dies under its task ends only that thread: retried (allowedFailures 3), then KilledWorker; the process and its other task go on", async () => {
    const release = join(dir, "release-survivor");
    // Bounded by the test's timeout rather than spinUntil's 20 s: the hogs below take long on a busy machine.
    const kept = client.submit<string>("spinUntil", [release, join(dir, "survivor-started"), 110_000], { workers: "w1", pure: false });
    try {
      await until(() => existsSync(join(dir, "survivor-started")));
      expect(await client.submit("exitOnce", [join(dir, "exited-once")], { workers: "w1", pure: false }).result()).toBe("second run");
      await expect(client.submit("hog", [], { workers: "w1", pure: false }).result()).rejects.toMatchObject({
        code: "TASK_FAILED",
        message: expect.stringMatching(/run task \S+ 4 times, but the worker or executor thread running it died each time \(last: a thread of w1/),
      });
      expect(workers[0]!.child.exitCode).toBeNull();
      writeFileSync(release, "");
      expect(await kept.result()).toBe("released");
    } finally {
      writeFileSync(release, "");
    }
    // Four threads started, each filling its 64 MiB heap until V8 stops it: slow on a busy machine.
  }, 120_000);

  it("a worker's log, with its tasks run on threads, replays", async () => {
    await client.gather([1, 2, 3, 4].map((i) => client.submit("spin", [5 * i], { workers: "w2", pure: false })));
    const w2 = workers[1]!;
    expect(await w2.stop("SIGTERM")).toBe(0);
    const result = await replay(join(dir, "w2.natlog"));
    expect(result.ok).toBe(true);
  });

  it("a module that does not load, or exports no functions, stops `natsched worker` at start with a clear error", async () => {
    for (const [module, message] of [
      [join(dir, "missing.mjs"), /option functions: cannot load/],
      [join(REPO_ROOT, "tests", "support", "no-functions.mjs"), /option functions: .* exports no functions/],
    ] as const) {
      const worker = NatschedProcess.spawn("bad", ["worker", ...natsArgs(), "--name", "bad", "--functions", module]);
      expect(await worker.whenExited()).toBe(1);
      expect(worker.log).toMatch(message);
    }
  });
});
