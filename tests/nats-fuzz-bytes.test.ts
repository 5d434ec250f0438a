/**
 * Malformed at the byte level, on a real nats-server: random bytes, truncated JSON, huge
 * numbers, deep nesting, very long strings and arrays, payloads near the server's limit and
 * fragment headers nobody could honour, sent as requests and as publishes on every natsched
 * subject something listens on (scheduler, worker, client). Every request is answered (never a
 * timeout, never "no responders"), nothing stops, a graph computes right afterwards, and the
 * scheduler's log replays exactly.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { replay } from "../replay/replay.js";
import * as tasks from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";

const CLUSTER = "bytes";
const dir = mkdtempSync(join(tmpdir(), "natsched-fuzz-bytes-"));
const logPath = join(dir, "scheduler.natlog");
let server: NatsServer;
let scheduler: SchedulerProcess;
let worker: WorkerProcess;
let client: Client;
let nc: NatsConnection;
const errors: string[] = [];
const onError = (e: unknown) => void errors.push(String((e as Error)?.message ?? e));

beforeAll(async () => {
  server = await NatsServer.start();
  scheduler = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, log: logPath, configFile: false, onError });
  const functions = { ...tasks.default, unsendable: () => ({ call: () => 1 }) };
  worker = await WorkerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, name: "w", nthreads: 2, functions, configFile: false, onError });
  client = await connectClient({ servers: server.url, cluster: CLUSTER, onError });
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await client?.close();
  await nc?.close();
  await worker?.close();
  await scheduler?.close();
  await server?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const text = (s: string) => new TextEncoder().encode(s);
const envelope = (ops: unknown[]) => JSON.stringify({ v: 1, from: "fuzz", ops });
const deep = (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`;
const graph = (args: string) => `{"v":1,"from":"fuzz","ops":[{"op":"update-graph","client":"fuzz","tasks":[{"key":"deep-${args.length}","func":"inc","args":[${args}],"deps":[]}],"wants":[]}]}`;

/** Bodies made by hand: each a way a parser or what follows it could fail. */
function handMade(): Uint8Array[] {
  return [
    text(""),
    text("{"),
    text('{"v":1,"from":"fuzz","ops":[{"op":"task-finished","worker":"w","id":"forged","key":"k","nbytes":1e999,"start":0,"stop":1}]}'),
    text('{"v":1e999,"from":"fuzz","ops":[]}'),
    text('{"op":"get-data","keys":["k"],"who":"fuzz","encoding":"json","layout":"list","n":123456789012345678901234567890}'),
    text(graph("12345678901234567890123456789")),
    text(graph(deep(400))),
    text(graph(deep(600))),
    text(graph(deep(100_000))),
    text(deep(100_000)),
    text(envelope([{ op: "release-keys", client: "fuzz", keys: Array.from({ length: 60_000 }, (_, i) => `key-${i}`) }])),
    text(JSON.stringify({ op: "get-data", keys: Array.from({ length: 60_000 }, (_, i) => `key-${i}`), who: "fuzz" })),
    text(envelope([{ op: "client-join", client: "x".repeat(800_000) }])),
    text(JSON.stringify({ op: "put-data", who: "fuzz", data: { ["big-" + "k".repeat(100)]: "v".repeat(700_000) } })),
    text(JSON.stringify({ op: "put-data", who: "fuzz", encoding: "json", inline: Buffer.from(`{"data":{"d":${deep(600)}}}`).toString("base64") })),
    new Uint8Array([0xff, 0xfe, 0x00, 0x7b, 0x22]),
  ];
}

/** Random bodies: bytes, JSON values, and envelopes cut short. */
function randomBodies(seed: number, n: number): Uint8Array[] {
  const op = fc.record({ op: fc.constantFrom("update-graph", "task-finished", "register-worker", "compute-task", "get-data", "put-data", "key-in-memory"), key: fc.string(), keys: fc.array(fc.string()), n: fc.double() });
  const body = fc.oneof(
    fc.uint8Array({ maxLength: 300 }),
    fc.jsonValue({ maxDepth: 4 }).map((v) => text(JSON.stringify(v))),
    fc.array(op, { maxLength: 3 }).chain((ops) => {
      const full = envelope(ops);
      return fc.nat({ max: full.length }).map((cut) => text(full.slice(0, cut)));
    }),
  );
  return fc.sample(body, { seed, numRuns: n });
}

