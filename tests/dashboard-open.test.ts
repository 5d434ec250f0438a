/**
 * Opening a recorded log in the dashboard: the model answers before the log is read (the
 * reading goes on in the background, the summary saying how far); the opening view cached
 * next to the log (`<log>.dash`) is the whole log's summary and task stream, used only for
 * the log it was made from; without it, a first pass that keeps no record gives the same
 * summary and stream, byte for byte, as the fold of every record kept; and the scrubber's checkpoints give the same cluster at every
 * cut, moving back and forth, as folding from the log's start.
 */
import { appendFileSync, copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DashboardModel } from "../dashboard/server/model.js";
import { cachePathOf, readOpeningCache } from "../dashboard/server/open-cache.js";
import { openRecordedLog, recordedLogModel } from "../dashboard/server/recorded-log.js";
import { buildLogIndex } from "../log/log-index-build.js";
import { LogIndex } from "../log/log-index.js";
import { openLog, readLogSync } from "../log/reader.js";
import type { LogRecord } from "../log/types.js";
import { recordIncident, recordTree } from "./support/recorded-runs.js";

let dir: string;
let log: string;
let records: LogRecord[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "natsched-dash-open-"));
  log = join(dir, "incident.natlog");
  await recordIncident(log);
  records = readLogSync(log).records;
}, 120_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("opening a recorded log", () => {
  it("answers before the log is read, then has every record; no cache unless asked", async () => {
    const { model, loaded } = await openRecordedLog(log);
    // The records come from the file after this returns: the summary says the reading goes on.
    expect(model.loading).toBe(true);
    expect(model.summary().loading).toMatchObject({ streamReady: false });
    expect(await loaded).toEqual([]);
    expect(model.loading).toBe(false);
    expect(model.summary().loading).toBeUndefined();
    expect(model.size).toBe(records.length);
    expect(existsSync(cachePathOf(log))).toBe(false);
  });

  it("caches the opening view, and opened again serves the whole log's summary and stream before reading it", async () => {
    const copy = join(dir, "cached.natlog");
    copyFileSync(log, copy);
    const first = await openRecordedLog(copy, { cache: true });
    await first.loaded;
    const whole = first.model.summary();
    const stream = first.model.streamJson();
    expect(await readOpeningCache(copy)).toEqual({ summary: whole, streamJson: stream });

    const again = await openRecordedLog(copy, { cache: true });
    expect(again.model.loading).toBe(true);
    const early = again.model.summary();
    expect(early.loading).toMatchObject({ streamReady: true, of: records.length });
    expect({ ...early, loading: undefined }).toEqual({ ...whole, loading: undefined });
    expect(again.model.streamJson()).toBe(stream);
    // Live-style deltas would repeat bars the cached stream has.
    expect(again.model.drainStream()).toBeUndefined();
    await again.loaded;
    expect(again.model.summary()).toEqual(whole);
    expect(JSON.parse(again.model.streamJson())).toEqual(JSON.parse(stream));
  });

  it("ignores a cache made from another state of the log", async () => {
    const copy = join(dir, "grown.natlog");
    copyFileSync(log, copy);
    await (await openRecordedLog(copy, { cache: true })).loaded;
    expect(await readOpeningCache(copy)).toBeDefined();
    appendFileSync(copy, Buffer.alloc(16));
    expect(await readOpeningCache(copy)).toBeUndefined();
    const { model } = await openRecordedLog(copy, { cache: true });
    expect(model.summary().loading).toMatchObject({ streamReady: false });
  });
});

