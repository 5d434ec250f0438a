/**
 * Issue 23's evidence on NATS, with the scheduler and workers as `natsched scheduler` /
 * `natsched worker` run them: a worker's file log header names its build (commit, function
 * hashes), a worker writing to the cluster's JetStream log names it in its start record; a
 * failure's stack reaches the scheduler's record and the client's error; heartbeat metrics
 * are in the scheduler's log; replay finds no build difference.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashFunctions } from "../actors/function-hashes.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { openLogAt } from "../log/jetstream-open.js";
import { packageCommit } from "../log/package-version.js";
import { readLogSync } from "../log/reader.js";
import type { InputRecord, LogRecord, StartRecord } from "../log/types.js";
import { TaskFailedError } from "../machines/errors.js";
import type { ErrorInfo } from "../machines/protocol.js";
import { replayAt } from "../replay/replay-at.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";

const CLUSTER = "evidence";
const functions = { fail: tasks.fail, inc: tasks.inc };
const dir = mkdtempSync(join(tmpdir(), "natsched-nats-evidence-"));
const fileLog = join(dir, "w-file.natlog");
let server: NatsServer;
let scheduler: SchedulerProcess;
let onStream: WorkerProcess;
let onFile: WorkerProcess;
let failed: unknown;
let failedKey: string;
let records: LogRecord[];

beforeAll(async () => {
  server = await NatsServer.start({});
  const nats = { servers: server.url, env: {} };
  const config = { heartbeatInterval: 0.05 };
  scheduler = await SchedulerProcess.start({ nats, cluster: CLUSTER, log: { jetstream: true }, configFile: false, service: false, config });
  onStream = await WorkerProcess.start({ nats, cluster: CLUSTER, name: "w-stream", nthreads: 1, functions, log: { jetstream: true }, configFile: false, service: false, config });
  onFile = await WorkerProcess.start({ nats, cluster: CLUSTER, name: "w-file", nthreads: 1, functions, log: fileLog, configFile: false, service: false, config });
  const client = await connectClient({ ...nats, cluster: CLUSTER, requestTimeout: 5000 });
  try {
    const f = client.submit("fail", ["no good"]);
    failedKey = f.key;
    failed = await f.result({ timeout: 5000 }).catch((e: unknown) => e);
    expect(await client.submit<number>("inc", [1]).result({ timeout: 5000 })).toBe(2);
  } finally {
    await client.close();
  }
  // Heartbeats every 50 ms: wait until the scheduler's log has both workers' metrics.
  const logged = async () => (await (await openLogAt(`${server.url}/${CLUSTER}`)).readAll()).records.filter((r) => r.kind === "input" && r.event.op === "host-metrics");
  while (new Set((await logged()).map((r) => (r as InputRecord).event.worker)).size < 2) await new Promise((resolve) => setTimeout(resolve, 100));
  await onFile.close();
  await onStream.close();
  await scheduler.close();
  records = (await (await openLogAt(`${server.url}/${CLUSTER}`)).readAll()).records;
}, 60_000);

afterAll(async () => {
  await onFile?.close();
  await onStream?.close();
  await scheduler?.close();
  await server?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("evidence on NATS", () => {
  it("a worker's file log header names its build and its functions' code", async () => {
    const meta = readLogSync(fileLog).header.meta;
    expect(meta.commit).toBe(packageCommit());
    expect(meta.functions).toEqual(await hashFunctions(functions));
  });

  it("a worker on the cluster's JetStream log names its build in its start record; replay finds no difference", async () => {
    const start = records.find((r): r is StartRecord => r.kind === "start" && r.actor === "worker.w-stream")!;
    expect(start.init.build).toMatchObject({ commit: packageCommit(), node: process.version, functions: await hashFunctions(functions) });
    const result = await replayAt(`${server.url}/${CLUSTER}`, { functions: await hashFunctions(functions) });
    expect(result.ok).toBe(true);
    expect(result.buildDifferences).toEqual([]);
    const changed = await replayAt(`${server.url}/${CLUSTER}`, { functions: await hashFunctions({ ...functions, inc: (x: number) => x + 2 }) });
    expect(changed.ok).toBe(true);
    expect(changed.buildDifferences).toEqual([{ what: "function", name: "inc", actor: "worker.w-stream", recorded: expect.any(String), replaying: expect.any(String) }]);
  });

  it("a failure's stack is in the scheduler's record and the client's error", () => {
    expect(failed).toBeInstanceOf(TaskFailedError);
    const stack = (failed as TaskFailedError).remoteStack!;
    expect(stack).toMatch(/^Error: no good\n +at fail /);
    const erred = records.find((r): r is InputRecord => r.kind === "input" && r.actor === "scheduler" && r.event.op === "task-erred" && r.event.key === failedKey)!;
    expect((erred.event.error as ErrorInfo).stack).toBe(stack);
  });

  it("the scheduler's log has both workers' host metrics", () => {
    const metrics = records.filter((r): r is InputRecord => r.kind === "input" && r.event.op === "host-metrics");
    expect(new Set(metrics.map((r) => r.event.worker))).toEqual(new Set(["w-stream", "w-file"]));
    expect(metrics.every((r) => r.actor === "scheduler" && (r.event.rss as number) > 0)).toBe(true);
  });
});
