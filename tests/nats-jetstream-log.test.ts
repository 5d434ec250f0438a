/**
 * The event log in JetStream: records written by JetStreamLogSink read back as written (a
 * record larger than max_payload too), de-duplication of re-sent messages, one writer per
 * actor, file -> JetStream -> file export byte for byte, and the log tools (log, story,
 * replay) on a JetStream location. A nats-server of its own with max_payload 64 KiB.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../cli/run.js";
import { LocalCluster } from "../actors/local-cluster.js";
import { BadOptionError, LogConflictError } from "../machines/errors.js";
import { encodeRecordLine } from "../log/codec.js";
import { exportLog } from "../tools/jetstream-export.js";
import { actorSubject, linkedMsgId, logMsgId, PART_HEADER } from "../log/jetstream-layout.js";
import { JetStreamLogSink } from "../log/jetstream-log.js";
import { openLogAt } from "../log/jetstream-open.js";
import { replayAt } from "../replay/replay-at.js";
import { openJetStreamLog } from "../log/jetstream-reader.js";
import { readLogSync } from "../log/reader.js";
import type { LogRecord } from "../log/types.js";
import { NatsServer } from "./support/nats-server.js";

let server: NatsServer;
let nc: NatsConnection;
const dir = mkdtempSync(join(tmpdir(), "natsched-jslog-"));
let clusterCount = 0;
const freshCluster = () => `jslog${++clusterCount}`;
const at = (cluster: string) => `${server.url}/${cluster}`;

beforeAll(async () => {
  server = await NatsServer.start({ config: "max_payload: 65536\n" });
  nc = await connect({ servers: server.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
});

afterAll(async () => {
  await nc?.close();
  await server?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

function transition(actor: string, seq: number, id: string): LogRecord {
  return { actor, seq, t: 1000 + seq / 100, kind: "transition", machine: "task", id, event: "ASSIGN", from: "waiting", to: "processing.assigned" };
}

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/** A small run of the embedded cluster, logged to `log`. */
async function run(log: { path: string; format?: "binary" | "jsonl" } | JetStreamLogSink): Promise<void> {
  const cluster = await LocalCluster.start({
    workers: [{ name: "a", nthreads: 2 }, { name: "b" }],
    functions: { inc: (x: number) => x + 1, add: (a: number, b: number) => a + b },
    log,
  });
  const client = cluster.client();
  const xs = client.map("inc", [1, 2, 3, 4, 5, 6]);
  const total = client.submit("add", [xs[0], xs[5]], { key: "total" });
  expect(await total.result()).toBe(9);
  await cluster.close();
}

