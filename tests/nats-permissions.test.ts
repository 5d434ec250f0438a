/**
 * docs/nats-roles.conf, the ready server config of docs/nats.md ("Roles and permissions"), on
 * a real nats-server: a scheduler, two workers and a client, each as its own user, run a graph
 * with a dependency across workers, a scatter and a gather, with the scheduler's log in
 * JetStream, which the read-only tools' user then replays. Under exactly those permissions the
 * server refuses a client that forges a worker's result, writes the scheduler's log (which
 * would stop it) or sends a worker ops, and a worker that writes the scheduler's log or
 * reports as another worker; nothing changes, and the run goes on.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { openLogAt } from "../log/jetstream-open.js";
import { replayAt } from "../replay/replay-at.js";
import { NatsTransport } from "../transport/nats.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "prod"; // the cluster the config is written for
const PASSWORDS = { scheduler: "s-pw", worker: "w-pw", client: "c-pw", tools: "t-pw" };

let server: NatsServer;
let scheduler: SchedulerProcess;
const workers: WorkerProcess[] = [];
let client: Client;
const errors: string[] = [];
const onError = (e: unknown) => void errors.push(`${(e as Error)?.name}: ${String((e as Error)?.message ?? e)}`);
let schedulerFailed = false;

/** How each user logs in, as docs/nats-roles.conf says: its password, and an inbox only it reads. */
const login = (user: string, pass: string) => ({ servers: server.url, user, pass, inboxPrefix: `_INBOX_${user}`, env: {} });

beforeAll(async () => {
  server = await NatsServer.start({
    config: readFileSync(join(REPO_ROOT, "docs", "nats-roles.conf"), "utf8"),
    env: {
      NATSCHED_SCHEDULER_PASSWORD: PASSWORDS.scheduler,
      NATSCHED_WORKER_PASSWORD: PASSWORDS.worker,
      NATSCHED_CLIENT_PASSWORD: PASSWORDS.client,
      NATSCHED_TOOLS_PASSWORD: PASSWORDS.tools,
    },
  });
  scheduler = await SchedulerProcess.start({ nats: login("prod-scheduler", PASSWORDS.scheduler), cluster: CLUSTER, log: { jetstream: true }, configFile: false, onError });
  void scheduler.failed.then(() => (schedulerFailed = true));
  for (const name of ["w1", "w2"]) {
    workers.push(await WorkerProcess.start({ nats: login(`prod-${name}`, PASSWORDS.worker), cluster: CLUSTER, name, nthreads: 1, functions: tasks.default, configFile: false, onError }));
  }
  client = await connectClient({ ...login("prod-alice", PASSWORDS.client), cluster: CLUSTER, id: "alice", onError });
}, 30_000);

afterAll(async () => {
  await client?.close();
  for (const w of workers) await w.close();
  await scheduler?.close();
  await server?.dispose();
});

/** A raw connection as `user`, and the permission errors the server sends it. */
async function rawAs(user: string, pass: string): Promise<{ nc: NatsConnection; refused: string[] }> {
  const nc = await connect({ servers: server.url, user, pass, inboxPrefix: `_INBOX_${user}` });
  const refused: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error") refused.push(s.error.message);
  })();
  return { nc, refused };
}

