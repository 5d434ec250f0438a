/**
 * Whatever else gets published on the scheduler's log subject (`natsched.<c>.log.scheduler`)
 * neither stops the scheduler nor its restart: garbage, a record line that looks valid but
 * was not written by the log's writer, garbage as the last message before a restart (and
 * garbage on the log's header subject). The
 * scheduler reports each (stderr) and goes on; the log tools report them as `foreign`,
 * located by stream sequence, and otherwise replay the log clean. A second real writer of
 * the log still stops the first: two schedulers never interleave their records.
 * A nats-server of its own; the scheduler and the worker as processes.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { runCli } from "../cli/run.js";
import { LogConflictError, LogForeignMessageError } from "../machines/errors.js";
import { decodeRecordLine, encodeRecordLine } from "../log/codec.js";
import { actorSubject, linkedMsgId, logHeaderSubject, logMsgId, logStreamName } from "../log/jetstream-layout.js";
import { JetStreamLogSink } from "../log/jetstream-log.js";
import { replayAt } from "../replay/replay-at.js";
import { openJetStreamLog } from "../log/jetstream-reader.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;
let server: NatsServer;
let nc: NatsConnection;
const processes: NatschedProcess[] = [];

beforeAll(async () => {
  server = await NatsServer.start();
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await nc?.close();
  await server?.dispose();
});

function spawn(label: string, cluster: string, args: string[]): NatschedProcess {
  const p = NatschedProcess.spawn(label, [...args, "--nats", server.url, "--cluster", cluster, "--log", "jetstream"], { NATSCHED_SCHEDULER__WORKER_TTL: "5" });
  processes.push(p);
  return p;
}

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/** The scheduler log's last message: its stream sequence and the seq of its last record. */
async function schedulerTail(cluster: string): Promise<{ streamSeq: number; lastSeq: number }> {
  const jsm = await jetstreamManager(nc);
  const last = (await jsm.streams.getMessage(logStreamName(cluster), { last_by_subj: actorSubject(cluster, "scheduler") }))!;
  const lines = last.string().trimEnd().split("\n");
  const decoded = decodeRecordLine(lines[lines.length - 1]!);
  if (!decoded.ok) throw new Error(`the scheduler's last message is not the log's: ${decoded.message}`);
  return { streamSeq: last.seq, lastSeq: decoded.record.seq };
}

