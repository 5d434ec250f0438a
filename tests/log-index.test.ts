/** The log index (log/log-index*.ts): seeking answers exactly what a full scan answers, and an index that does not match its log is caught. */
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../cli/run.js";
import { LogIndexError } from "../machines/errors.js";
import { indexOnDemand } from "../log/index-on-demand.js";
import { ClusterFold } from "../log/cluster-fold.js";
import { FileLogSink } from "../log/file-log.js";
import { buildLogIndex, indexPathOf } from "../log/log-index-build.js";
import { encodeIndexHeader, readIndexHeader } from "../log/log-index-file.js";
import { LogIndex } from "../log/log-index.js";
import { TimeBase } from "../log/time-base.js";
import { readLogSync } from "../log/reader.js";
import { concernsKey } from "../log/record-filter.js";
import { forEachNamedKey } from "../log/record-keys.js";
import type { LogRecord } from "../log/types.js";
import { LogCut, type CutSpec } from "../replay/log-cut.js";
import { foldAtCut, keyRecordsAtCut } from "../tools/fold-at-cut.js";
import { inspectView } from "../tools/inspect-view.js";
import { keyInstances } from "../tools/key-instances.js";
import { formatStory, storyLines } from "../tools/story.js";
import { addCauses, recordsSource } from "../tools/story-causes.js";
import { IndexInputFinder } from "../tools/index-inputs.js";
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
  // Snapshots sit at block boundaries, a binary log's frames; a fast run seals frames of
  // hundreds of records, so small batches give this log the many frames the cuts need.
  await recordRun(await FileLogSink.open(logs.binary!, { batchBytes: 8192 }));
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

/** The cut read from the log's start, as inspect reads a log whole: the fold and the records taken. */
function foldFromStart(records: LogRecord[], spec: CutSpec | undefined): { fold: ClusterFold; taken: LogRecord[] } {
  const cut = new LogCut(spec);
  const fold = new ClusterFold();
  const taken: LogRecord[] = [];
  for (const record of records) {
    const verdict = cut.admit(record);
    if (verdict === "end") break;
    if (verdict === "skip") continue;
    fold.add(record);
    taken.push(record);
  }
  return { fold, taken };
}

