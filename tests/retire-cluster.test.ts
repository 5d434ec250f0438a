/**
 * LocalCluster.removeWorker retires a worker gracefully (Dask's retire_workers): its data
 * is moved to other workers before it leaves, and what it was processing finishes
 * elsewhere. killWorker still loses data (tests/cluster-api.test.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { LocalCluster, type LocalClusterOptions } from "../index.js";
import { MemoryLogSink } from "../log/memory-log.js";
import { replay } from "../replay/replay.js";
import type { LogRecord } from "../log/types.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const clusters: LocalCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});

async function start(opts: Partial<LocalClusterOptions> & Pick<LocalClusterOptions, "functions">): Promise<LocalCluster> {
  const cluster = await LocalCluster.start({ log: false, configFile: false, ...opts });
  clusters.push(cluster);
  return cluster;
}

describe("removeWorker: graceful retirement", () => {
  it("scattered data on the removed worker survives: a dependent computed afterwards gets it", async () => {
    const cluster = await start({ workers: 2, functions: { double: (x: number) => 2 * x } });
    const client = cluster.client();
    const [d] = await client.scatter([21], { workers: ["worker-0"] });
    await cluster.removeWorker("worker-0");
    expect(cluster.scheduler.core.workers.has("worker-0")).toBe(false);
    expect(cluster.workers.get("worker-1")!.store.get(d!.key)).toBe(21);
    expect(await client.submit<number>("double", [d!]).result()).toBe(42);
    expect(await d!.result()).toBe(21);
  });

  it("computed results are moved, not recomputed", async () => {
    const calls = new Map<number, number>();
    const cluster = await start({
      workers: 3,
      functions: {
        counted: (x: number) => {
          calls.set(x, (calls.get(x) ?? 0) + 1);
          return x * 10;
        },
        add: (a: number, b: number) => a + b,
      },
    });
    const client = cluster.client();
    const xs = client.map<number>("counted", Array.from({ length: 12 }, (_, i) => i));
    expect(await client.gather(xs)).toEqual(Array.from({ length: 12 }, (_, i) => i * 10));
    const held = xs.filter((x) => cluster.workers.get("worker-0")!.store.has(x.key));
    expect(held.length).toBeGreaterThan(0);
    await cluster.removeWorker("worker-0");
    for (const x of held) expect(cluster.scheduler.core.tasks.get(x.key)?.state).toBe("memory");
    const sums = xs.map((x) => client.submit<number>("add", [x, 1]));
    expect(await client.gather(sums)).toEqual(Array.from({ length: 12 }, (_, i) => i * 10 + 1));
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
    expect(calls.size).toBe(12);
  });

  it("tasks processing on it finish elsewhere", async () => {
    const cluster = await start({
      workers: 2,
      functions: {
        slow: async (x: number) => {
          await sleep(20);
          return x + 1;
        },
      },
    });
    const client = cluster.client();
    const fs = client.map<number>("slow", Array.from({ length: 8 }, (_, i) => i));
    const leaving = cluster.workers.get("worker-0")!;
    for (let i = 0; leaving.core.executing === 0; i++) {
      if (i > 500) throw new Error("worker-0 never ran anything");
      await sleep(2);
    }
    await cluster.removeWorker("worker-0");
    expect(await client.gather(fs)).toEqual(Array.from({ length: 8 }, (_, i) => i + 1));
    for (const f of fs) expect([...cluster.scheduler.core.tasks.get(f.key)!.whoHas].map((ws) => ws.name)).toEqual(["worker-1"]);
  });

  it("removing the last worker still closes it (its data is lost: nowhere to move it)", async () => {
    const cluster = await start({ workers: 1, functions: { double: (x: number) => 2 * x } });
    const client = cluster.client();
    const [d] = await client.scatter([4]);
    await cluster.removeWorker("worker-0", { timeout: 5_000 });
    expect(cluster.scheduler.core.workers.size).toBe(0);
    await expect(d!.result()).rejects.toThrow(/scattered, not computed/);
  });

  it("a run with a retirement replays exactly from its log", async () => {
    const sink = new MemoryLogSink();
    const cluster = await start({ workers: 3, log: sink, functions: { inc: (x: number) => x + 1, add: (a: number, b: number) => a + b } });
    const client = cluster.client();
    const [d] = await client.scatter([100], { workers: ["worker-0"] });
    const xs = client.map<number>("inc", Array.from({ length: 10 }, (_, i) => i));
    await client.gather(xs);
    await cluster.removeWorker("worker-0");
    expect(await client.submit<number>("add", [d!, xs[0]!]).result()).toBe(101);
    await cluster.close();
    const inputs = sink.records.filter((r): r is Extract<LogRecord, { kind: "input" }> => r.kind === "input").map((r) => (r.event as { op: string }).op);
    expect(inputs).toContain("retire-worker");
    expect(inputs).toContain("acquire-replicas");
    expect(inputs).toContain("close-worker");
    const result = await replay(sink.records);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
  });
});
