/**
 * A scheduler restarted from its JetStream log rebuilds its core from the latest snapshot and
 * the log after it (log/jetstream-snapshot.ts, replay/jetstream-resume.ts): the same core
 * as re-running the whole log; a snapshot that cannot be used is reported and the whole log
 * re-run. End to end: a scheduler process snapshots itself at rest, is SIGKILLed after more
 * work, and the same command resumes from the snapshot; the futures resolve and the log
 * replays clean.
 */
import { isDeepStrictEqual } from "node:util";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { LogCorruptError } from "../machines/errors.js";
import { snapshotCore } from "../log/core-snapshot.js";
import { JetStreamLogSink } from "../log/jetstream-log.js";
import { replayAt } from "../replay/replay-at.js";
import { snapshotPointerSubject, snapshotStreamName, writeSnapshot } from "../log/jetstream-snapshot.js";
import { readLogHeader } from "../log/jetstream-stream.js";
import { MemoryLogSink } from "../log/memory-log.js";
import type { SchedulerHost } from "../replay/replay-cores.js";
import { ReplayEngine } from "../replay/replay-engine.js";
import type { LogRecord, StartRecord } from "../log/types.js";
import { schedulerFingerprint } from "../verify/scheduler-fingerprint.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

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

/** The scheduler records of an embedded run: tasks, dependencies, a failure. */
async function schedulerRecords(): Promise<LogRecord[]> {
  const log = new MemoryLogSink();
  const cluster = await LocalCluster.start({
    workers: [{ name: "a" }, { name: "b", nthreads: 2 }],
    functions: { inc: (x: number) => x + 1, add: (a: number, b: number) => a + b, fail: () => { throw new Error("no"); } },
    log,
  });
  const client = cluster.client();
  const xs = client.map("inc", Array.from({ length: 30 }, (_, i) => i));
  const sums = Array.from({ length: 10 }, (_, i) => client.submit("add", [xs[i], xs[i + 10]]));
  await client.gather(sums);
  await client.submit("fail", []).wait().catch(() => undefined);
  await cluster.close();
  return log.records.filter((r) => r.actor === "scheduler");
}

/** The core's fingerprint but its clock: a resumed scheduler's restart input moves it. */
function state(core: Parameters<typeof schedulerFingerprint>[0]): unknown {
  const fp = schedulerFingerprint(core) as { totals: unknown[] };
  return { ...fp, totals: fp.totals.map((v, i) => (i === 4 ? 0 : v)) };
}

function replayed(records: LogRecord[]) {
  const engine = new ReplayEngine({ actor: "scheduler" });
  for (const record of records) engine.record(record);
  return (engine.runs.get("scheduler")!.host as SchedulerHost).core;
}

/** Writes `records` as the cluster's log, with a snapshot of the core after `records[cut - 1]`. */
async function logWithSnapshot(cluster: string, records: LogRecord[], cut: number): Promise<number> {
  const sink = await JetStreamLogSink.open({ nc, cluster });
  for (const record of records.slice(0, cut)) sink.append(record);
  await sink.flush();
  const after = sink.position("scheduler").storedTail;
  for (const record of records.slice(cut)) sink.append(record);
  await sink.close();
  const jsm = await jetstreamManager(nc);
  const header = (await readLogHeader(jsm, cluster))!;
  await writeSnapshot(nc, jsm, jetstream(nc), cluster, {
    bytes: snapshotCore(replayed(records.slice(0, cut))),
    logCreated: header.created,
    recordSeq: records[cut - 1]!.seq,
    after,
    config: (records[0] as StartRecord).init.config as Record<string, unknown>,
    replicas: 1,
  });
  return records[cut - 1]!.seq;
}

/** A scheduler resuming the cluster's log; it takes no snapshot itself. */
const start = (cluster: string, onError?: (e: unknown) => void) =>
  SchedulerProcess.start({
    nats: { servers: server.url },
    cluster,
    log: { jetstream: true },
    configFile: false,
    service: false,
    snapshots: { idleRecords: Number.MAX_SAFE_INTEGER, busyRecords: Number.MAX_SAFE_INTEGER },
    ...(onError ? { onError } : {}),
  });