describe("JetStreamLogSink and the JetStream reader", () => {
  it("reads back every record as written, a record larger than max_payload and several actors included", async () => {
    const cluster = freshCluster();
    const sink = await JetStreamLogSink.open({ nc, cluster, meta: { purpose: "round trip" } });
    const big: LogRecord = { actor: "scheduler", seq: 1, t: 5, kind: "input", event: { op: "update-graph", client: "c", tasks: [], wants: ["x".repeat(200_000)] } };
    const written: LogRecord[] = [
      { actor: "scheduler", seq: 0, t: 1, kind: "start", role: "scheduler", init: { cluster } },
      { actor: "worker.w1", seq: 0, t: 1, kind: "start", role: "worker", init: { name: "w1" } },
      big,
      ...Array.from({ length: 2000 }, (_, i) => transition("scheduler", i + 2, `k${i}`)),
      ...Array.from({ length: 500 }, (_, i) => transition("worker.w1", i + 1, `k${i}`)),
    ];
    for (const record of written) sink.append(record);
    await sink.close();
    expect(sink.durable).toBe(written.length);

    const reader = await openJetStreamLog(at(cluster));
    expect(reader.header.meta).toMatchObject({ cluster, purpose: "round trip" });
    const { records, problems } = await reader.readAll();
    expect(problems).toEqual([]);
    const byActor = (rs: LogRecord[], actor: string) => rs.filter((r) => r.actor === actor);
    for (const actor of ["scheduler", "worker.w1"]) expect(byActor(records, actor)).toEqual(byActor(written, actor));
    expect((await reader.readAll({ actor: "worker.w1" })).records).toEqual(byActor(written, "worker.w1"));
    // Batched: far fewer messages than records (the 200 kB record in parts of < 64 KiB).
    const si = await (await jetstreamManager(nc)).streams.info(`NATSCHED_LOG_${cluster}`);
    expect(si.state.messages).toBeLessThan(written.length / 10);
  });

  it("stores a re-sent message once, and survives a server restart mid-write without losing or doubling a record", async () => {
    const cluster = freshCluster();
    const sink = await JetStreamLogSink.open({ nc, cluster, ackTimeout: 1000 });
    const claim = await sink.claim("scheduler");
    expect(claim.nextSeq).toBe(0);
    sink.append({ actor: "scheduler", seq: 0, t: 0, kind: "start", role: "scheduler", init: {} });
    await sink.flush();
    // The same message published again (a retry after a lost ack): the server answers duplicate.
    const body = encodeRecordLine({ actor: "scheduler", seq: 0, t: 0, kind: "start", role: "scheduler", init: {} });
    const again = await jetstream(nc).publish(actorSubject(cluster, "scheduler"), body, { msgID: linkedMsgId(logMsgId("scheduler", 0), 0) });
    expect(again.duplicate).toBe(true);

    let seq = 1;
    const write = (n: number) => {
      for (const end = seq + n; seq < end; seq++) sink.append(transition("scheduler", seq, `k${seq}`));
    };
    write(1000);
    await server.stop(); // with messages in flight: their acks are lost
    write(1000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sink.durable).toBeLessThan(2001);
    await server.restart();
    write(1000);
    await sink.close();
    const { records, problems } = await (await openJetStreamLog(at(cluster))).readAll();
    expect(problems).toEqual([]);
    expect(records.map((r) => r.seq)).toEqual(Array.from({ length: 3001 }, (_, i) => i));
  }, 30_000);

  it("has one writer per actor: a second writer gets LogConflictError, and a writer must continue the actor's seqs", async () => {
    const cluster = freshCluster();
    const first = await JetStreamLogSink.open({ nc, cluster });
    await first.claim("scheduler");
    for (let i = 0; i < 10; i++) first.append(transition("scheduler", i, `a${i}`));
    await first.flush();

    const errors: unknown[] = [];
    const second = await JetStreamLogSink.open({ nc, cluster, onError: (e) => errors.push(e) });
    expect((await second.claim("scheduler")).nextSeq).toBe(10);
    // The first writer goes on; the second, writing after it, is refused.
    for (let i = 10; i < 20; i++) first.append(transition("scheduler", i, `a${i}`));
    await first.flush();
    second.append(transition("scheduler", 10, "intruder"));
    const refused = await second.flush().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LogConflictError);
    expect((refused as Error).message).toMatch(/another writer/);
    expect(errors).toEqual([refused]);
    await first.close();
    await second.close().catch(() => undefined);

    // A writer that starts its records anywhere but where the stream has them is refused too.
    const third = await JetStreamLogSink.open({ nc, cluster });
    third.append(transition("scheduler", 0, "again"));
    const restarted = await third.flush().catch((e: unknown) => e);
    expect(restarted).toBeInstanceOf(LogConflictError);
    expect((restarted as Error).message).toMatch(/continues at seq 20/);
    await third.close().catch(() => undefined);

    const { records, problems } = await (await openJetStreamLog(at(cluster))).readAll();
    expect(problems).toEqual([]);
    expect(records.map((r) => (r as { id: string }).id)).toEqual(Array.from({ length: 20 }, (_, i) => `a${i}`));
  });

  it("voids a large record whose writer died between its parts; without the marker the reader reports it torn", async () => {
    const cluster = freshCluster();
    const sink = await JetStreamLogSink.open({ nc, cluster });
    sink.append(transition("scheduler", 0, "before"));
    await sink.close();
    // A writer that died after 2 of the 3 parts of record 1 (each part linked to the log's message before it):
    const js = jetstream(nc);
    const subject = actorSubject(cluster, "scheduler");
    const jsm = await jetstreamManager(nc);
    let link = (await jsm.streams.getMessage(`NATSCHED_LOG_${cluster}`, { last_by_subj: subject }))!.seq;
    for (const index of [0, 1]) {
      const h = headers();
      h.set(PART_HEADER, `${index}/3`);
      link = (await js.publish(subject, "x".repeat(1000), { msgID: linkedMsgId(logMsgId("scheduler", 1, index), link), headers: h })).seq;
    }
    const torn = await (await openJetStreamLog(at(cluster))).readAll();
    expect(torn.problems.map((p) => p.kind)).toEqual(["torn"]);
    expect(torn.records).toHaveLength(1);

    const next = await JetStreamLogSink.open({ nc, cluster });
    expect((await next.claim("scheduler")).nextSeq).toBe(1);
    next.append(transition("scheduler", 1, "after"));
    await next.close();
    const { records, problems } = await (await openJetStreamLog(at(cluster))).readAll();
    expect(problems).toEqual([]);
    expect(records.map((r) => (r as { id: string }).id)).toEqual(["before", "after"]);
  });

  it("reports gaps, duplicates and damaged records as the file reader does", async () => {
    const cluster = freshCluster();
    const lines = [
      encodeRecordLine(transition("scheduler", 0, "a")),
      encodeRecordLine(transition("scheduler", 1, "b")).replace(/^......../, "00000000"),
      encodeRecordLine(transition("scheduler", 3, "d")),
      encodeRecordLine(transition("scheduler", 3, "d")),
    ];
    const file = join(dir, "damaged.natlog");
    writeFileSync(file, `{"format":"natsched-log","v":1,"created":1,"meta":{}}\n${lines.join("")}`);
    const sink = await JetStreamLogSink.open({ nc, cluster });
    await sink.close();
    await jetstream(nc).publish(actorSubject(cluster, "scheduler"), lines.join(""), { msgID: linkedMsgId(logMsgId("scheduler", 0), 0) });
    const fromStream = await (await openJetStreamLog(at(cluster))).readAll();
    const fromFile = readLogSync(file);
    expect(fromStream.records).toEqual(fromFile.records);
    const shape = (ps: readonly { kind: string; actor?: string; expected?: number; found?: number }[]) => ps.map((p) => [p.kind, p.expected, p.found]);
    expect(shape(fromStream.problems)).toEqual(shape(fromFile.problems));
    expect(shape(fromFile.problems)).toEqual([
      ["checksum", undefined, undefined],
      ["gap", 1, 3],
      ["duplicate", 4, 3],
    ]);
  });
});

