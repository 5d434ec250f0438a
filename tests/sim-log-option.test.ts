/** simulate()'s `log` option: the log kept in memory (default), streamed to a file, or not kept. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FileLogSink, readLogSync, replay } from "../replay/index.js";
import { simulate, type Scenario } from "../sim.js";

const tree: Scenario = {
  seed: 3,
  workers: [{ name: "a", nthreads: 2 }, { name: "b" }],
  tasks: [
    ...Array.from({ length: 40 }, (_, i) => ({ key: `leaf-${i}`, duration: 0.01 * (1 + (i % 5)), nbytes: 1e5 })),
    ...Array.from({ length: 20 }, (_, i) => ({ key: `pair-${i}`, deps: [`leaf-${2 * i}`, `leaf-${2 * i + 1}`], duration: 0.02 })),
    { key: "root", deps: Array.from({ length: 20 }, (_, i) => `pair-${i}`), duration: 0.1 },
  ],
};

describe("simulate({ log })", () => {
  const dir = mkdtempSync(join(tmpdir(), "natsched-sim-log-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("streams to a FileLogSink exactly the records it would keep in memory, and the file replays", async () => {
    const kept = simulate(tree);
    const path = join(dir, "tree.natlog");
    const sink = await FileLogSink.open(path);
    const streamed = simulate(tree, { log: sink });
    await sink.close();
    expect(streamed.log).toEqual([]);
    expect({ ...streamed, log: kept.log }).toEqual(kept);
    const { records, problems } = readLogSync(path);
    expect(problems).toEqual([]);
    expect(records).toEqual(JSON.parse(JSON.stringify(kept.log)));
    const replayed = await replay(path);
    expect(replayed.ok).toBe(true);
    expect(replayed.stats.transitions).toBe(kept.log.filter((r) => r.kind === "transition").length);
  });

  it("with log: false keeps nothing and runs the same", () => {
    const kept = simulate(tree);
    const dropped = simulate(tree, { log: false });
    expect(dropped.log).toEqual([]);
    expect({ ...dropped, log: kept.log }).toEqual(kept);
  });
});