function subjects(): string[] {
  const c = `natsched.${CLUSTER}`;
  return [
    `${c}.scheduler`,
    `${c}.scheduler.client.fuzz`,
    `${c}.scheduler.worker.w`,
    `${c}.scheduler.other.x`,
    `${c}.query`,
    `${c}.announce.worker`,
    `${c}.worker.w`,
    `${c}.data.w`,
    `${c}.resync.w`,
    `${c}.announce.scheduler`,
    `${c}.announce.missing.w`,
    `${c}.client.${client.id}`,
  ];
}

describe("bytes nobody should send, on every natsched subject", () => {
  it("are answered when asked, stop nothing, and the cluster computes right afterwards", async () => {
    const bodies = [...handMade(), ...randomBodies(7, 12)];
    const unanswered: string[] = [];
    const frag = headers();
    frag.set("Natsched-Frag", `huge/0/${2 ** 40}`);
    for (const subject of subjects()) {
      for (const [i, body] of bodies.entries()) {
        nc.publish(subject, body);
        try {
          const reply = await nc.request(subject, body, { timeout: 5000 });
          if (reply.data.length === 0) unanswered.push(`${subject} body ${i}: an empty answer`);
        } catch (error) {
          unanswered.push(`${subject} body ${i}: ${String((error as Error).message)}`);
        }
      }
      // A fragment header claiming more fragments than any message may have: refused at once.
      try {
        const reply = await nc.request(subject, text("{}"), { timeout: 5000, headers: frag });
        expect(reply.string(), subject).toMatch(/"error":".*(fragments exceeds|which was dropped|not requests)/);
      } catch (error) {
        unanswered.push(`${subject} huge fragment header: ${String((error as Error).message)}`);
      }
    }
    expect(unanswered).toEqual([]);
    // Well-formed, on subjects natsched only publishes on: answered all the same.
    const c = `natsched.${CLUSTER}`;
    const ask = async (subject: string, body: unknown) => (await nc.request(subject, JSON.stringify(body), { timeout: 5000 })).json<unknown>();
    expect(await ask(`${c}.client.${client.id}`, { v: 1, from: "scheduler", ops: [{ op: "key-cancelled", key: "nobody-wants-it", reason: "fuzz" }] })).toEqual({ replies: [{ ok: true }] });
    expect(await ask(`${c}.announce.scheduler`, { v: 1, op: "scheduler-started" })).toEqual({ error: expect.stringMatching(/takes announcements of a scheduler's new run, published, not requests: nothing was done/) });
    expect(await ask(`${c}.announce.missing.w`, { v: 1, op: "worker-missing", name: "w", id: worker.actor.id })).toEqual({ error: expect.stringMatching(/not requests: nothing was done/) });
    expect(errors.join("\n")).toMatch(/nests arrays and objects deeper than 512 levels/);
    expect(scheduler.actor.core.state).toBe("running");
    expect(worker.actor.core.state).toBe("running");
    // A result no encoding can carry fails its gather with the holder's reason, instead of asking again for ever.
    await expect(client.submit("unsendable", []).result({ timeout: 20_000 })).rejects.toMatchObject({ code: "PROTOCOL", message: expect.stringMatching(/cannot serialize/) });
    const xs = Array.from({ length: 20 }, (_, i) => client.submit<number>("inc", [i]));
    expect(await client.submit<number>("add", xs).result()).toBe(210);
    await scheduler.close();
    const replayed = await replay(logPath);
    expect(replayed.problems).toEqual([]);
    expect(Object.values(replayed.actors).map((a) => a.divergence ?? a.threw ?? a.halted ?? "ok")).toEqual(["ok"]);
  });
});
