/**
 * The scheduler's idle and saturated sets (Dask's check_idle_saturated), as work stealing
 * sees them: kept up to date on every change of a worker's load.
 */
import { describe, expect, it } from "vitest";
import type { SimView } from "../sim.js";
import { simulateDask as simulate } from "./sim-helpers.js";

const names = (set: ReadonlySet<{ name: string }>) => [...set].map((w) => w.name).sort();
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("idle and saturated workers", () => {
  it("a worker with a backlog is saturated, an empty one idle; both change as the backlog drains", () => {
    const seen = new Map<number, { idle: string[]; saturated: string[] }>();
    const probe = (at: number) => ({ at, probe: (v: SimView) => seen.set(at, { idle: names(v.scheduler.idle), saturated: names(v.scheduler.saturated) }) });
    simulate(
      {
        config: { workStealing: false, defaultTaskDurations: { f: 1 } },
        workers: [{ name: "a" }, { name: "b" }, { name: "c", nthreads: 2 }],
        tasks: [...range(6).map((i) => ({ key: `f-${i}`, duration: 1, workers: ["a"] })), { key: "f-9", duration: 3, workers: ["b"] }],
      },
      { probes: [probe(0.5), probe(4.5), probe(5.5), probe(7)] },
    );
    // 0.5 s (every task estimated at 1 s): a has 6 on one thread, 5 of them waiting, 5 s of
    // backlog, over 0.4 s and over 1.9 x the average of 7 s / 4 threads: saturated. b runs its
    // one task with 1 s, not under half the average: neither. c has nothing: idle.
    expect(seen.get(0.5)).toEqual({ idle: ["c"], saturated: ["a"] });
    // 4.5 s: b is done (idle); a has 2 tasks, 1 s waiting against an average of 2/4: still saturated.
    expect(seen.get(4.5)).toEqual({ idle: ["b", "c"], saturated: ["a"] });
    // 5.5 s: a runs its last task: one task on one thread is not a backlog, and not idle either.
    expect(seen.get(5.5)).toEqual({ idle: ["b", "c"], saturated: [] });
    expect(seen.get(7)).toEqual({ idle: ["a", "b", "c"], saturated: [] });
  });
});
