/** Timeline: stepping a log forwards and backwards gives, at every position, what folding the prefix gives. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../index.js";
import { runCli } from "../cli/run.js";
import { readLogSync } from "../log/reader.js";
import { Timeline } from "../tools/timeline.js";
import type { LogRecord } from "../log/types.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-timeline-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const path = join(dir, "run.natlog");
let records: LogRecord[];
let keys: string[];

beforeAll(async () => {
  const cluster = await LocalCluster.start({
    workers: 3,
    functions: { inc: (x: number) => x + 1, add: (a: number, b: number) => a + b },
    log: { path },
    configFile: false,
  });
  const client = cluster.client();
  const xs = client.map<number>("inc", [1, 2, 3, 4, 5, 6]);
  const total = client.submit<number>("add", [xs[0]!, xs[5]!]);
  expect(await total.result()).toBe(2 + 7);
  keys = [...xs.map((x) => x.key), total.key];
  await cluster.close();
  const log = readLogSync(path);
  expect(log.problems).toEqual([]);
  records = log.records;
});

/** The states of every instance after the first `n` records, by folding them directly. */
function foldStates(n: number): Map<string, string> {
  const states = new Map<string, string>();
  for (const r of records.slice(0, n)) if (r.kind === "transition") states.set(`${r.actor}|${r.machine}|${r.id}`, r.to);
  return states;
}

function timelineStates(timeline: Timeline): Map<string, string> {
  return new Map(timeline.list().map((v) => [`${v.actor}|${v.machine}|${v.id}`, v.state]));
}

describe("Timeline", () => {
  it("starts at the end, where every task the client asked for is in memory or forgotten on the scheduler", () => {
    const timeline = Timeline.fromRecords(records);
    expect(timeline.position).toBe(records.length);
    for (const key of keys) {
      const view = timeline.entity("scheduler", "task", key)!;
      expect(["memory", "forgotten"]).toContain(view.state);
      expect(view.transitions).toBe(records.filter((r) => r.kind === "transition" && r.actor === "scheduler" && r.id === key).length);
    }
  });

  it("at any position, in any order of seeks, equals the fold of the records before it", () => {
    const timeline = Timeline.fromRecords(records);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: records.length }), { minLength: 1, maxLength: 12 }), (positions) => {
        for (const p of positions) {
          timeline.seek(p);
          expect(timeline.position).toBe(p);
          expect(timelineStates(timeline)).toEqual(foldStates(p));
        }
      }),
      { numRuns: 40 },
    );
  });

  it("steps back over a task's whole life to before it existed, and keeps each step's reasons", () => {
    const timeline = Timeline.fromRecords(records);
    const key = keys[6]!;
    const first = records.findIndex((r) => r.kind === "transition" && r.actor === "scheduler" && r.id === key);
    timeline.seek(first + 1);
    const born = timeline.entity("scheduler", "task", key)!;
    expect(born.transitions).toBe(1);
    expect(born.state).toBe((records[first] as { to: string }).to);
    timeline.step(-1);
    expect(timeline.entity("scheduler", "task", key)).toBeUndefined();
    const placed = records.findIndex((r) => r.kind === "transition" && r.actor === "scheduler" && r.id === key && r.to.startsWith("processing"));
    timeline.seek(placed + 1);
    expect(timeline.entity("scheduler", "task", key)!.why).toEqual((records[placed] as { why?: unknown }).why);
  });

  it("counts states per actor and machine, and finds positions by time and by sequence", () => {
    const timeline = Timeline.fromRecords(records);
    const end = timeline.countByState("scheduler", "task");
    expect(Object.values(end).reduce((a, b) => a + b, 0)).toBe(new Set(records.filter((r) => r.kind === "transition" && r.actor === "scheduler" && r.machine === "task").map((r) => (r as { id: string }).id)).size);
    expect(timeline.seek(0).countByState("scheduler", "task")).toEqual({});
    const mid = records[Math.floor(records.length / 2)]!;
    expect(timeline.positionOf(mid.actor, mid.seq)).toBe(Math.floor(records.length / 2) + 1);
    expect(timeline.positionAtTime(records[records.length - 1]!.t)).toBe(records.length);
    expect(timeline.positionAtTime(records[0]!.t - 1)).toBe(0);
  });

  it("natsched inspect prints a key's instances and the state counts at a position", async () => {
    const out: string[] = [];
    const key = keys[6]!;
    const code = await runCli(["inspect", path, "--key", key], { out: (s) => out.push(s), err: (s) => out.push(s) });
    expect(code).toBe(0);
    const text = out.join("\n");
    expect(text).toContain(`cut at the end of the log: ${records.length} of ${records.length} records`);
    expect(text).toMatch(new RegExp(`scheduler\\s+task\\s+${key.replace(/[-()]/g, "\\$&")}\\s+(memory|forgotten)`));
    const zero: string[] = [];
    expect(await runCli(["inspect", path, "--at", "0"], { out: (s) => zero.push(s), err: (s) => zero.push(s) })).toBe(0);
    expect(zero.join("\n")).toContain("cut after scheduler #0: ");
  });
});
