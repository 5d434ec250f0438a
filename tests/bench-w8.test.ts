/**
 * W8's graph (bench/w8.ts) and the stored-bytes sampler it measures peak memory with
 * (bench/memory-sampler.ts), on small embedded clusters. Nothing is timed.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startEmbedded, type Harness } from "../bench/harness.js";
import { StoredBytesSampler } from "../bench/memory-sampler.js";
import { w8, w8ExpectedFirstByte, w8Graph, type W8Case } from "../bench/w8.js";
import { sizeof } from "../actors/sizeof.js";

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

/** The chunk keys under `key`, each as often as the tree reaches it. */
function leavesUnder(graph: Record<string, unknown[]>, key: string): string[] {
  const spec = graph[key]!;
  return spec[0] === "chunk" ? [key] : [...leavesUnder(graph, spec[1] as string), ...leavesUnder(graph, spec[2] as string)];
}

describe("W8 graph", () => {
  it.each([1, 2, 3, 5, 8, 2000])("has 2N-1 tasks for N = %i roots, reduced pairwise to one root", (n) => {
    const { graph, root, n: size } = w8Graph(n, 100);
    expect(size).toBe(2 * n - 1);
    expect(Object.keys(graph)).toHaveLength(2 * n - 1);
    const chunks = Object.entries(graph).filter(([, spec]) => spec[0] === "chunk");
    expect(chunks.map(([k, spec]) => [k, spec])).toEqual(Array.from({ length: n }, (_, i) => [`chunk-${i}`, ["chunk", i, 100]]));
    const combines = Object.values(graph).filter((spec) => spec[0] === "combine");
    expect(combines).toHaveLength(n - 1);
    // Every combine takes two keys of the graph, and every key but the root feeds exactly one.
    const consumers = new Map<string, number>();
    for (const spec of combines) {
      expect(spec).toHaveLength(3);
      for (const dep of spec.slice(1) as string[]) {
        expect(graph[dep]).toBeDefined();
        consumers.set(dep, (consumers.get(dep) ?? 0) + 1);
      }
    }
    for (const key of Object.keys(graph)) expect(consumers.get(key) ?? 0).toBe(key === root ? 0 : 1);
    expect(leavesUnder(graph, root).sort()).toEqual(chunks.map(([k]) => k).sort());
  });

  it("pairs neighbours layer by layer, carrying an odd one out up", () => {
    const { graph, root } = w8Graph(5, 1);
    expect(graph["combine-1-0"]).toEqual(["combine", "chunk-0", "chunk-1"]);
    expect(graph["combine-1-1"]).toEqual(["combine", "chunk-2", "chunk-3"]);
    expect(graph["combine-2-0"]).toEqual(["combine", "combine-1-0", "combine-1-1"]);
    expect(graph["combine-3-0"]).toEqual(["combine", "combine-2-0", "chunk-4"]);
    expect(root).toBe("combine-3-0");
  });

  it("refuses a root count that is not a whole number >= 1", () => {
    expect(() => w8Graph(0, 1)).toThrow(RangeError);
    expect(() => w8Graph(2.5, 1)).toThrow(RangeError);
  });
});

describe("stored-bytes sampler", () => {
  it("sums the workers' readings and keeps the peak, calling the budget hook once", () => {
    const over: number[] = [];
    const sampler = new StoredBytesSampler(() => [0], { intervalMs: 50, budgetBytes: 100, onOverBudget: (b) => over.push(b) });
    expect(sampler.record([10, 20, 30])).toBe(60);
    expect(sampler.record([100, 5])).toBe(105);
    expect(sampler.record([1, 2])).toBe(3);
    expect(sampler.record([200])).toBe(200);
    expect(sampler.peak).toBe(200);
    expect(sampler.peakPerWorker).toEqual([200]);
    expect(sampler.last).toBe(3 + 197);
    expect(sampler.samples).toBe(4);
    expect(over).toEqual([105]);
  });

  it("reports the sum of the bytes every worker holds on a tiny embedded run", async () => {
    const h = await startEmbedded({ workers: 2, threadsPerWorker: 1, log: false }, "w8-test");
    harnesses.push(h);
    const sizes = [1_000, 2_000, 3_000, 4_000, 5_000];
    const graph = Object.fromEntries(sizes.map((bytes, i) => [`chunk-${i}`, ["chunk", i, bytes]]));
    const futures = h.client.persist(graph);
    const values = (await h.client.gather(Object.values(futures))) as Uint8Array[];
    expect(values.map((v) => v.length)).toEqual(sizes);
    const sampler = new StoredBytesSampler(() => h.storedBytes(), { intervalMs: 10 });
    const expected = sizes.reduce((s, b) => s + sizeof(new Uint8Array(b)), 0);
    expect(await sampler.sample()).toBe(expected);
    expect(sampler.peakPerWorker).toHaveLength(2);
    // Released keys leave the workers' stores: the next reading falls, the peak stays.
    for (const key of ["chunk-3", "chunk-4"]) futures[key]!.release();
    expect(await h.waitIdle(100)).toBe(false); // three keys are still held
    let now = expected;
    for (let i = 0; i < 200 && now === expected; i++) {
      await new Promise((r) => setTimeout(r, 10));
      now = await sampler.sample();
    }
    expect(now).toBe(sizes.slice(0, 3).reduce((s, b) => s + sizeof(new Uint8Array(b)), 0));
    expect(sampler.peak).toBe(expected);
  });
});

describe("W8 workload", () => {
  const hosts = { transport: "memory" as const, idSuffix: "", labelSuffix: "", start: startEmbedded };
  const base: W8Case = { kind: "W8", roots: 9, chunkBytes: 10_000, scale: 0.001, saturation: 1.1, log: false, reps: 1, budgetBytes: 1e9, intervalMs: 20 };

  it.each([[1.1, "1.1"], ["adaptive", "adaptive"], [Infinity, "inf"]] as const)("reduces to the right root and reports a peak between one chunk and every output (saturation %s)", async (saturation, tag) => {
    const rows = await w8({ ...base, saturation }, hosts);
    const peak = rows.find((r) => r.id === `W8.sat-${tag}.peak`)!;
    const makespan = rows.find((r) => r.id === `W8.sat-${tag}.makespan`)!;
    expect(makespan.status).toBe("ok");
    const chunk = sizeof(new Uint8Array(base.chunkBytes)) / 1e6;
    expect(peak.value!.median).toBeGreaterThanOrEqual(chunk);
    expect(peak.value!.median).toBeLessThanOrEqual((2 * base.roots - 1) * chunk);
    // (0 + ... + 255) + (0 + ... + 43) = 33,586 = 131 x 256 + 50
    expect(w8ExpectedFirstByte(300)).toBe(50);
  });

  it("stops a run whose workers pass the memory budget and says the makespan was not measured", async () => {
    // Any combine starts with both its 10 kB inputs held: past 15,000 bytes, sampled at its start.
    const rows = await w8({ ...base, roots: 40, budgetBytes: 15_000 }, hosts);
    const peak = rows.find((r) => r.id === "W8.sat-1.1.peak")!;
    expect(peak.value!.median * 1e6).toBeGreaterThan(15_000);
    expect(peak.note).toMatch(/lower bound/);
    expect(rows.find((r) => r.id === "W8.sat-1.1.makespan")!.status).toBe("skipped");
  });
});
