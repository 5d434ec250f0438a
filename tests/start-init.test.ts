/**
 * A start record's `init` is written by one function per role and read back by its pair
 * (log/start-init.ts): what a live worker, a simulated one and a scheduler write, through
 * the log's JSON, reads back as the typed init their cores were built with.
 */
import { afterAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../index.js";
import { readSchedulerStart, readWorkerStart, schedulerStartInit, workerStartInit } from "../log/start-init.js";
import { resolveConfig } from "../machines/config.js";
import type { WorkerInit } from "../machines/worker/inputs.js";
import { decodeRecordLine, encodeRecordLine } from "../log/codec.js";
import { MemoryLogSink } from "../log/memory-log.js";
import type { LogRecord, StartRecord } from "../log/types.js";
import { simulate } from "../sim.js";

/** The record as a log file holds it and a reader gets it back. */
function throughTheLog(record: LogRecord): StartRecord {
  const decoded = decodeRecordLine(encodeRecordLine(record).trimEnd());
  if (!decoded.ok) throw new Error(decoded.message);
  return decoded.record as StartRecord;
}

function starts(records: readonly LogRecord[], role: string): StartRecord[] {
  return records.filter((r): r is StartRecord => r.kind === "start" && r.role === role).map(throughTheLog);
}

describe("a worker's init, written and read back", () => {
  let cluster: LocalCluster | undefined;
  afterAll(async () => cluster?.close());

  it("a live worker's start record reads back as its core's init, in the fields' usual order", async () => {
    const log = new MemoryLogSink();
    cluster = await LocalCluster.start({ workers: [{ name: "w1", nthreads: 3 }], functions: {}, log, configFile: false });
    const worker = cluster.workers.get("w1")!;
    const [start] = starts(log.records, "worker");
    const init: WorkerInit = readWorkerStart(start!.init);
    expect(init).toEqual(worker.core.init);
    expect(init).toMatchObject({ name: "w1", nthreads: 3 });
    // The shape logs have always had (LocalCluster passes the config's bandwidth), the
    // per-holder fetch queues every new worker keeps, and no round trips measured (its tasks
    // run on the thread its scheduler runs on).
    expect(Object.keys(start!.init)).toEqual(["name", "id", "nthreads", "transferIncomingCountLimit", "bandwidth", "fetchByHolder", "roundTrips"]);
    expect(init).toMatchObject({ fetchByHolder: true, roundTrips: false });

    const [scheduler] = starts(log.records, "scheduler");
    expect(readSchedulerStart(scheduler!.init)).toEqual({ cluster: cluster.name, config: cluster.config });
  });

  it("a simulated worker's start record reads back as its core's init", () => {
    let seen: WorkerInit | undefined;
    const result = simulate(
      { workers: [{ name: "a", nthreads: 2 }], tasks: [{ key: "x", duration: 1 }] },
      { probes: [{ at: 0.5, probe: (view) => (seen = view.workers.get("a")!.init) }] },
    );
    const [start] = starts(result.log, "worker");
    expect(seen).toBeDefined();
    expect(readWorkerStart(start!.init)).toEqual(seen);
    expect(seen!.fetchByHolder).toBe(true);
  });

  it("optional fields are written only when set, and come back", () => {
    const bare: WorkerInit = { name: "w", id: "w-1", nthreads: 1, transferIncomingCountLimit: 4 };
    expect(workerStartInit(bare)).toEqual(bare);
    expect(readWorkerStart(JSON.parse(JSON.stringify(workerStartInit(bare))))).toEqual(bare);
    const full: WorkerInit = { ...bare, bandwidth: 5e6, maxTombstones: 7, fetchByHolder: true, roundTrips: false };
    expect(readWorkerStart(JSON.parse(JSON.stringify(workerStartInit(full))))).toEqual(full);
  });

  it("a record without what a worker needs is refused, saying what is missing", () => {
    expect(() => readWorkerStart({ name: "w", id: "w-1", nthreads: "2" })).toThrow("a worker's start record needs name, id, nthreads and transferIncomingCountLimit");
  });
});

describe("a scheduler's init, written and read back", () => {
  it("an infinite setting goes through JSON as the string Infinity and comes back a number", () => {
    const config = resolveConfig({ workerTtl: Infinity, workerSaturation: Infinity });
    const init = JSON.parse(JSON.stringify(schedulerStartInit("c1", config))) as Record<string, unknown>;
    expect((init.config as Record<string, unknown>).workerTtl).toBe("Infinity");
    expect(readSchedulerStart(init)).toEqual({ cluster: "c1", config });
  });

  it("a recorded config without workerSaturation is from before adaptive became the default: Dask's 1.1", () => {
    const { workerSaturation: _, ...older } = schedulerStartInit("c1", resolveConfig({})).config as Record<string, unknown>;
    expect(readSchedulerStart({ cluster: "c1", config: older }).config.workerSaturation).toBe(1.1);
    expect(resolveConfig({}).workerSaturation).toBe("adaptive");
  });

  it("a record without a config is refused", () => {
    expect(() => readSchedulerStart({ cluster: "c1" })).toThrow("the scheduler's start record has no config");
  });
});
