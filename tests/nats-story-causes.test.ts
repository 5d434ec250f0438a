/**
 * Causes across NATS: a scheduler and three workers on a nats-server of their own, all
 * logging to the cluster's log in JetStream. A worker disappears (its connection closed,
 * no goodbye) after making a result, a task fails, a client leaves; `natsched story` on the
 * JetStream log says why each step happened, following the scheduler's messages to the
 * workers that took them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { runCli } from "../cli/run.js";
import type { CausedStoryLine } from "../tools/story-causes.js";
import { NatsServer } from "./support/nats-server.js";
import { until } from "./support/until.js";

const CLUSTER = "causes";
const functions = {
  inc: (x: number) => x + 1,
  boom: () => {
    throw new Error("boom");
  },
};
let server: NatsServer;
let scheduler: SchedulerProcess;
const workers = new Map<string, WorkerProcess>();
let client: Client;
let leaver: Client;

beforeAll(async () => {
  server = await NatsServer.start();
  const nats = { servers: server.url, env: {} };
  const config = { heartbeatInterval: 0.1 };
  scheduler = await SchedulerProcess.start({ nats, cluster: CLUSTER, log: { jetstream: true }, config, configFile: false, service: false });
  for (const name of ["a", "b", "c"]) {
    workers.set(name, await WorkerProcess.start({ nats, cluster: CLUSTER, name, nthreads: 1, functions, executor: "loop", log: { jetstream: true }, config, configFile: false, service: false }));
  }
  client = await connectClient({ servers: server.url, cluster: CLUSTER });
  leaver = await connectClient({ servers: server.url, cluster: CLUSTER });
}, 30_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await leaver?.close().catch(() => undefined);
  for (const worker of workers.values()) await worker.close().catch(() => undefined);
  await scheduler?.close();
  await server?.dispose();
});

async function story(key: string): Promise<CausedStoryLine[]> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(["story", `${server.url}/${CLUSTER}`, key, "--json"], { out: (text) => out.push(text), err: (text) => err.push(text) });
  expect({ code, err: err.filter((e) => !e.startsWith("warning: open")) }).toMatchObject({ code: 0 });
  return (JSON.parse(out.join("\n")) as { lines: CausedStoryLine[] }).lines;
}

const causes = (lines: CausedStoryLine[], actor: RegExp, text: RegExp) => lines.filter((l) => actor.test(l.actor) && text.test(l.text)).map((l) => l.cause);

describe("story causes on NATS, from the log in JetStream", () => {
  it("a lost worker's result recomputed, a failure, a client leaving: each step says why, across the scheduler and the workers", async () => {
    const x = client.submit("inc", [1], { key: "x", workers: "c", allowOtherWorkers: true });
    expect(await x.result({ timeout: 10_000 })).toBe(2);
    // c vanishes: its connection closes without a word to the scheduler.
    const c = workers.get("c")!;
    workers.delete("c");
    await c.transport.close();
    c.actor.close({ abrupt: true, reason: "killed" });
    await until(() => !scheduler.actor.core.running.some((w) => w.name === "c"), 20_000, "c declared lost");
    expect(await client.submit("inc", [x], { key: "y" }).result({ timeout: 10_000 })).toBe(3);
    await expect(client.submit("boom", [], { key: "bad" }).result({ timeout: 10_000 })).rejects.toThrow(/boom/);
    expect(await leaver.submit("inc", [10], { key: "z" }).result({ timeout: 10_000 })).toBe(11);
    const leaverId = leaver.id;
    await leaver.close();
    await until(() => scheduler.actor.core.tasks.get("z") === undefined, 10_000, "z forgotten");
    for (const worker of workers.values()) await worker.log?.flush();
    await scheduler.log?.flush();

    const xs = await story("x");
    expect(causes(xs, /^scheduler$/, /memory -> released/)[0]).toMatch(/^result lost: worker c \(connection gone: .*\)  \[scheduler:\d+\]$/);
    expect(causes(xs, /^scheduler$/, /released -> processing/)[1]).toMatch(/^recomputed: its result was lost with worker c \(connection gone/);
    // The worker that ran it again: its compute-task names the scheduler's worker-lost input.
    expect(causes(xs, /^worker\.[ab]$/, /input compute-task/)).toEqual([expect.stringMatching(/^sent by scheduler for: worker c was lost \(connection gone: .*\)  \[scheduler:\d+\]$/)]);
    expect(causes(xs, /^worker\.[ab]$/, /released -> ready/)).toEqual([expect.stringMatching(/^recomputed: its result was lost with worker c .*\[worker\.[ab]:\d+ <- scheduler:\d+\]$/)]);

    const bad = await story("bad");
    expect(causes(bad, /^scheduler$/, /-> erred/)).toEqual([expect.stringMatching(/^erred: it failed on worker [ab]: Error: boom/)]);

    const z = await story("z");
    const released = z.filter((l) => /-> (released|forgotten)/.test(l.text));
    expect(released.map((l) => l.actor.startsWith("worker.") ? "worker" : l.actor)).toEqual(["scheduler", "scheduler", "worker"]);
    for (const line of released) expect(line.cause).toMatch(new RegExp(`^released: client ${leaverId} left`));
  }, 60_000);
});