describe("the first pass over a log file", () => {
  /** The summary and stream as the dashboard made them from every record, kept, before it had a first pass. */
  async function wholeFold(path: string): Promise<{ summary: string; stream: string }> {
    const reader = await openLog(path);
    const cluster = reader.header.meta.cluster as string;
    const model = new DashboardModel({ kind: "log", location: path, live: false, cluster }, reader.header.created);
    for await (const record of reader.records()) model.add(record);
    return { summary: JSON.stringify(model.summary()), stream: model.streamJson() };
  }

  it("serves the whole log's summary and stream, the fold's byte for byte, while the records are read again", async () => {
    const tree = join(dir, "tree.natlog");
    await recordTree(tree, 64);
    for (const path of [log, tree]) {
      const copy = join(dir, `first-${path.endsWith("tree.natlog") ? "tree" : "incident"}.natlog`);
      copyFileSync(path, copy);
      const { model, loaded } = await openRecordedLog(copy, { cache: true });
      // Once the first pass is done, the summary has the whole stream (and the cache is written).
      while (model.loading && !model.summary().loading?.streamReady) await new Promise((resolve) => setTimeout(resolve, 1));
      const during = model.summary();
      const expected = await wholeFold(copy);
      if (model.loading) {
        expect(during.loading).toMatchObject({ streamReady: true });
        expect(JSON.stringify({ ...during, loading: undefined })).toBe(expected.summary);
        expect(model.streamJson()).toBe(expected.stream);
        expect(model.drainStream()).toBeUndefined();
      }
      expect(await loaded).toEqual([]);
      const cached = (await readOpeningCache(copy))!;
      expect(JSON.stringify(cached.summary), path).toBe(expected.summary);
      expect(cached.streamJson, path).toBe(expected.stream);
      expect(JSON.stringify(model.summary()), path).toBe(expected.summary);
      expect(model.streamJson(), path).toBe(expected.stream);
      expect(model.size).toBe(readLogSync(copy).records.length);
    }
  }, 120_000);
});

describe("a story while the log is read", () => {
  it("comes through the log's index, the same as once the log is read", async () => {
    const copy = join(dir, "indexed.natlog");
    copyFileSync(log, copy);
    await buildLogIndex(copy);
    const { model: whole } = await recordedLogModel(copy);
    const header = (await openLog(copy)).header;
    const reading = new DashboardModel(whole.source, header.created);
    reading.beginLoading(records.length);
    reading.useIndex(await LogIndex.open(copy));
    // Halfway through the log: the key's later records are not read yet, the index has them.
    for (const record of records.slice(0, Math.floor(records.length / 2))) reading.add(record);
    const stolen = (records.find((r) => r.kind === "transition" && r.machine === "task" && r.event === "STEAL_CONFIRM") as { id: string }).id;
    const failed = (records.findLast((r) => r.kind === "transition" && r.machine === "wtask" && r.event === "FAIL") as { id: string }).id;
    for (const key of [stolen, failed]) {
      const story = await reading.story(key);
      expect(story.lines.length, key).toBeGreaterThan(0);
      expect(story, key).toEqual(await whole.story(key));
    }
    // A key's start is resolved among the whole log's keys: that waits for the reading.
    let answered = false;
    const byStart = reading.story(stolen.slice(0, -1)).then((story) => ((answered = true), story));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);
    for (const record of records.slice(Math.floor(records.length / 2))) reading.add(record);
    reading.loaded();
    expect((await byStart).key.startsWith(stolen.slice(0, -1))).toBe(true);
  });
});

describe("the scrubber's checkpoints", () => {
  it("give the cluster at each cut, back and forth, as a fold from the start does", async () => {
    const { model: plain } = await recordedLogModel(log);
    const checked = new DashboardModel(plain.source, undefined, 97);
    for (const record of records) checked.add(record);
    const n = records.length;
    const cuts = [n, Math.floor(n / 2), 5, Math.floor(n * 0.9), 97, 96, 98, Math.floor(n / 3), n - 1, 0, Math.floor(n / 2) + 1];
    for (const index of cuts) {
      // A fresh model folds from the start: no checkpoints, no fold carried from a move before.
      const fresh = new DashboardModel(plain.source, undefined, 97);
      for (const record of records) fresh.add(record);
      expect(await checked.at({ index }), `at ${index}`).toEqual(await fresh.at({ index }));
    }
  });
});