async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; errors: ${JSON.stringify(errors)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const envelope = (ops: unknown[]) => JSON.stringify({ v: 1, from: "forger", ops });

describe("the roles of docs/nats-roles.conf on a real nats-server", () => {
  it("are the config docs/nats.md shows", () => {
    const doc = readFileSync(join(REPO_ROOT, "docs", "nats.md"), "utf8");
    const shown = /### The ready config\n[\s\S]*?```conf\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(shown).toBe(readFileSync(join(REPO_ROOT, "docs", "nats-roles.conf"), "utf8"));
  });

  it("run a graph across two workers, a scatter and a gather, each role as its own user", async () => {
    const a = client.submit<number>("inc", [1], { workers: ["w1"] });
    const b = client.submit<number>("inc", [2], { workers: ["w2"] });
    // w1 fetches b from w2: a dependency across workers.
    const c = client.submit<number>("add", [a, b], { workers: ["w1"] });
    expect(await c.result({ timeout: 10_000 })).toBe(5);
    const [data] = await client.scatter([41], { workers: ["w2"] });
    const big = tasks.ramp(200_000); // 1.6 MB: more than one message, pulled by the worker in chunks
    const [bigData] = await client.scatter([big], { workers: ["w1"] });
    // A result of 1.6 MB: the client pulls it from the worker in chunks, one reply per request.
    const bigResult = client.submit<Float64Array>("ramp", [200_000], { workers: ["w2"] });
    const results = await client.gather([client.submit<number>("inc", [data]), client.submit<number>("total", [bigData], { workers: ["w2"] }), a, b, bigResult], { timeout: 10_000 });
    expect(results.slice(0, 4)).toEqual([42, tasks.total(big), 2, 3]);
    expect(results[4]).toEqual(tasks.ramp(200_000));
    // A reply larger than a message goes as fragments to the requester's inbox: allow_responses lets all through.
    const transport = await NatsTransport.connect({ ...login("prod-alice", PASSWORDS.client), onError });
    try {
      const keys = Array.from({ length: 80_000 }, (_, i) => `no-such-key-${i}`);
      const answer = (await transport.request(`natsched.${CLUSTER}.query`, { op: "who-has", keys }, { timeout: 10_000 })) as { whoHas: Record<string, string[]> };
      expect(Object.keys(answer.whoHas)).toHaveLength(keys.length);
    } finally {
      await transport.close();
    }
    expect((await client.workers()).map((w) => w.name).sort()).toEqual(["w1", "w2"]);
  }, 30_000);

  it("refuse a client's forged result, log write, worker ops and ops as another client; nothing changes", async () => {
    const core = scheduler.actor.core;
    const running = client.submit<number>("slowInc", [41, 1000], { workers: ["w1"], pure: false });
    await until(() => core.tasks.get(running.key)?.processingOn?.name === "w1", "the task to run on w1");
    const w1 = core.workers.get("w1")!.id;
    const alice = await rawAs("prod-alice", PASSWORDS.client);
    try {
      const forged = { op: "task-finished", worker: "w1", id: w1, key: running.key, nbytes: 8, start: 0, stop: 1 };
      alice.nc.publish(`natsched.${CLUSTER}.scheduler.worker.w1`, envelope([forged]));
      alice.nc.publish(`natsched.${CLUSTER}.log.scheduler`, "anything at all");
      alice.nc.publish(`natsched.${CLUSTER}.log`, "anything at all");
      alice.nc.publish(`natsched.${CLUSTER}.worker.w1`, envelope([{ op: "free-keys", keys: [running.key] }]));
      alice.nc.publish(`natsched.${CLUSTER}.announce.scheduler`, JSON.stringify({ v: 1, op: "scheduler-started" }));
      alice.nc.publish(`natsched.${CLUSTER}.scheduler.client.bob`, envelope([{ op: "client-leave", client: "bob" }]));
      alice.nc.publish(`natsched.${CLUSTER}.scheduler`, envelope([{ op: "client-leave", client: "alice" }]));
      await alice.nc.flush();
      await until(() => alice.refused.length >= 7, "the server to refuse all seven publishes");
      for (const subject of ["scheduler.worker.w1", "log.scheduler", "log", "worker.w1", "announce.scheduler", "scheduler.client.bob", "scheduler"]) {
        expect(alice.refused).toContain(`Permissions Violation for Publish to "natsched.${CLUSTER}.${subject}"`);
      }
    } finally {
      await alice.nc.close();
    }
    // Through natsched's own transport a refused request fails at once, typed.
    const transport = await NatsTransport.connect({ ...login("prod-alice", PASSWORDS.client), onError: () => undefined });
    try {
      const forged = { v: 1, from: "alice", ops: [{ op: "task-finished", worker: "w1", id: w1, key: running.key, nbytes: 8, start: 0, stop: 1 }] };
      await expect(transport.request(`natsched.${CLUSTER}.scheduler.worker.w1`, forged, { timeout: 10_000 })).rejects.toMatchObject({ code: "FORBIDDEN" });
    } finally {
      await transport.close();
    }
    expect(core.tasks.get(running.key)?.processingOn?.name).toBe("w1");
    expect(await running.result({ timeout: 10_000 })).toBe(42);
    expect(core.state).toBe("running");
    expect(schedulerFailed).toBe(false);
    expect(scheduler.actor.totals.refused).toBe(0); // the server stopped them all before the scheduler saw anything
  }, 30_000);

  it("refuse a worker that writes the scheduler's log or reports as another worker", async () => {
    const w1 = await rawAs("prod-w1", PASSWORDS.worker);
    try {
      w1.nc.publish(`natsched.${CLUSTER}.log.scheduler`, "anything at all");
      w1.nc.publish(`natsched.${CLUSTER}.scheduler.worker.w2`, envelope([{ op: "unregister-worker", name: "w2", id: "x", reason: "forged" }]));
      w1.nc.publish(`natsched.${CLUSTER}.client.alice`, envelope([{ op: "key-cancelled", key: "k", reason: "forged" }]));
      await w1.nc.flush();
      await until(() => w1.refused.length >= 3, "the server to refuse all three publishes");
      for (const subject of ["log.scheduler", "scheduler.worker.w2", "client.alice"]) {
        expect(w1.refused).toContain(`Permissions Violation for Publish to "natsched.${CLUSTER}.${subject}"`);
      }
    } finally {
      await w1.nc.close();
    }
    expect(await client.submit<number>("add", [20, 22]).result({ timeout: 10_000 })).toBe(42);
    expect([...scheduler.actor.core.workers.keys()].sort()).toEqual(["w1", "w2"]);
    expect(schedulerFailed).toBe(false);
  }, 30_000);

  it("let the read-only tools' user read the scheduler's log, and nothing more", async () => {
    await scheduler.log!.flush();
    const tools = login("prod-logs", PASSWORDS.tools);
    const { servers: _servers, ...auth } = tools;
    const result = await replayAt(`${server.url}/${CLUSTER}`, {}, auth);
    expect(result.problems).toEqual([]);
    expect(result.actors.scheduler!.divergence).toBeUndefined();
    const reader = await openLogAt(`${server.url}/${CLUSTER}`, auth);
    const { records, problems } = await reader.readAll();
    expect(problems).toEqual([]);
    const inputs = records.filter((r) => r.actor === "scheduler" && r.kind === "input").map((r) => (r.kind === "input" ? r.event.op : ""));
    expect(inputs).toEqual(expect.arrayContaining(["register-worker", "update-graph", "update-data", "task-finished"]));
    const logs = await rawAs("prod-logs", PASSWORDS.tools);
    try {
      logs.nc.publish(`natsched.${CLUSTER}.log.scheduler`, "anything at all");
      logs.nc.publish(`natsched.${CLUSTER}.scheduler`, envelope([{ op: "client-join", client: "tools" }]));
      await logs.nc.flush();
      await until(() => logs.refused.length >= 2, "the server to refuse both publishes");
    } finally {
      await logs.nc.close();
    }
    // The command line as an operator runs it: the user, its inbox, the password in NATS_PASSWORD.
    const status = NatschedProcess.spawn("status", ["status", "--nats", server.url, "--cluster", CLUSTER, "--user", "prod-logs", "--inbox-prefix", "_INBOX_prod-logs"], { NATS_PASSWORD: PASSWORDS.tools });
    expect(await status.whenExited()).toBe(0);
    expect(status.log).toMatch(/cluster prod: scheduler running, 2 worker\(s\)/);
    expect(schedulerFailed).toBe(false);
    // The processes themselves never ran into their permissions.
    expect(errors.filter((e) => /Permissions Violation|FORBIDDEN|Forbidden/i.test(e))).toEqual([]);
    const violations = server.log.split("\n").filter((line) => /Violation/.test(line));
    expect(violations.every((line) => /User "prod-(alice|w1|logs)"/.test(line)), violations.join("\n")).toBe(true);
  }, 30_000);
});
