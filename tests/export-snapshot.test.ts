/** Slices that start from snapshots of the actors' cores (natsched export with a log index): small, and they replay clean. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileLogSink } from "../log/file-log.js";
import { buildLogIndex, indexPathOf } from "../log/log-index-build.js";
import { LogIndex } from "../log/log-index.js";
import { readLogSync } from "../log/reader.js";
import { concernsKey } from "../log/record-filter.js";
import { sliceStarts } from "../log/slice-header.js";
import type { LogRecord } from "../log/types.js";
import { replay } from "../replay/replay.js";
import { exportSlice } from "../tools/export.js";
import { storyLines } from "../tools/story.js";
import { recordRun, type RunLog } from "./replay-fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-export-snapshot-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(["binary", "jsonl"] as const)("a slice of a %s log from a snapshot", (format) => {
  const path = join(dir, `run-${format}.natlog`);
  let run: RunLog;
  let records: LogRecord[];

  beforeAll(async () => {
    // Snapshots sit at block boundaries (a binary log's frames): small batches give many.
    run = await recordRun(format === "binary" ? await FileLogSink.open(path, { batchBytes: 8192 }) : { path, format });
    records = readLogSync(path).records;
    // Snapshots every 40 records, so that the cuts below have one well before them.
    await buildLogIndex(path, indexPathOf(path), { snapshotRecords: 40, blockLines: 16 });
  }, 60_000);

  it("around a time: starts at the snapshot before it, restores the running actors there, and replays clean", async () => {
    // Snapshots sit at the index's block boundaries: a binary log's frames, whose sizes
    // depend on how fast the run wrote its batches. Cut between the first one and the end.
    const index = await LogIndex.open(path, indexPathOf(path));
    const first = index.snapshotPositions[0];
    await index.close();
    expect(first).toBeGreaterThan(0);
    const middle = records[Math.floor((first! + records.length) / 2)]!.t;
    const out = join(dir, `time-${format}.natlog`);
    const report = await exportSlice(path, String(middle), out);
    expect(report.start).toBeGreaterThan(0);
    expect(report.fromSnapshot!.length).toBeGreaterThan(0);
    const slice = readLogSync(out);
    expect(slice.problems).toEqual([]);
    expect(slice.records.length).toBeLessThan(records.length / 2);
    const starts = sliceStarts(slice.header);
    expect([...starts.keys()].sort()).toEqual([...report.fromSnapshot!].sort());
    for (const [actor, start] of starts) {
      // The actor's records in the slice are exactly its records after the snapshot, up to the cut.
      const mine = slice.records.filter((r) => r.actor === actor);
      const original = records.filter((r) => r.actor === actor && r.seq > start.seq);
      expect(mine).toEqual(original.slice(0, mine.length));
      if (mine.length > 0) expect(mine[0]!.kind).not.toBe("transition");
    }
    const result = await replay(out);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.stats.transitions).toBe(slice.records.filter((r) => r.kind === "transition").length);
  });

  it("around a key: the key's whole story is in it, and it replays clean", async () => {
    const key = run.fromScattered;
    const out = join(dir, `key-${format}.natlog`);
    const report = await exportSlice(path, key, out);
    expect(report.start).toBeGreaterThan(0);
    const slice = readLogSync(out);
    expect(slice.problems).toEqual([]);
    expect(slice.records.length).toBeLessThan(records.length);
    // A slice from a snapshot leaves out the clients running there (a client core has no snapshot).
    const running = (r: { actor: string }) => !r.actor.startsWith("client.") || slice.records.some((s) => s.actor === r.actor);
    expect(storyLines(slice.records, key)).toEqual(storyLines(records.filter((r) => concernsKey(r, key) && running(r)), key));
    const result = await replay(out);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
  });

  it("without the snapshot (fromSnapshot: false) keeps every actor from its start record, as before", async () => {
    const out = join(dir, `whole-${format}.natlog`);
    const report = await exportSlice(path, run.fromScattered, out, { fromSnapshot: false });
    expect(report.start).toBeUndefined();
    expect(sliceStarts(readLogSync(out).header).size).toBe(0);
    expect((await replay(out)).ok).toBe(true);
  });
});