/** Cuts of every kind, spread over the log: scheduler seqs, workers' seqs, times between records and on them, seconds from the start. */
function cutsOf(records: LogRecord[]): CutSpec[] {
  const cuts: (CutSpec | undefined)[] = [];
  const step = Math.max(1, Math.floor(records.length / 40));
  const start = records[0]!.t;
  for (let i = 0; i < records.length; i += step) {
    const r = records[i]!;
    const next = records[Math.min(records.length - 1, i + 1)]!;
    cuts.push({ kind: "seq", value: r.seq, actor: r.actor });
    if (r.actor === "scheduler") cuts.push({ kind: "seq", value: r.seq });
    cuts.push({ kind: "time", value: r.t }, { kind: "time", value: (r.t + next.t) / 2 });
    cuts.push({ kind: "elapsed", value: r.t - start });
  }
  cuts.push({ kind: "time", value: start - 1 }, { kind: "time", value: records[records.length - 1]!.t + 1 });
  return cuts.filter((c): c is CutSpec => c !== undefined);
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

  it("gives the same per-worker view and key instances from a snapshot as the whole log folded, at many cuts of every kind", async () => {
    const { records } = readLogSync(path());
    const index = await LogIndex.open(path());
    expect(index.snapshots.length).toBeGreaterThan(1);
    const keys = keysOf(records).filter((_, i) => i % 3 === 0).slice(0, 6);
    const cuts = [undefined, ...cutsOf(records)];
    let fromSnapshot = 0;
    for (const spec of cuts) {
      const whole = foldFromStart(records, spec);
      const seek = await foldAtCut(index, spec);
      if (seek.from > 0) fromSnapshot++;
      const what = JSON.stringify(spec ?? "end");
      expect(inspectView(seek.fold, "cut"), what).toEqual(inspectView(whole.fold, "cut"));
      expect(seek.fold.records, what).toBe(whole.taken.length);
      for (const key of keys) expect(keyInstances(await keyRecordsAtCut(index, seek, key), key), `${what} ${key}`).toEqual(keyInstances(whole.taken, key));
    }
    // Most cuts started from a snapshot, not from the log's start.
    expect(fromSnapshot).toBeGreaterThan(cuts.length / 2);
    await expect(foldAtCut(index, { kind: "seq", value: 1e9 })).rejects.toThrow(/no record 1000000000 of scheduler/);
    await index.close();
  });

  it("answers where records are as the whole log does", async () => {
    const { records } = readLogSync(path());
    const index = await LogIndex.open(path());
    const timeline = Timeline.fromRecords(records);
    for (let position = 0; position <= records.length; position += Math.max(1, Math.floor(records.length / 23))) expect(await index.recordAt(position)).toEqual(records[position]);
    for (const r of records.filter((_, i) => i % 17 === 0)) {
      expect(await index.positionAtTime(r.t)).toBe(timeline.positionAtTime(r.t));
      expect(await index.positionOf(r.actor, r.seq)).toBe(timeline.positionOf(r.actor, r.seq));
    }
    expect(await index.positionOf("scheduler", 1e9)).toBe(-1);
    await index.close();
  });

  it("natsched inspect through the index prints what it prints reading the log whole", async () => {
    const { records } = readLogSync(path());
    const key = keysOf(records)[3]!;
    for (const at of [undefined, String(records.slice(records.length / 2).find((r) => r.actor === "scheduler")!.seq), `+${((records[records.length - 1]!.t - records[0]!.t) / 3).toFixed(4)}`]) {
      const args = ["inspect", path(), ...(at === undefined ? [] : ["--at", at]), "--key", key];
      const whole = await cli(...args, "--full");
      const seek = await cli(...args, "--index");
      expect(whole.code, whole.err).toBe(0);
      expect(seek.out, `--at ${at}`).toBe(whole.out);
      const json = await cli(...args.slice(0, -2), "--json", "--index");
      expect(JSON.parse(json.out)).toEqual(JSON.parse((await cli(...args.slice(0, -2), "--json", "--full")).out));
    }
  });

  it("decodes a block read again while it is among the latest read once: every block's records as the log has them", async () => {
    const { records } = readLogSync(path());
    const index = await LogIndex.open(path());
    const first = await index.blockRecords(0);
    expect(await index.blockRecords(0)).toBe(first);
    const all: unknown[] = [];
    // Twice over every block: the second time past the blocks kept, for the logs of many blocks.
    for (const round of [0, 1]) {
      all.length = 0;
      for (let b = 0; b < index.blockCount; b++) all.push(...(await index.blockRecords(b)));
      expect(all, `round ${round}`).toEqual(records);
    }
    await index.close();
  });

  it("finds every key's causes through the index as the pass over the log's inputs does", async () => {
    const { records } = readLogSync(path());
    const index = await LogIndex.open(path());
    let caused = 0;
    for (const key of keysOf(records)) {
      const keyRecords = records.filter((r) => concernsKey(r, key));
      const found = await index.keyRecords(key);
      const seekRecords = found.map((r) => r.record);
      const seek = await addCauses(storyLines(seekRecords, key), seekRecords, key, new IndexInputFinder(index, found));
      expect(seek, key).toEqual(await addCauses(storyLines(keyRecords, key), keyRecords, key, recordsSource(records)));
      caused += seek.filter((l) => l.cause !== undefined).length;
    }
    expect(caused).toBeGreaterThan(keysOf(records).length);
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

describe("building an index", () => {
  it("writes its sections to a file of their own and leaves only the index behind, built or refused", async () => {
    const own = join(dir, "leftovers");
    mkdirSync(own);
    const path = join(own, "run.natlog");
    copyFileSync(logs.binary!, path);
    const stats = await buildLogIndex(path, indexPathOf(path), { snapshotRecords: 37, blockLines: 16 });
    expect(readdirSync(own).sort()).toEqual(["run.natlog", "run.natlog.idx"]);
    expect(readFileSync(indexPathOf(path)).length).toBe(stats.bytes);
    // What was streamed reads back whole: every section's checksum, every snapshot.
    const index = await LogIndex.open(path);
    await index.verify();
    expect(index.snapshots.length).toBe(stats.snapshots);
    await index.close();
    // Refused after its first pass (a duplicate record), with its sections file already open.
    const lines = join(own, "lines.natlog");
    copyFileSync(logs.jsonl!, lines);
    const text = readFileSync(lines, "utf8").split("\n");
    appendFileSync(lines, `${text[text.length - 2]}\n`);
    await expect(buildLogIndex(lines)).rejects.toMatchObject({ name: "LogIndexError", reason: "unindexable" });
    expect(readdirSync(own).sort()).toEqual(["lines.natlog", "run.natlog", "run.natlog.idx"]);
  });

  it("writes the same key table whether its entries were kept in one chunk or merged from many", async () => {
    const path = logs.binary!;
    const one = join(dir, "one-chunk.idx");
    const many = join(dir, "many-chunks.idx");
    const stats = await buildLogIndex(path, one, { snapshotRecords: 37, blockLines: 16 });
    // Chunks of a few entries: many sorted runs, and a last one partly filled.
    const keyChunk = [5, 6, 7].find((n) => stats.keyEntries % n !== 0)!;
    expect(stats.keyEntries).toBeGreaterThan(keyChunk * 10);
    await buildLogIndex(path, many, { snapshotRecords: 37, blockLines: 16, keyChunk });
    expect(readFileSync(many).equals(readFileSync(one))).toBe(true);
    // And that table is sorted: every key's records are found through it (the first describe block checks them against a scan).
    const { header, dataOffset } = await readIndexHeader(one);
    const table = new Float64Array(new Uint8Array(readFileSync(one).subarray(dataOffset + header.sections.keys.offset, dataOffset + header.sections.keys.offset + header.sections.keys.bytes)).buffer);
    expect(table.length).toBe(stats.keyEntries);
    for (let i = 1; i < table.length; i++) expect(table[i]! > table[i - 1]!, `entry ${i}`).toBe(true);
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

  it("a damaged snapshot is caught when inspect seeks from it, which rebuilds the index and prints what the whole log gives", async () => {
    const path = join(dir, "bad-snapshot.natlog");
    copyFileSync(logs.jsonl!, path);
    await buildLogIndex(path, indexPathOf(path), { snapshotRecords: 37, blockLines: 16 });
    const { header, dataOffset } = await readIndexHeader(indexPathOf(path));
    const last = header.snapshots[header.snapshots.length - 1]!;
    const bytes = readFileSync(indexPathOf(path));
    bytes[dataOffset + last.offset + Math.floor(last.bytes / 2)] ^= 0x10;
    writeFileSync(indexPathOf(path), bytes);
    // Opening checks the header and the block table only: the snapshot is read, and checked, when a cut needs it.
    const index = await LogIndex.open(path);
    await expect(foldAtCut(index, undefined)).rejects.toMatchObject({ name: "LogIndexError", reason: "corrupt", message: expect.stringMatching(new RegExp(`snapshot at record ${last.position}: checksum mismatch`)) });
    await index.close();
    const seek = await cli("inspect", path, "--index");
    expect(seek.code).toBe(0);
    expect(seek.err).toMatch(/index corrupt: .*snapshot at record \d+: checksum mismatch.*rebuilding it/);
    expect(seek.out).toBe((await cli("inspect", path, "--full")).out);
    await (await LogIndex.open(path)).verify();
  });

  it("an index of an older format is refused as stale, and rebuilt by inspect and story", async () => {
    const path = join(dir, "old-index.natlog");
    copyFileSync(logs.binary!, path);
    await buildLogIndex(path);
    const good = readFileSync(indexPathOf(path));
    const { header, dataOffset } = await readIndexHeader(indexPathOf(path));
    writeFileSync(indexPathOf(path), Buffer.concat([encodeIndexHeader({ ...header, v: 1 }), good.subarray(dataOffset)]));
    await expect(LogIndex.open(path)).rejects.toMatchObject({ reason: "stale", message: expect.stringMatching(/index version 1, this build reads 2: rebuild it/) });
    const seek = await cli("inspect", path, "--index");
    expect(seek.code).toBe(0);
    expect(seek.err).toMatch(/index stale: .*index version 1.*rebuilding it/);
    expect(seek.out).toBe((await cli("inspect", path, "--full")).out);
    await LogIndex.open(path);
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
