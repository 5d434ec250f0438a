/**
 * docs/schemas/ against reality: every message of a real NATS run (scheduler, two workers,
 * a natsched client and a plain-NATS client) validates against the schema of its subject,
 * with no field the schemas do not declare; and for every op and every way of breaking one
 * field, the schemas and actors/validate-ops.ts (plus the scheduler's task-spec check, for
 * what is inside update-graph's tasks) give the same verdict.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { envelopeProblem, schedulerOpProblem, workerOpProblem } from "../actors/validate-ops.js";
import { checkTaskSpecs } from "../machines/scheduler/validate-specs.js";
import type { TaskSpec } from "../machines/protocol.js";
import * as tasks from "./support/cluster-tasks.js";
import { SchemaSet } from "./support/json-schema.js";
import { NatsServer } from "./support/nats-server.js";
import { REPO_ROOT } from "./support/natsched-process.js";
import { mutants, SCHEDULER_OPS, WORKER_OPS } from "./support/wire-examples.js";
import { WireTap, type Tapped } from "./support/wire-tap.js";

const SCHEMA_DIR = join(REPO_ROOT, "docs", "schemas");
const schemas = new SchemaSet();
for (const file of readdirSync(SCHEMA_DIR).filter((f) => f.endsWith(".schema.json"))) schemas.add(JSON.parse(readFileSync(join(SCHEMA_DIR, file), "utf8")));
const id = (name: string) => `https://natsched.dev/schemas/${name}.schema.json`;
const envelopeOf = (op: unknown) => ({ v: 1, from: "c1", ops: [op] });

describe("the schema documents", () => {
  it("are draft 2020-12 documents with ids matching their file names, whose $refs all resolve", () => {
    const files = readdirSync(SCHEMA_DIR).filter((f) => f.endsWith(".json"));
    expect(files.length).toBeGreaterThanOrEqual(10);
    for (const file of files) {
      const doc = JSON.parse(readFileSync(join(SCHEMA_DIR, file), "utf8")) as { $schema: string; $id: string };
      expect(doc.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(doc.$id).toBe(`https://natsched.dev/schemas/${file}`);
    }
    expect(schemas.checkRefs()).toBeGreaterThan(50);
  });

  it("are read by a validator that refuses what it does not understand", () => {
    const set = new SchemaSet();
    set.add({ $id: "https://example.test/a.json", type: "object", if: { required: ["x"] } });
    expect(() => set.validate("https://example.test/a.json", {})).toThrow(/keyword if/);
    set.add({ $id: "https://example.test/b.json", oneOf: [{ type: "number" }, { type: "integer" }] });
    expect(set.validate("https://example.test/b.json", 1).errors).toEqual(["/: matches 2 branches of oneOf"]);
    expect(set.validate("https://example.test/b.json", 1.5).errors).toEqual([]);
    set.add({ $id: "https://example.test/c.json", type: "object", properties: { a: { type: "string" } } });
    expect(set.validate("https://example.test/c.json", { a: "x", b: 1 })).toEqual({ errors: [], undeclared: ["/b"] });
  });
});

describe("schemas and validate-ops agree", () => {
  /** The scheduler's verdict on an op: its boundary check, then (update-graph) its task-spec check. */
  function schedulerRefuses(op: unknown): boolean {
    if (schedulerOpProblem(op) !== undefined) return true;
    if ((op as { op: string }).op !== "update-graph") return false;
    try {
      checkTaskSpecs((op as { tasks: TaskSpec[] }).tasks);
      return false;
    } catch {
      return true;
    }
  }

  it("accepts the valid example of every op, and the examples cover every op the schemas define", () => {
    const scheduler = schemas.validate(id("scheduler"), { v: 1, from: "c1", ops: Object.values(SCHEDULER_OPS) });
    expect(scheduler).toEqual({ errors: [], undeclared: [] });
    const worker = schemas.validate(id("worker"), { v: 1, from: "scheduler", ops: Object.values(WORKER_OPS) });
    expect(worker).toEqual({ errors: [], undeclared: [] });
    for (const op of Object.values(SCHEDULER_OPS)) expect(schedulerRefuses(op)).toBe(false);
    for (const op of Object.values(WORKER_OPS)) expect(workerOpProblem(op)).toBeUndefined();
    const defined = (name: string) => Object.keys((JSON.parse(readFileSync(join(SCHEMA_DIR, `${name}.schema.json`), "utf8")) as { $defs: object }).$defs).sort();
    expect(Object.keys(SCHEDULER_OPS).sort()).toEqual(defined("scheduler"));
    expect(Object.keys(WORKER_OPS).sort()).toEqual(defined("worker"));
  });

  it("refuses the same broken scheduler ops: every field removed or of another type", () => {
    const disagreements: string[] = [];
    let refused = 0;
    let cases = 0;
    for (const [name, example] of Object.entries(SCHEDULER_OPS)) {
      for (const { change, value } of mutants(example, 4)) {
        cases++;
        const bySchema = schemas.validate(id("scheduler"), envelopeOf(value)).errors.length > 0;
        const byScheduler = schedulerRefuses(value);
        if (bySchema) refused++;
        if (bySchema !== byScheduler) disagreements.push(`${name}: ${change}: schema ${bySchema ? "refuses" : "accepts"}, scheduler ${byScheduler ? "refuses" : "accepts"}`);
      }
    }
    expect(disagreements).toEqual([]);
    expect(cases).toBeGreaterThan(1000);
    expect(refused).toBeGreaterThan(cases / 2);
  });

  it("refuses the same broken worker ops", () => {
    const disagreements: string[] = [];
    for (const [name, example] of Object.entries(WORKER_OPS)) {
      for (const { change, value } of mutants(example, 3)) {
        const bySchema = schemas.validate(id("worker"), { v: 1, from: "scheduler", ops: [value] }).errors.length > 0;
        const byWorker = workerOpProblem(value) !== undefined;
        if (bySchema !== byWorker) disagreements.push(`${name}: ${change}: schema ${bySchema ? "refuses" : "accepts"}, worker ${byWorker ? "refuses" : "accepts"}`);
      }
    }
    expect(disagreements).toEqual([]);
  });

  it("refuses the same non-ops, unknown ops and host-only stimuli", () => {
    const bad: unknown[] = [null, 7, "update-graph", [], {}, { op: 7 }, { op: "nope" }, { op: "worker-lost", name: "w1", id: "w1-abc", reason: "x" }, { op: "balance" }, { op: "scheduler-close" }];
    for (const op of bad) {
      expect(schedulerOpProblem(op)).toBeDefined();
      expect(schemas.validate(id("scheduler"), envelopeOf(op)).errors).not.toEqual([]);
    }
    for (const op of [...bad, { op: "execute-done", key: "k" }, { op: "compute-task", key: 1 }]) {
      expect(workerOpProblem(op)).toBeDefined();
      expect(schemas.validate(id("worker"), { v: 1, from: "scheduler", ops: [op] }).errors).not.toEqual([]);
    }
  });

  it("refuses the same broken envelopes", () => {
    const disagreements: string[] = [];
    for (const { change, value } of [...mutants({ v: 1, from: "c1", ops: [] }, 1), { change: "null", value: null }, { change: "array", value: [] }, { change: "v:2", value: { v: 2, from: "c1", ops: [] } }]) {
      const bySchema = schemas.validate(id("envelope"), value).errors.length > 0;
      const byCode = envelopeProblem(value) !== undefined;
      if (bySchema !== byCode) disagreements.push(`${change}: schema ${bySchema}, envelopeProblem ${byCode}`);
    }
    expect(disagreements).toEqual([]);
  });
});