describe("resuming from a snapshot (in process)", () => {
  it("restores the snapshot and re-runs only the log after it: the core is the one the whole log gives", async () => {
    const records = await schedulerRecords();
    const stopAt = records.findIndex((r) => r.kind === "stop");
    const crashed = records.slice(0, stopAt); // killed before its stop
    const inputs = crashed.flatMap((r, i) => (r.kind === "input" ? [i] : []));
    const cut = inputs[Math.floor(inputs.length / 2)]!;
    const snapshotSeq = await logWithSnapshot("snap", crashed, cut);
    const errors: unknown[] = [];
    const resumed = await start("snap", (e) => errors.push(e));
    try {
      expect(errors).toEqual([]);
      expect(resumed.resumed).toMatchObject({ snapshot: snapshotSeq, inputs: crashed.slice(cut).filter((r) => r.kind === "input").length });
      expect(isDeepStrictEqual(state(resumed.actor.core), state(replayed(crashed)))).toBe(true);
    } finally {
      await resumed.close();
    }
    const result = await replayAt(`${server.url}/snap`);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
  });

  it("re-runs the whole log when the latest snapshot cannot be used, and says why", async () => {
    const records = await schedulerRecords();
    const crashed = records.slice(0, records.findIndex((r) => r.kind === "stop"));
    await logWithSnapshot("snap-bad", crashed, crashed.findIndex((r, i) => i > 10 && r.kind === "input"));
    // Something else is published as the latest pointer.
    await jetstream(nc).publish(snapshotPointerSubject("snap-bad"), "not a pointer");
    const errors: unknown[] = [];
    const resumed = await start("snap-bad", (e) => errors.push(e));
    try {
      expect(resumed.resumed).toMatchObject({ snapshot: undefined, inputs: crashed.filter((r) => r.kind === "input").length });
      expect(isDeepStrictEqual(state(resumed.actor.core), state(replayed(crashed)))).toBe(true);
      expect(errors.map(String)).toEqual([expect.stringMatching(/scheduler snapshot: .*stream seq \d+: the latest message on natsched\.snap-bad\.snapshot\.scheduler is not a snapshot pointer \(not JSON\): ignored/)]);
      expect(errors[0]).toBeInstanceOf(LogCorruptError);
    } finally {
      await resumed.close();
    }
  });
});

describe("a scheduler process killed after it snapshotted itself", () => {
  it("resumes from the snapshot and the log after it, and every future resolves", async () => {
    const cluster = "snap-e2e";
    const spawn = (label: string, args: string[]) => {
      const p = NatschedProcess.spawn(label, [...args, "--nats", server.url, "--cluster", cluster, "--log", "jetstream"], { NATSCHED_SCHEDULER__WORKER_TTL: "5" });
      processes.push(p);
      return p;
    };
    // Each step has its own bound, well inside the test's, so that a run slowed down by the
    // suite's load fails naming the step that was slow, not with the test's timeout.
    const scheduler = spawn("scheduler", ["scheduler"]);
    await scheduler.waitFor(/natsched scheduler: cluster/, 20_000);
    const worker = spawn("w1", ["worker", "--name", "w1", "--nthreads", "2", "--functions", `${REPO_ROOT}/tests/support/cluster-tasks.ts`]);
    await worker.waitFor(/registered/, 20_000);
    const client = await connectClient({ servers: server.url, cluster });
    try {
      // Enough records for a snapshot at rest (10,000), then rest until it is stored.
      const many = client.map("inc", Array.from({ length: 2500 }, (_, i) => i), { pure: false });
      expect((await client.gather(many, { timeout: 45_000 }))[2499]).toBe(2500);
      const jsm = await jetstreamManager(nc);
      for (let tries = 0; ; tries++) {
        const pointer = await jsm.streams.getMessage(snapshotStreamName(cluster), { last_by_subj: snapshotPointerSubject(cluster) }).catch(() => null);
        if (pointer !== null) break;
        // At rest is 500 ms without a scheduler record; on a loaded machine the worker's
        // heartbeat metrics (recorded when they change a lot) can hold that off a while.
        if (tries > 300) throw new Error("no snapshot stored after 30 s at rest");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // More work after the snapshot, in flight when the scheduler dies.
      const tail = Array.from({ length: 8 }, (_, i) => client.submit<number>("slowInc", [i, 300], { pure: false }));
      await tail[0]!.wait({ timeout: 20_000 });
      expect(await scheduler.stop("SIGKILL")).toBe(-1);
      const second = spawn("scheduler-2", ["scheduler"]);
      await second.waitFor(/resumed from its log: \d+ inputs re-run after the snapshot at record \d+/, 20_000);
      expect(await client.gather(tail, { timeout: 20_000 })).toEqual(Array.from({ length: 8 }, (_, i) => i + 1));
      expect((await client.gather(many.slice(0, 3), { timeout: 10_000 }))).toEqual([1, 2, 3]);
      await client.close();
      expect(await worker.stop("SIGTERM")).toBe(0);
      expect(await second.stop("SIGTERM")).toBe(0);
    } finally {
      await client.close().catch(() => undefined);
    }
    const result = await replayAt(`${server.url}/${cluster}`, { actor: "scheduler" });
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    // The stream keeps the latest snapshot only: its pointer and its parts.
    const stored = await (await jetstreamManager(nc)).streams.info(snapshotStreamName(cluster), { subjects_filter: ">" });
    expect(Object.keys(stored.state.subjects ?? {}).sort()).toEqual([snapshotPointerSubject(cluster), expect.stringMatching(/^natsched\.snap-e2e\.snapshot\.scheduler\.\d+$/)]);
  }, 240_000);
});
