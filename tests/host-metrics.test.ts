/**
 * Heartbeats carry the worker process's memory and event-loop delay; the scheduler records
 * them as `host-metrics` inputs, rate-limited; `natsched log --metrics` reads them back, and
 * a log with them replays exactly.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { HostSampler } from "../actors/host/host-sampler.js";
import { METRICS_LOG_INTERVAL, MetricsGate } from "../actors/host/metrics-gate.js";
import { LocalCluster } from "../actors/local-cluster.js";
import { runCli } from "../cli/run.js";
import { readLogSync } from "../log/reader.js";
import type { InputRecord } from "../log/types.js";
import type { HostMetrics } from "../machines/protocol.js";
import { replay } from "../replay/replay.js";
import type { HostMetricsRow } from "../tools/host-metrics.js";
import { until } from "./support/until.js";

const steady: HostMetrics = { rss: 100e6, heapUsed: 40e6, loopP99: 1, loopMax: 3 };

describe("the metrics gate", () => {
  it("lets in a worker's first, then one per interval, sooner on a large change", () => {
    const gate = new MetricsGate();
    const admitted: number[] = [];
    // 0.5 s heartbeats for 20 s, steady: the first and one every METRICS_LOG_INTERVAL seconds.
    for (let t = 0; t <= 20; t += 0.5) if (gate.admit("a", steady, t)) admitted.push(t);
    expect(admitted).toEqual([0, 5, 10, 15, 20]);
    expect(METRICS_LOG_INTERVAL).toBe(5);
    // Another worker has its own clock.
    expect(gate.admit("b", steady, 20.5)).toBe(true);
    // Memory up by over a quarter, or a loop stall past 100 ms (double the last): at once.
    expect(gate.admit("a", { ...steady, rss: 130e6 }, 20.5)).toBe(true);
    expect(gate.admit("a", { ...steady, rss: 131e6 }, 21)).toBe(false);
    expect(gate.admit("a", { ...steady, rss: 131e6, loopMax: 156 }, 21.5)).toBe(true);
    expect(gate.admit("a", { ...steady, rss: 131e6, loopMax: 160 }, 22)).toBe(false);
  });
});

describe("the host sampler", () => {
  it("is one per process, shared by its workers, and hands a fresh sample out again to a round's later beats", () => {
    const a = HostSampler.acquire();
    const b = HostSampler.acquire();
    expect(b).toBe(a);
    const first = a.sample(60_000);
    expect(b.sample(60_000)).toBe(first);
    expect(b.sample(0)).not.toBe(first);
    expect(first.rss).toBeGreaterThan(first.heapUsed);
    a.release();
    expect(HostSampler.acquire()).toBe(b);
    b.release();
    b.release();
    const c = HostSampler.acquire();
    expect(c).not.toBe(a);
    c.release();
  });
});

describe("host metrics of an embedded run", () => {
  const dir = mkdtempSync(join(tmpdir(), "natsched-host-metrics-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "run.natlog");
  const heard: boolean[] = [];

  beforeAll(async () => {
    const admit = MetricsGate.prototype.admit;
    const spy = vi.spyOn(MetricsGate.prototype, "admit").mockImplementation(function (this: MetricsGate, worker, metrics, t) {
      const ok = admit.call(this, worker, metrics, t);
      heard.push(ok);
      return ok;
    });
    const cluster = await LocalCluster.start({ workers: 2, functions: { inc: (x: number) => x + 1 }, log: { path }, configFile: false, config: { heartbeatInterval: 0.02 } });
    try {
      await cluster.client().submit<number>("inc", [1]).result();
      // Heartbeats from both workers, many more than the interval lets into the log.
      await until(() => heard.length >= 40);
    } finally {
      await cluster.close();
      spy.mockRestore();
    }
  }, 30_000);

  const recorded = () => readLogSync(path).records.filter((r): r is InputRecord => r.kind === "input" && r.event.op === "host-metrics");

  it("are recorded by the scheduler, rate-limited, with each worker's first", () => {
    const inputs = recorded();
    expect(inputs.every((r) => r.actor === "scheduler")).toBe(true);
    expect(inputs).toHaveLength(heard.filter(Boolean).length);
    expect(inputs.length).toBeLessThan(heard.length);
    expect(new Set(inputs.map((r) => r.event.worker))).toEqual(new Set(["worker-0", "worker-1"]));
    for (const { event } of inputs) {
      expect(event.rss as number).toBeGreaterThan(event.heapUsed as number);
      expect(event.loopMax as number).toBeGreaterThanOrEqual(event.loopP99 as number);
    }
  });

  it("are read back by natsched log --metrics", async () => {
    const out: string[] = [];
    expect(await runCli(["log", path, "--metrics", "--json"], { out: (t) => out.push(t), err: () => undefined })).toBe(0);
    const rows = JSON.parse(out.join("\n")) as HostMetricsRow[];
    expect(rows).toEqual(recorded().map((r) => ({ t: r.t, worker: r.event.worker, rss: r.event.rss, heapUsed: r.event.heapUsed, loopP99: r.event.loopP99, loopMax: r.event.loopMax })));
    const table: string[] = [];
    await runCli(["log", path, "--metrics"], { out: (t) => table.push(t), err: () => undefined });
    expect(table.join("\n")).toMatch(/rss MB .* loop max/);
    expect(table.join("\n").split("\n")).toHaveLength(rows.length + 1);
  });

  it("replay exactly", async () => {
    const result = await replay(path);
    expect(result.ok).toBe(true);
    expect(result.stats.inputs).toBeGreaterThanOrEqual(recorded().length);
  });
});