describe("every message of a real run on NATS", () => {
  const CLUSTER = "schemas";
  let server: NatsServer;
  let tap: WireTap;
  let scheduler: SchedulerProcess;
  const workers: WorkerProcess[] = [];
  let client: Client;
  let raw: NatsConnection;
  /** Bodies this test sends on purpose that no schema should accept. */
  const deliberatelyBad = new Set<string>();

  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

  beforeAll(async () => {
    // A small max_payload, so results and scatters go through transfers and chunks.
    server = await NatsServer.start({ config: "max_payload: 65536\n" });
    tap = await WireTap.start(server.url, CLUSTER);
    const nats = { servers: server.url };
    scheduler = await SchedulerProcess.start({ nats, cluster: CLUSTER, log: false, configFile: false, config: { clientReleaseGrace: 0.5, workerSaturation: Infinity } });
    const startWorker = async (name: string) => workers.push(await WorkerProcess.start({ nats, cluster: CLUSTER, name, nthreads: 1, functions: tasks.default, configFile: false }));
    await startWorker("w1");
    client = await connectClient({ servers: server.url, cluster: CLUSTER, log: false });
    raw = await connect({ servers: server.url });

    // Queuing off: all of it lands on w1, and w2 joining makes the scheduler steal.
    const slow = Array.from({ length: 20 }, (_, i) => client.submit<number>("slowInc", [i, 100], { pure: false }));
    await startWorker("w2");
    expect(await client.gather(slow)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const a = client.submit<number>("inc", [1], { workers: ["w1"] });
    const b = client.submit<number>("inc", [2], { workers: ["w2"] });
    expect(await client.submit<number>("add", [a, b], { workers: ["w1"] }).result()).toBe(5);
    await expect(client.submit("fail", ["no good"]).result()).rejects.toThrow(/no good/);
    // Cancelled while it runs (cancel-keys), its dependent with it.
    const doomed = client.submit<number>("slowInc", [0, 600], { pure: false });
    const dependent = client.submit<number>("inc", [doomed]);
    await sleep(50);
    await doomed.cancel();
    await expect(dependent.result()).rejects.toMatchObject({ code: "CANCELLED" });
    // Retried once (a task spec with retries), and fired and forgotten (fire-and-forget).
    await expect(client.submit("fail", ["again"], { retries: 1 }).result()).rejects.toThrow(/again/);
    const forgotten = client.submit<number>("inc", [100]);
    await client.fireAndForget(forgotten);
    forgotten.release();
    const [small] = await client.scatter([41]);
    expect(await client.submit<number>("inc", [small]).result()).toBe(42);
    const [big] = await client.scatter([tasks.ramp(20_000)]);
    expect(await client.submit<number>("total", [big]).result()).toBe(tasks.total(tasks.ramp(20_000)));
    expect(((await client.submit("ramp", [20_000]).result()) as Float64Array).length).toBe(20_000);
    expect((await client.workers()).length).toBe(2);

    // A client with nothing but a NATS connection, as in tests/nats-wire.test.ts.
    const me = "plain-1";
    const reports: { op: string; key: string }[] = [];
    raw.subscribe(`natsched.${CLUSTER}.client.${me}`, { callback: (_e, m) => void reports.push(...(m.json<{ ops: { op: string; key: string }[] }>().ops)) });
    const toScheduler = async (body: unknown) => (await raw.request(`natsched.${CLUSTER}.scheduler`, JSON.stringify(body), { timeout: 5000 })).json<{ replies: { ok: boolean }[] }>();
    const graph = { op: "update-graph", client: me, tasks: [{ key: "px", func: "inc", args: [1], deps: [] }], wants: ["px"] };
    expect((await toScheduler({ v: 1, from: me, ops: [{ op: "client-join", client: me }, graph] })).replies).toEqual([{ ok: true }, { ok: true }]);
    const cycle = [
      { key: "ca", func: "inc", args: [{ $key: "cb" }], deps: ["cb"] },
      { key: "cb", func: "inc", args: [{ $key: "ca" }], deps: ["ca"] },
    ];
    expect((await toScheduler({ v: 1, from: me, ops: [{ op: "update-graph", client: me, tasks: cycle, wants: ["ca"] }] })).replies[0]).toMatchObject({ ok: false });
    const badOp = { v: 1, from: me, ops: [{ op: "release-keys", client: me, keys: "all" }] };
    const badEnvelope = { hello: "world" };
    for (const body of [badOp, badEnvelope]) deliberatelyBad.add(JSON.stringify(body));
    expect((await toScheduler(badOp)).replies[0]).toMatchObject({ ok: false, error: { code: "PROTOCOL" } });
    expect(await toScheduler(badEnvelope)).toEqual({ replies: [], error: expect.stringMatching(/^malformed envelope: /) });
    // A worker op on the bare subject (clients only): refused whatever it says.
    const forged = { v: 1, from: me, ops: [{ op: "task-finished", worker: "w1", id: "w1-forged", key: "px", nbytes: 8, start: 0, stop: 1 }] };
    expect((await toScheduler(forged)).replies[0]).toMatchObject({ ok: false, error: { name: "ForbiddenError", code: "FORBIDDEN" } });
    for (let i = 0; !reports.some((r) => r.key === "px"); i++) {
      if (i > 500) throw new Error("no report for px");
      await sleep(10);
    }
    const holder = (reports.find((r) => r.key === "px") as unknown as { workers: string[] }).workers[0]!;
    const fetched = await raw.request(`natsched.${CLUSTER}.data.${holder}`, JSON.stringify({ op: "get-data", keys: ["px", "nope"], who: me }), { timeout: 5000 });
    expect(fetched.json()).toEqual({ data: { px: 2 }, nbytes: { px: 8 }, missing: ["nope"] });
    const listed = await raw.request(`natsched.${CLUSTER}.data.${holder}`, JSON.stringify({ op: "get-data", keys: ["nope", "px"], who: me, layout: "list" }), { timeout: 5000 });
    expect(listed.json()).toEqual({ values: [null, 2], nbytes: [-1, 8], missing: ["nope"] });
    // Scatter never overwrites: the worker and the scheduler refuse, with KEY_EXISTS and the keys.
    expect((await raw.request(`natsched.${CLUSTER}.data.${holder}`, JSON.stringify({ op: "put-data", data: { px: 999 }, who: me }), { timeout: 5000 })).json()).toMatchObject({ code: "KEY_EXISTS", keys: ["px"] });
    expect((await toScheduler({ v: 1, from: me, ops: [{ op: "update-data", client: me, data: [{ key: "px", nbytes: 8, workers: [holder], existing: true }, { key: "pz", nbytes: 8, workers: [holder], existing: true }] }] })).replies[0]).toMatchObject({ ok: false, error: { code: "KEY_EXISTS", keys: ["pz"] } });
    const unknownData = { op: "get-everything" };
    deliberatelyBad.add(JSON.stringify(unknownData));
    expect((await raw.request(`natsched.${CLUSTER}.data.${holder}`, JSON.stringify(unknownData), { timeout: 5000 })).json()).toMatchObject({ error: expect.any(String) });
    for (const question of [{ op: "who-has", keys: ["px"] }, { op: "status" }, { op: "workers" }]) await raw.request(`natsched.${CLUSTER}.query`, JSON.stringify(question), { timeout: 5000 });
    // Silent past the grace (and 3 heartbeats): released; heard again: told so.
    for (let i = 0; scheduler.actor.core.clients.has(me); i++) {
      if (i > 1000) throw new Error("the silent plain client was not released");
      await sleep(10);
    }
    raw.publish(`natsched.${CLUSTER}.scheduler`, JSON.stringify({ v: 1, from: me, ops: [{ op: "heartbeat-client", client: me }] }));
    for (let i = 0; !reports.some((r) => r.op === "key-cancelled"); i++) {
      if (i > 300) throw new Error(`no key-cancelled; reports ${JSON.stringify(reports)}`);
      await sleep(10);
    }
    await toScheduler({ v: 1, from: me, ops: [{ op: "client-leave", client: me }] });

    // w2 retires while the client still holds results only it has: they are copied to w1
    // (acquire-replicas, add-keys), then it is told to close (close-worker) and unregisters.
    await workers.pop()!.retire("test");
    await client.close();
    await sleep(100);
    await tap.close();
  }, 60_000);

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await raw?.close().catch(() => undefined);
    for (const w of workers) await w.close();
    await scheduler?.close();
    await server?.dispose();
  });

  /** What a message shows of the protocol: "scheduler:update-graph", "data-reply:transfer", ... */
  function labels(m: Tapped): string[] {
    const body = m.body as Record<string, unknown> | undefined;
    if (body === undefined) return [m.kind];
    if (Array.isArray(body.ops)) return (body.ops as { op: string }[]).map((op) => `${m.kind}:${op.op}`);
    if (typeof body.op === "string") return [`${m.kind}:${body.op}`];
    if (m.kind === "scheduler-reply") {
      const replies = (body.replies ?? []) as { ok: boolean }[];
      return body.error !== undefined
        ? ["scheduler-reply:malformed"]
        : replies.map((r) => `scheduler-reply:${r.ok ? "ok" : (r as { error?: { code?: string } }).error?.code === "FORBIDDEN" ? "forbidden" : "refused"}`);
    }
    const shape = ["transfer", "whoHas", "state", "workers", "data", "values", "ok", "error"].find((k) => k in body);
    return [`${m.kind}:${shape ?? "?"}`];
  }

  it("matches the schema of its subject, with no undeclared field", () => {
    expect(tap.strays).toEqual([]);
    const problems: string[] = [];
    let checked = 0;
    for (const m of tap.messages) {
      if (m.body === undefined || deliberatelyBad.has(m.text!)) continue;
      checked++;
      const verdict = schemas.validate(id(m.kind), m.body);
      if (verdict.errors.length > 0 || verdict.undeclared.length > 0) problems.push(`${m.subject} ${m.text}: ${[...verdict.errors, ...verdict.undeclared.map((p) => `undeclared ${p}`)].join("; ")}`);
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(100);
  });

  it("refuses what was sent to be refused", () => {
    const bad = tap.messages.filter((m) => m.text !== undefined && deliberatelyBad.has(m.text));
    expect(bad).toHaveLength(deliberatelyBad.size);
    for (const m of bad) expect(schemas.validate(id(m.kind), m.body).errors).not.toEqual([]);
  });

  it("covered every op, reply and answer the schemas describe (missing-data aside: a peer losing data)", () => {
    const seen = new Set(tap.messages.flatMap(labels));
    const expected = [
      ...Object.keys(SCHEDULER_OPS).filter((op) => op !== "missing-data").map((op) => `scheduler:${op}`),
      ...Object.keys(WORKER_OPS).map((op) => `worker:${op}`),
      "client:key-in-memory",
      "client:key-erred",
      "client:key-cancelled",
      "scheduler-reply:ok",
      "scheduler-reply:refused",
      "scheduler-reply:forbidden",
      "scheduler-reply:malformed",
      "query:workers",
      "query:who-has",
      "query:status",
      "query-reply:workers",
      "query-reply:whoHas",
      "query-reply:state",
      "data:get-data",
      "data:get-chunk",
      "data:put-data",
      "data-reply:data",
      "data-reply:values",
      "data-reply:transfer",
      "data-reply:ok",
      "data-reply:error",
      "chunk",
      "v8",
    ];
    expect(expected.filter((label) => !seen.has(label))).toEqual([]);
  });
});