describe("foreign messages on the scheduler's log subject", () => {
  it("are reported and skipped: the run completes, a restart resumes, and the log replays clean without them", async () => {
    const cluster = "foreign";
    const subject = actorSubject(cluster, "scheduler");
    const scheduler = spawn("scheduler", cluster, ["scheduler"]);
    await scheduler.waitFor(/natsched scheduler: cluster/);
    const worker = spawn("w1", cluster, ["worker", "--name", "w1", "--nthreads", "2", "--functions", FUNCTIONS]);
    await worker.waitFor(/registered/);
    const client = await connectClient({ servers: server.url, cluster });
    const foreignSeqs: number[] = [];
    try {
      const first = Array.from({ length: 20 }, (_, i) => client.submit<number>("slowInc", [i, 100], { pure: false }));
      await first[0]!.wait();

      // Mid-run: bytes that are no record, then a record line that checks out (its CRC, its
      // actor, the seq the log continues at) from someone who is not the log's writer: once
      // with an id that has no link, once linked to a message that is not the log's last.
      const tail = await schedulerTail(cluster);
      // Published through JetStream for its ack: the stream's last seq moves on as the
      // scheduler writes, so only the ack says which seq the garbage got.
      const js = jetstream(nc);
      foreignSeqs.push((await js.publish(subject, new TextEncoder().encode("\u0000 not a record, just bytes \u00ff"))).seq);
      const forged = encodeRecordLine({ actor: "scheduler", seq: tail.lastSeq + 1, t: Date.now() / 1000, kind: "input", event: { op: "release-keys", client: "someone", keys: [] } });
      foreignSeqs.push((await js.publish(subject, forged, { msgID: logMsgId("scheduler", tail.lastSeq + 1) })).seq);
      foreignSeqs.push((await js.publish(subject, forged, { msgID: linkedMsgId(logMsgId("scheduler", tail.lastSeq + 1), tail.streamSeq - 1) })).seq);

      expect(await client.gather(first, { timeout: 30_000 })).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      for (const seq of foreignSeqs) await scheduler.waitFor(new RegExp(`stream seq ${seq}: a foreign message on ${subject.replace(/\./g, "\\.")}`));
      expect(scheduler.log).toMatch(/skipped: it has no message id; it starts "\\u0000 not a record/);
      expect(scheduler.log).toMatch(/skipped: its message id has no link/);
      expect(scheduler.log).toMatch(/skipped: it follows stream seq \d+, and the log's last message is stream seq \d+/);

      // Something on the log's header subject too: the header is its first message, whatever follows.
      nc.publish(logHeaderSubject(cluster), new TextEncoder().encode("not the header"));
      await nc.flush();
      // Killed, garbage is the subject's last message, and the same command starts it again.
      expect(await scheduler.stop("SIGKILL")).toBe(-1);
      foreignSeqs.push((await js.publish(subject, new TextEncoder().encode("garbage after the crash"))).seq);
      const second = spawn("scheduler-2", cluster, ["scheduler"]);
      await second.waitFor(/resumed from its log: \d+ inputs re-run/);
      expect(second.log).toMatch(new RegExp(`stream seq ${foreignSeqs[3]}: a foreign message .* it starts "garbage after the crash"`));
      const more = Array.from({ length: 6 }, (_, i) => client.submit<number>("slowInc", [100 + i, 20], { pure: false }));
      expect(await client.gather(more, { timeout: 30_000 })).toEqual(Array.from({ length: 6 }, (_, i) => 101 + i));
      expect(await client.gather(first, { timeout: 30_000 })).toHaveLength(20);
      await client.close();
      expect(await worker.stop("SIGTERM")).toBe(0);
      expect(await second.stop("SIGTERM")).toBe(0);
    } finally {
      await client.close().catch(() => undefined);
    }

    // The log replays as one run; the foreign messages are listed, each where it is, and nothing else is wrong.
    const location = `${server.url}/${cluster}`;
    const result = await replayAt(location);
    expect(result.ok).toBe(true);
    expect(result.complete).toBe(true);
    expect(result.problems.map((p) => [p.kind, p.actor, p.streamSeq])).toEqual(foreignSeqs.map((seq) => ["foreign", "scheduler", seq]));
    expect(result.actors.scheduler!.stopped).toBe(true);
    expect((await openJetStreamLog(location)).header.meta).toMatchObject({ cluster });
    const replayed = await cli(["replay", location]);
    expect(replayed.code).toBe(0);
    expect(replayed.err).toMatch(/FOREIGN MESSAGES: 4 message\(s\)/);
    expect(replayed.err).not.toMatch(/INCOMPLETE/);
    const summary = await cli(["log", location]);
    expect(summary.out).toMatch(/4 problem\(s\)/);
    for (const seq of foreignSeqs) expect(summary.out).toMatch(new RegExp(`foreign: stream seq ${seq}: a foreign message`));
  }, 90_000);
});

describe("a second writer of the scheduler's log", () => {
  it("stops the scheduler that was writing it: the log is one writer's at a time", async () => {
    const cluster = "second-writer";
    const errors: unknown[] = [];
    const scheduler = await SchedulerProcess.start({ nats: { servers: server.url }, cluster, log: { jetstream: true }, configFile: false, service: false, onError: (e) => errors.push(e) });
    const client = await connectClient({ servers: server.url, cluster });
    await client.close();
    // Another writer takes the log up where it stands (as a restarted scheduler would) and appends to it.
    const other = await JetStreamLogSink.open({ nc, cluster });
    const { nextSeq } = await other.claim("scheduler");
    other.append({ actor: "scheduler", seq: nextSeq, t: Date.now() / 1000, kind: "stop", reason: "the other writer" });
    await other.close();
    // The first scheduler's next record is refused, and it stops rather than interleave.
    const client2 = connectClient({ servers: server.url, cluster, requestTimeout: 2000 }).catch((e: unknown) => e);
    const failure = await scheduler.failed;
    expect(failure).toBeInstanceOf(LogConflictError);
    expect((failure as Error).message).toMatch(/log of scheduler: another writer .* this writer stops/);
    expect(errors.some((e) => e instanceof LogForeignMessageError)).toBe(false);
    await client2;
    const { records, problems } = await (await openJetStreamLog({ nc, cluster })).readAll({ actor: "scheduler" });
    expect(problems).toEqual([]);
    expect(records[records.length - 1]).toMatchObject({ kind: "stop", reason: "the other writer", seq: nextSeq });
  }, 30_000);
});
