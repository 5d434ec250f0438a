/** The log index (log/log-index*.ts): seeking answers exactly what a full scan answers, and an index that does not match its log is caught. */
import { appendFileSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../cli/run.js";
import { LogIndexError } from "../machines/errors.js";
import { indexOnDemand } from "../log/index-on-demand.js";
import { InstanceCounts } from "../log/instance-counts.js";
import { instanceCountsAt } from "../log/instances-at.js";
import { buildLogIndex, indexPathOf } from "../log/log-index-build.js";
import { LogIndex } from "../log/log-index.js";
import { TimeBase } from "../log/time-base.js";
import { readLogSync } from "../log/reader.js";
import { concernsKey } from "../log/record-filter.js";
import { forEachNamedKey } from "../log/record-keys.js";
import type { LogRecord } from "../log/types.js";
import { formatStory, storyLines } from "../tools/story.js";
import { addCauses, recordsSource } from "../tools/story-causes.js";
import { Timeline } from "../tools/timeline.js";
import { recordRun } from "./replay-fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-index-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const logs: Record<string, string> = {
  binary: join(dir, "run.natlog"),
  jsonl: join(dir, "run-lines.natlog"),
  "old binary": join(dir, "old-98e2957.natlog"),
  "old jsonl": join(dir, "old-98e2957.jsonl"),
};

beforeAll(async () => {
  await recordRun({ path: logs.binary! });
  await recordRun({ path: logs.jsonl!, format: "jsonl" });
  copyFileSync("tests/fixtures/logs/old-98e2957.natlog", logs["old binary"]!);
  copyFileSync("tests/fixtures/logs/old-98e2957.jsonl", logs["old jsonl"]!);
  // Small snapshot intervals, so that every cut below lands between snapshots.
  for (const path of Object.values(logs)) await buildLogIndex(path, indexPathOf(path), { snapshotRecords: 37, blockLines: 16 });
}, 60_000);

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

function keysOf(records: LogRecord[]): string[] {
  const keys = new Set<string>();
  for (const r of records) forEachNamedKey(r, (k) => keys.add(k));
  return [...keys];
}

/** Counts by "actor machine" and state, states with no instance left out: what a Timeline (the full replay of the records) says. */
function timelineCounts(timeline: Timeline): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const v of timeline.list()) (out[`${v.actor} ${v.machine}`] ??= {})[v.state] = (out[`${v.actor} ${v.machine}`]?.[v.state] ?? 0) + 1;
  return out;
}

function indexCounts(counts: InstanceCounts): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const g of counts.list()) for (const [state, n] of g.counts) if (n > 0) (out[`${g.actor} ${g.machine}`] ??= {})[state] = n;
  return out;
}

describe.each(Object.keys(logs))("the index of a %s log", (name) => {
  const path = (): string => logs[name]!;

  it("finds exactly the records of each key that a full scan finds, in log order", async () => {
    const { records } = readLogSync(path());
    const index = await LogIndex.open(path());
    expect(index.records).toBe(records.length);
    const keys = keysOf(records);
    expect(keys.length).toBeGreaterThan(10);
    for (const key of keys) {
      const found = await index.keyRecords(key);
      expect(found.map((r) => r.record)).toEqual(records.filter((r) => concernsKey(r, key)));
      for (const { record, position } of found) expect(records[position]).toEqual(record);
    }
    expect(await index.keyRecords("no-such-key")).toEqual([]);
    await index.close();
  });

  it("gives the same instance counts and key views from a snapshot as the whole log replayed, at every cut", async () => {
    const { records } = readLogSync(path());
    const index = await LogIndex.open(path());
    const keys = keysOf(records).slice(0, 8);
    const timeline = Timeline.fromRecords(records);
    for (let position = 0; position <= records.length; position += Math.max(1, Math.floor(records.length / 23))) {
      timeline.seek(position);
      expect(indexCounts(await instanceCountsAt(index, position)), `at ${position}`).toEqual(timelineCounts(timeline));
      for (const key of keys) {
        const views = Timeline.fromRecords((await index.keyRecords(key, position)).map((r) => r.record)).list({ id: key });
        expect(views).toEqual(timeline.list({ id: key }));
      }
      expect(await index.recordAt(position)).toEqual(records[position]);
    }
    for (const r of records.filter((_, i) => i % 17 === 0)) {
      expect(await index.positionAtTime(r.t)).toBe(timeline.positionAtTime(r.t));
      expect(await index.positionOf(r.actor, r.seq)).toBe(timeline.positionOf(r.actor, r.seq));
    }
    expect(await index.positionOf("scheduler", 1e9)).toBe(-1);
    await index.close();
  });

  it("natsched story prints what it prints from a full scan", async () => {
    const { records } = readLogSync(path());
    const start = records.find((r) => r.kind === "start" && r.actor === "scheduler");
    const bandwidth = start?.kind === "start" ? (start.init.config as { bandwidth?: number } | undefined)?.bandwidth : undefined;
    for (const key of keysOf(records).filter((_, i) => i % 5 === 0)) {
      const keyRecords = records.filter((r) => concernsKey(r, key));
      const lines = await addCauses(storyLines(keyRecords, key, bandwidth === undefined ? {} : { bandwidth }), keyRecords, key, recordsSource(records));
      const { code, out } = await cli("story", path(), key);
      expect(code).toBe(0);
      const time = TimeBase.of(records[0]?.t, readLogSync(path()).header.created);
      expect(out).toBe(`story of ${key} (${lines.length} events)\n${time.describe()}\n${formatStory(lines, time.start)}`);
    }
  });
});

