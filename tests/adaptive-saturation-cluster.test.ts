/**
 * Adaptive saturation in a real embedded run: workers measure their round trips, the
 * scheduler's placements say what they used, the log replays exactly, `story` shows it, and
 * what-if compares it with a fixed saturation on the recorded workload.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { readLogSync } from "../log/reader.js";
import type { InputRecord, LogRecord } from "../log/types.js";
import { isPlacement, readReason } from "../machines/reasons.js";
import { replay } from "../replay/replay.js";
import { storyLines } from "../tools/story.js";
import { whatIf } from "../tools/what-if.js";
import { transitions } from "./sim-helpers.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-adaptive-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const N = 600;
const path = join(dir, "adaptive.natlog");
let records: LogRecord[];

beforeAll(async () => {
  const cluster = await LocalCluster.start({
    workers: 2,
    threadsPerWorker: 1,
    functions: { noop: () => null },
    config: { workerSaturation: "adaptive" },
    log: { path },
    configFile: false,
  });
  const client = cluster.client();
  const fs = client.map("noop", Array.from({ length: N }, (_, i) => i), { pure: false });
  await client.gather(fs);
  await cluster.close();
  const read = readLogSync(path);
  expect(read.problems).toEqual([]);
  records = read.records;
}, 120_000);

describe("adaptive saturation in an embedded run", () => {
  it("measures each worker's round trip, and places by it", () => {
    const reports = records.filter((r): r is InputRecord => r.kind === "input" && r.actor === "scheduler" && r.event.op === "task-finished" && r.event.roundTrip !== undefined);
    expect(reports.length).toBeGreaterThan(0);
    for (const r of reports) expect(r.event.roundTrip).toBeGreaterThanOrEqual(0);
    const placed = transitions(records, { actor: "scheduler", machine: "task", event: "ASSIGN" }).map((r) => readReason(r, true));
    expect(placed).toHaveLength(N);
    const limits = new Set(placed.map((reason) => (isPlacement(reason) && reason.kind === "rootish-queuing" ? reason.why.saturation?.limit : reason.kind)));
    // The first placements know nothing (Dask's count); later ones cover a measured round trip.
    expect(limits.has("dask")).toBe(true);
    expect([...limits].some((limit) => limit === "round-trip" || limit === "cap")).toBe(true);
  });

  it("replays exactly", async () => {
    const result = await replay(path);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    for (const [actor, a] of Object.entries(result.actors)) expect({ actor, divergence: a.divergence, threw: a.threw }).toEqual({ actor, divergence: undefined, threw: undefined });
  }, 60_000);

  it("story shows the saturation a placement used", () => {
    const last = transitions(records, { actor: "scheduler", machine: "task", event: "ASSIGN" }).at(-1)!;
    const text = storyLines(records, last.id)
      .map((line) => JSON.stringify(line))
      .join("\n");
    expect(text).toContain("adaptive saturation:");
  });

  it("what-if runs the recorded workload with a fixed saturation and with adaptive", () => {
    const fixed = whatIf(records, { changes: { workerSaturation: 1.1 } });
    expect(fixed.workload.scenario.config).toMatchObject({ workerSaturation: "adaptive" });
    expect(fixed.original.unfinished).toBe(0);
    expect(fixed.changed!.unfinished).toBe(0);
    // The simulator's round trip (latency and host delays from the log) lets adaptive send more
    // tasks ahead: the recorded adaptive run is no slower simulated than the fixed one.
    expect(fixed.original.makespan).toBeLessThanOrEqual(fixed.changed!.makespan);
  });
});
