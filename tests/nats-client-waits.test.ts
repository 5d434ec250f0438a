/** client.wait, asCompleted and progress on a NATS client (real nats-server, scheduler and worker processes' actors). */
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import type { Client, Future } from "../index.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";

const CLUSTER = "waits";
let server: NatsServer;
let scheduler: SchedulerProcess;
let worker: WorkerProcess;
let client: Client;

beforeAll(async () => {
  server = await NatsServer.start();
  scheduler = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, log: false, configFile: false });
  worker = await WorkerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, name: "w", nthreads: 2, functions: tasks.default, configFile: false });
  client = await connectClient({ servers: server.url, cluster: CLUSTER });
});

afterAll(async () => {
  await client?.close();
  await worker?.close();
  await scheduler?.close();
  await server?.dispose();
});

describe("waiting on many futures over NATS", () => {
  it("wait: FIRST_COMPLETED returns the quick task first; ALL_COMPLETED counts a failure as done", async () => {
    const slow = client.submit("slowInc", [1, 1500]);
    const quick = client.submit("inc", [1]);
    const first = await client.wait([slow, quick], { returnWhen: "FIRST_COMPLETED" });
    expect(first.done).toEqual([quick]);
    expect(first.notDone).toEqual([slow]);
    const bad = client.submit("fail", ["nope"]);
    const all = await client.wait([slow, quick, bad]);
    expect(all.notDone).toEqual([]);
    expect(all.done.map((f) => f.status)).toEqual(["finished", "finished", "error"]);
  });

  it("asCompleted with results, in completion order, taking one more while iterating", async () => {
    const slow = client.submit("slowInc", [10, 800]);
    const quick = client.submit("inc", [20]);
    const seen: [Future, unknown][] = [];
    const completed = client.asCompleted([slow, quick], { withResults: true });
    let added: Future | undefined;
    for await (const item of completed) {
      seen.push(item as [Future, unknown]);
      if (added === undefined) completed.add((added = client.submit("inc", [30])));
    }
    expect(seen[0]).toEqual([quick, 21]);
    expect(seen.slice(1)).toHaveLength(2);
    expect(seen.slice(1)).toEqual(expect.arrayContaining([[slow, 11], [added, 31]]));
  });

  it("progress ends with every prefix at 100%", async () => {
    const fs = [...client.map("inc", [1, 2, 3]), client.submit("slowInc", [1, 300])];
    const out = new PassThrough();
    let text = "";
    out.on("data", (d: Buffer) => (text += d.toString()));
    await client.progress(fs, { stream: out, interval: 50 });
    const last = text.trim().split("\n").slice(-2);
    expect(last).toEqual([expect.stringMatching(/^inc\s+\[#+\] 100% 3\/3$/), expect.stringMatching(/^slowInc\s+\[#+\] 100% 1\/1$/)]);
  });
});