describe("an index that does not match its log", () => {
  it("is stale once the log has grown, and is rebuilt on demand, saying so", async () => {
    const path = join(dir, "grown.natlog");
    copyFileSync(logs.jsonl!, path);
    await buildLogIndex(path);
    await LogIndex.open(path);
    const lines = readFileSync(path, "utf8").split("\n");
    appendFileSync(path, `${lines[lines.length - 2]}\n`);
    await expect(LogIndex.open(path)).rejects.toMatchObject({ name: "LogIndexError", reason: "stale", code: "LOG_INDEX" });
    expect((await cli("log", "index", path, "--check")).code).toBe(1);
    const notes: string[] = [];
    const index = await indexOnDemand(path, (n) => notes.push(n));
    // The appended line repeats a record: a duplicate the reader drops, so this log cannot be indexed exactly.
    expect(index).toBeUndefined();
    expect(notes.join("\n")).toMatch(/index stale.*rebuilding/s);
    expect(notes.join("\n")).toMatch(/duplicate records/);
  });

  it("is stale when the log was rewritten to the same size", async () => {
    const path = join(dir, "rewritten.natlog");
    copyFileSync(logs.binary!, path);
    await buildLogIndex(path);
    const bytes = readFileSync(path);
    bytes[bytes.length - 9] ^= 0x40;
    writeFileSync(path, bytes);
    await expect(LogIndex.open(path)).rejects.toBeInstanceOf(LogIndexError);
  });

  it("is corrupt when any part of it is damaged, and a rebuilt one works", async () => {
    const path = join(dir, "damaged.natlog");
    copyFileSync(logs.binary!, path);
    await buildLogIndex(path, indexPathOf(path), { snapshotRecords: 37, blockLines: 16 });
    const good = readFileSync(indexPathOf(path));
    const headerEnd = good.indexOf(0x0a);
    for (const at of [5, headerEnd - 3, headerEnd + 3, Math.floor((headerEnd + good.length) / 2), good.length - 2]) {
      const bad = Buffer.from(good);
      bad[at] ^= 0x01;
      writeFileSync(indexPathOf(path), bad);
      // Opening checks the header and the block table; verify() the key table and the snapshots.
      await expect(
        (async () => {
          const index = await LogIndex.open(path);
          await index.verify();
        })(),
        `flip at byte ${at}`,
      ).rejects.toMatchObject({ name: "LogIndexError", reason: "corrupt" });
    }
    writeFileSync(indexPathOf(path), good.subarray(0, good.length - 100));
    await expect(LogIndex.open(path)).rejects.toMatchObject({ reason: "corrupt" });
    // story goes through the index (inspect does only past 256 MB): it rebuilds the corrupt one and says so.
    const { code, err } = await cli("story", path, "scheduler");
    expect(code).toBe(0);
    expect(err).toMatch(/index corrupt/);
    expect((await cli("log", "index", path, "--check")).code).toBe(0);
    const built = await cli("log", "index", path);
    expect(built.code).toBe(0);
    expect(built.out).toMatch(new RegExp(`^${indexPathOf(path)}: ${readLogSync(path).records.length} records in \\d+ blocks`));
  });
});
