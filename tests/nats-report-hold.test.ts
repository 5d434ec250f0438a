/**
 * A worker on NATS holds the reports of finished tasks nobody waits on while it has tasks
 * queued, and sends them together (config reportHold); the report of a task others wait on
 * goes at once. Read from the messages on the worker's subject to the scheduler (real
 * nats-server, scheduler and worker processes' actors). No timing thresholds.
 */
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import type { Client } from "../index.js";
import type { ComputeTaskOp, Envelope, TaskFinishedOp } from "../machines/protocol.js";
import { subjects } from "../transport/subjects.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";

const CLUSTER = "hold";
const s = subjects(CLUSTER);
let server: NatsServer;
let scheduler: SchedulerProcess;
let worker: WorkerProcess;
let client: Client;
let tap: NatsConnection;
let subs: Subscription[] = [];
/** Each message on the worker's subject to the scheduler: its task-finished ops. */
const reports: TaskFinishedOp[][] = [];
const computes: ComputeTaskOp[] = [];

beforeAll(async () => {
  server = await NatsServer.start();
  // Four tasks at a time for the one thread: three queued behind the running one. A hold far
  // longer than the tasks, so what goes together is decided by the queue, not by the timer.
  const config = { workerSaturation: 4, reportHold: 5 };
  scheduler = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, log: false, configFile: false, config });
  worker = await WorkerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, name: "w", nthreads: 1, functions: tasks.default, configFile: false, config });
  tap = await connect({ servers: server.url });
  const listen = (subject: string, take: (envelope: Envelope<{ op: string }>) => void) => {
    const sub = tap.subscribe(subject);
    subs.push(sub);
    void (async () => {
      for await (const m of sub) take(m.json<Envelope<{ op: string }>>());
    })();
  };
  listen(s.workerOps("w"), (e) => {
    const finished = e.ops.filter((op): op is TaskFinishedOp => op.op === "task-finished");
    if (finished.length > 0) reports.push(finished);
  });
  listen(s.worker("w"), (e) => computes.push(...e.ops.filter((op): op is ComputeTaskOp => op.op === "compute-task")));
  await tap.flush();
  client = await connectClient({ servers: server.url, cluster: CLUSTER });
});

afterAll(async () => {
  for (const sub of subs) sub.unsubscribe();
  await tap?.close();
  await client?.close();
  await worker?.close();
  await scheduler?.close();
  await server?.dispose();
});

describe("a worker's reports on NATS", () => {
  it("are held by a worker that says so when it registers (its reportHold)", () => {
    expect(scheduler.actor.core.workers.get("w")?.reportHold).toBe(5);
  });

  it("go together while it has tasks queued, stamped with how long each waited, and none is lost", async () => {
    const futures = client.map<number>("slowInc", Array.from({ length: 12 }, (_, i) => i));
    expect(await client.gather(futures)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    await tap.flush();
    const keys = new Set(futures.map((f) => f.key));
    const mine = reports.map((batch) => batch.filter((op) => keys.has(op.key))).filter((batch) => batch.length > 0);
    expect(mine.flat().map((op) => op.key).sort()).toEqual([...keys].sort());
    // Fewer messages than reports: some went with others.
    expect(mine.length).toBeLessThan(keys.size);
    expect(mine.some((batch) => batch.length > 1)).toBe(true);
    expect(mine.flat().some((op) => (op.held ?? 0) > 0)).toBe(true);
  });

  it("of a task another waits on goes at once, its compute-task marked prompt", async () => {
    // One graph: the scheduler knows of the dependent when it sends the roots.
    const graph: Record<string, unknown> = { dependent: ["inc", "root-0"] };
    for (let i = 0; i < 6; i++) graph[`root-${i}`] = ["slowInc", 100 + i, 20];
    const futures = client.persist(graph);
    expect(await futures.dependent!.result()).toBe(102);
    await client.gather(Object.values(futures));
    await tap.flush();
    expect(computes.find((op) => op.key === "root-0")?.prompt).toBe(true);
    const others = computes.filter((op) => /^root-[1-5]$/.test(op.key));
    expect(others).toHaveLength(5);
    expect(others.every((op) => op.prompt === undefined)).toBe(true);
    const itsReport = reports.flat().find((op) => op.key === "root-0");
    expect(itsReport).toBeDefined();
    expect(itsReport!.held).toBeUndefined();
    // The others waited for company while tasks were queued behind them.
    expect(reports.flat().some((op) => /^root-[1-5]$/.test(op.key) && (op.held ?? 0) > 0)).toBe(true);
  });
});
