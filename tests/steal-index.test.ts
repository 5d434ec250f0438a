/**
 * The stealable index (machines/scheduler/stealing.ts) holds processing tasks only: a task
 * that finishes, errs, is released or moves leaves its bin, so a balancing pass never walks
 * stale entries and the index does not grow with the history of a worker.
 */
import { describe, expect, it } from "vitest";
import { LocalCluster } from "../index.js";
import type { SimTaskSpec } from "../sim.js";
import { simulateDask as simulate } from "./sim-helpers.js";

describe("stealable index", () => {
  it("is empty once nothing is processing (simulator, with steals on the way)", () => {
    const tasks: SimTaskSpec[] = Array.from({ length: 400 }, (_, i) => ({ key: `inc-${i}`, duration: 0.01 + (i % 7) * 0.003 }));
    let during = 0;
    let after: { binned: number; levelled: number } | undefined;
    const result = simulate(
      {
        workers: [{ name: "a", nthreads: 2 }, { name: "b" }, { name: "c", joinAt: 0.5 }],
        config: { defaultTaskDurations: { inc: 0.01 }, workerSaturation: Infinity },
        tasks,
      },
      {
        probes: [
          { at: 0.3, probe: (view) => (during = view.scheduler.stealing!.binnedCount) },
          { at: 100, probe: (view) => (after = { binned: view.scheduler.stealing!.binnedCount, levelled: view.scheduler.stealing!.stealableCount }) },
        ],
      },
    );
    expect(Object.values(result.tasks).every((t) => t.state === "memory")).toBe(true);
    expect(result.makespan).toBeLessThan(100);
    expect(during).toBeGreaterThan(0);
    expect(result.steals.length).toBeGreaterThan(0);
    expect(after).toEqual({ binned: 0, levelled: 0 });
  });

  it("is empty after rounds of work on the embedded cluster are released", async () => {
    const cluster = await LocalCluster.start({ workers: 2, functions: { inc: (x: number) => x + 1 }, log: false, configFile: false });
    try {
      const client = cluster.client();
      for (let round = 0; round < 3; round++) {
        const futures = client.map("inc", Array.from({ length: 500 }, (_, i) => i + round * 1000));
        await client.gather(futures);
        for (const f of futures) f.release();
      }
      await cluster.flush();
      const stealing = cluster.scheduler.core.stealing!;
      expect(stealing.binnedCount).toBe(0);
      expect(stealing.stealableCount).toBe(0);
    } finally {
      await cluster.close();
    }
  });
});
