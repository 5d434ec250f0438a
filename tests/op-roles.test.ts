/**
 * The scheduler host's role and incarnation checks (actors/host/op-roles.ts) on their own, and on
 * the in-process bus, where the same subjects and the same refusals apply as on NATS; and a
 * worker killed and restarted under its name, whose earlier incarnation's late report is
 * refused while the new one works on.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { incarnationProblem, roleProblem } from "../actors/host/op-roles.js";
import { resolveConfig } from "../machines/config.js";
import { PROTOCOL_VERSION } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import { subjects } from "../transport/subjects.js";

const s = subjects("roles");

describe("the subject of a message to the scheduler", () => {
  it("names its sender's role: any client, one client, one worker, or none", () => {
    expect(s.senderOf("natsched.roles.scheduler")).toEqual({ role: "client", id: null });
    expect(s.senderOf("natsched.roles.scheduler.client.c-1")).toEqual({ role: "client", id: "c-1" });
    expect(s.senderOf("natsched.roles.scheduler.worker.w_1")).toEqual({ role: "worker", name: "w_1" });
    for (const other of ["natsched.roles.scheduler.worker", "natsched.roles.scheduler.worker.a.b", "natsched.roles.scheduler.admin.x", "natsched.roles.schedulerx", "natsched.other.scheduler.worker.a"]) {
      expect(s.senderOf(other), other).toBeUndefined();
    }
    expect(s.workerOps("w1")).toBe("natsched.roles.scheduler.worker.w1");
    expect(s.clientOps("c1")).toBe("natsched.roles.scheduler.client.c1");
  });
});

describe("roleProblem and incarnationProblem", () => {
  const worker = { role: "worker", name: "w1" } as const;
  const client = { role: "client", id: "c1" } as const;
  const anyClient = { role: "client", id: null } as const;
  const at = "subject";

  it("let each role send its own ops, naming itself", () => {
    expect(roleProblem(worker, { op: "task-finished", worker: "w1", id: "x" }, at)).toBeUndefined();
    expect(roleProblem(worker, { op: "register-worker", name: "w1", id: "x" }, at)).toBeUndefined();
    expect(roleProblem(client, { op: "update-graph", client: "c1" }, at)).toBeUndefined();
    expect(roleProblem(anyClient, { op: "release-keys", client: "anyone" }, at)).toBeUndefined();
  });

  it("refuse ops out of role, or naming another sender", () => {
    expect(roleProblem(client, { op: "task-finished", worker: "w1", id: "x" }, at)).toMatch(/is a worker op/);
    expect(roleProblem(anyClient, { op: "heartbeat", name: "w1", id: "x" }, at)).toMatch(/is a worker op/);
    expect(roleProblem(worker, { op: "client-join", client: "c1" }, at)).toMatch(/is a client op/);
    expect(roleProblem(worker, { op: "add-keys", worker: "w2", id: "x" }, at)).toMatch(/names worker "w2"/);
    expect(roleProblem(worker, { op: "retire-worker", name: "w2" }, at)).toMatch(/names worker "w2"/);
    expect(roleProblem(client, { op: "client-leave", client: "c2" }, at)).toMatch(/names client "c2"/);
    // Only the client itself cancels its keys: another client's cancel-keys is refused on its subject, and so is a worker's.
    expect(roleProblem(client, { op: "cancel-keys", client: "c1" }, at)).toBeUndefined();
    expect(roleProblem(client, { op: "cancel-keys", client: "c2" }, at)).toMatch(/cancel-keys names client "c2"/);
    expect(roleProblem(worker, { op: "cancel-keys", client: "c1" }, at)).toMatch(/cancel-keys is a client op/);
    expect(roleProblem(client, { op: "fire-and-forget", client: "c2" }, at)).toMatch(/fire-and-forget names client "c2"/);
    expect(roleProblem(worker, { op: "fire-and-forget", client: "c1" }, at)).toMatch(/fire-and-forget is a client op/);
    expect(roleProblem(undefined, { op: "client-join", client: "c1" }, at)).toMatch(/not a subject the scheduler takes ops on/);
  });

  it("refuse a worker op from an incarnation the core does not have, registration and heartbeats aside", () => {
    const core = new SchedulerCore(resolveConfig({}), { toWorker: () => undefined, toClient: () => undefined, transition: () => undefined });
    core.handle({ op: "scheduler-start", t: 0 });
    core.handle({ op: "register-worker", name: "w1", id: "w1-a", nthreads: 1, host: "h", resources: {}, functions: ["f"], t: 1 });
    expect(incarnationProblem(core, { op: "task-finished", worker: "w1", id: "w1-a" })).toBeUndefined();
    expect(incarnationProblem(core, { op: "retire-worker", name: "w1" })).toBeUndefined();
    expect(incarnationProblem(core, { op: "task-finished", worker: "w1", id: "w1-old" })).toMatch(/w1 is incarnation w1-a here, not w1-old/);
    expect(incarnationProblem(core, { op: "unregister-worker", name: "w2", id: "w2-a" })).toMatch(/w2 \(incarnation w2-a\) is not a worker of this scheduler/);
    expect(incarnationProblem(core, { op: "retire-worker", name: "w2" })).toMatch(/w2 is not a worker of this scheduler/);
    expect(incarnationProblem(core, { op: "register-worker", name: "w2", id: "w2-a" })).toBeUndefined();
    expect(incarnationProblem(core, { op: "heartbeat", name: "w2", id: "w2-a" })).toBeUndefined();
    expect(incarnationProblem(core, { op: "update-graph", client: "c" })).toBeUndefined();
  });
});

describe("on the in-process bus", () => {
  let cluster: LocalCluster | undefined;
  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it("workers and clients send on their own subjects, and the scheduler refuses what does not fit", async () => {
    const errors: string[] = [];
    cluster = await LocalCluster.start({
      name: "roles",
      workers: [{ name: "a" }],
      functions: { inc: (x: number) => x + 1 },
      log: false,
      configFile: false,
      onError: (e) => errors.push(String((e as Error)?.message ?? e)),
    });
    const seen = new Set<string>();
    const tap = cluster.bus.connect("tap");
    tap.subscribe("natsched.roles.scheduler.>", (msg) => void seen.add(msg.subject));
    const client = cluster.client();
    expect(await client.submit<number>("inc", [1]).result({ timeout: 5000 })).toBe(2);
    expect(seen).toEqual(new Set(["natsched.roles.scheduler.worker.a", `natsched.roles.scheduler.client.${client.id}`]));
    const raw = cluster.bus.connect("raw");
    const id = cluster.workers.get("a")!.id;
    const reply = (await raw.request(`natsched.roles.scheduler.client.${client.id}`, { v: PROTOCOL_VERSION, from: "raw", ops: [{ op: "unregister-worker", name: "a", id, reason: "forged" }] }, { timeout: 2000 })) as {
      replies: { ok: boolean; error?: { code?: string } }[];
    };
    expect(reply.replies).toEqual([{ ok: false, error: expect.objectContaining({ name: "ForbiddenError", code: "FORBIDDEN" }) }]);
    expect(cluster.scheduler.core.workers.has("a")).toBe(true);
    expect(cluster.scheduler.totals.refused).toBe(1);
    expect(errors).toEqual([expect.stringMatching(/^scheduler: refused 1 op\(s\) from "raw" on natsched\.roles\.scheduler\.client\..*: unregister-worker is a worker op/)]);
    await raw.close();
    await tap.close();
  });

  it("refuses a late report of a worker's earlier incarnation, and the new one works on", async () => {
    cluster = await LocalCluster.start({ name: "roles", workers: [{ name: "a" }], functions: { inc: (x: number) => x + 1 }, log: false, configFile: false, onError: () => undefined });
    const client = cluster.client();
    const old = cluster.workers.get("a")!.id;
    cluster.killWorker("a");
    await cluster.addWorker({ name: "a" });
    const raw = cluster.bus.connect("raw");
    const late = { op: "task-finished", worker: "a", id: old, key: "k", nbytes: 8, start: 0, stop: 1 };
    const reply = (await raw.request("natsched.roles.scheduler.worker.a", { v: PROTOCOL_VERSION, from: "worker.a", ops: [late] }, { timeout: 2000 })) as { replies: { ok: boolean; error?: { message: string } }[] };
    expect(reply.replies[0]).toMatchObject({ ok: false, error: { code: "FORBIDDEN" } });
    expect(reply.replies[0]!.error!.message).toMatch(new RegExp(`not ${old}`));
    expect(await client.submit<number>("inc", [41]).result({ timeout: 5000 })).toBe(42);
    await raw.close();
  });
});