describe("where there is no log", () => {
  it("says so clearly: a server without JetStream, a cluster without a log, a location that is not one", async () => {
    const plain = await NatsServer.start({ jetstream: false });
    const plainNc = await connect({ servers: plain.url });
    try {
      await expect(JetStreamLogSink.open({ nc: plainNc, cluster: "x" })).rejects.toThrow(/JetStream is not available .*-js/);
    } finally {
      await plainNc.close();
      await plain.dispose();
    }
    await expect(openJetStreamLog(at("nosuchcluster"))).rejects.toThrow(/no event log of cluster nosuchcluster/);
    await expect(openJetStreamLog(`${server.url}/bad.name`)).rejects.toThrow(BadOptionError);
    const { code, err } = await cli(["replay", at("nosuchcluster")]);
    expect(code).toBe(1);
    expect(err).toMatch(/no event log of cluster nosuchcluster/);
  });
});

describe("the log tools on a JetStream log", () => {
  it("exports a file log to JetStream and back, byte for byte", async () => {
    const original = join(dir, "run.natlog");
    await run({ path: original, format: "jsonl" }); // a file exported from JetStream is JSON lines
    const cluster = freshCluster();
    const there = await exportLog(original, at(cluster));
    expect(there.problems).toEqual([]);
    expect(there.records).toBe(readLogSync(original).records.length);
    const back = join(dir, "back.natlog");
    const { code, out } = await cli(["log", "export", at(cluster), back]);
    expect(code).toBe(0);
    expect(out).toMatch(/copied \d+ records of 4 actor\(s\)/); // the scheduler, two workers, the client
    expect(readFileSync(back)).toEqual(readFileSync(original));
    // A second export into the same (now full) log is refused.
    await expect(exportLog(original, at(cluster))).rejects.toThrow(/already holds records/);
  });

  it("replays, summarises and tells stories from a log the embedded cluster wrote to JetStream", async () => {
    const cluster = freshCluster();
    const sink = await JetStreamLogSink.open({ nc, cluster });
    await run(sink);
    const result = await replayAt(at(cluster));
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(Object.keys(result.actors).sort()).toEqual([expect.stringMatching(/^client\.client-[0-9a-f]{16}$/), "scheduler", "worker.a", "worker.b"]);
    expect(result.stats.transitions).toBeGreaterThan(50);

    const replayed = await cli(["replay", at(cluster)]);
    expect(replayed.code).toBe(0);
    const summary = await cli(["log", at(cluster)]);
    expect(summary.code).toBe(0);
    expect(summary.out).toMatch(/scheduler\s+\d+ records/);
    expect(summary.out).toMatch(/no problems/);
    const story = await cli(["story", at(cluster), "total"]);
    expect(story.code).toBe(0);
    expect(story.out).toMatch(/story of total/);
    expect(story.out).toMatch(/processing.* -> memory/);
    const inspected = await cli(["inspect", at(cluster), "--key", "total"]);
    expect(inspected.code).toBe(0);
    expect(inspected.out).toMatch(/scheduler\s+task\s+total\s+(memory|forgotten)/);
    const reader = await openLogAt(at(cluster));
    expect(reader.path).toBe(at(cluster));
  });
});
