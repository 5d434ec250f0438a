import { writerMeta } from "../log/package-version.js";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ClosedError, LogCorruptError } from "../machines/errors.js";
import { crc32Range } from "../log/crc32.js";
import {
  FileLogSink,
  MemoryLogSink,
  NullLogSink,
  checkSequences,
  decodeHeaderLine,
  decodeRecordLine,
  encodeRecordLine,
  maxRecordLineBytes,
  openLog,
  readLogSync,
  writeRecordLine,
  type LogRecord,
  type TransitionRecord,
} from "../log/index.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "natsched-log-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function transition(actor: string, seq: number, id = `inc-${seq}`): TransitionRecord {
  return { actor, seq, t: seq / 1000, kind: "transition", machine: "task", id, event: "compute", from: "waiting", to: "processing" };
}

/** A version-1 log (JSON lines, which these tests look at); tests/log-frames.test.ts covers version 2. */
async function writeLog(path: string, records: LogRecord[], meta?: Record<string, unknown>): Promise<void> {
  const sink = await FileLogSink.open(path, { meta, format: "jsonl" });
  for (const record of records) sink.append(record);
  await sink.close();
}

/** A log file written by hand: the header, then each line as given (record lines encoded). */
function writeRawLog(path: string, lines: Array<LogRecord | string>, header = '{"format":"natsched-log","v":1,"created":1,"meta":{}}'): void {
  const body = lines.map((line) => (typeof line === "string" ? line + "\n" : encodeRecordLine(line))).join("");
  writeFileSync(path, header + "\n" + body);
}

const ALL_KINDS: LogRecord[] = [
  { actor: "scheduler", seq: 0, t: 0, kind: "start", role: "scheduler", init: { config: { workerSaturation: 1.1 }, name: "s" } },
  { actor: "scheduler", seq: 1, t: 0.5, kind: "input", event: { op: "update-graph", tasks: [{ key: "a", deps: [] }], note: "héllo ✓ \u0000 \"q\"" } },
  {
    actor: "scheduler",
    seq: 2,
    t: 1.25,
    kind: "transition",
    machine: "task",
    id: "a",
    event: "compute",
    from: "waiting",
    to: "processing",
    why: { candidates: ["w1", "w2"], objective: [0.5, 2] },
  },
  { actor: "worker.w1", seq: 0, t: 1.5, kind: "transition", machine: "wtask", id: "a", event: "execute", from: "ready", to: "executing" },
  { actor: "worker.w1", seq: 1, t: 2, kind: "stop", reason: "shutdown" },
  { actor: "scheduler", seq: 3, t: 3, kind: "stop" },
];

describe("codec", () => {
  it("encodes a record line as 8 hex digits of CRC32 over the JSON, a space, the JSON and a newline", () => {
    const record = transition("scheduler", 7);
    const json = JSON.stringify(record);
    const line = encodeRecordLine(record);
    expect(line).toBe(crc32(json).toString(16).padStart(8, "0") + " " + json + "\n");
    expect(decodeRecordLine(line.slice(0, -1))).toEqual({ ok: true, record });
  });

  it("matches the example in docs/log-format.md byte for byte", () => {
    const record: LogRecord = { actor: "scheduler", seq: 2, t: 0.0012, kind: "transition", machine: "task", id: "inc-1", event: "compute", from: "waiting", to: "processing" };
    expect(encodeRecordLine(record)).toBe(
      '641ffb6a {"actor":"scheduler","seq":2,"t":0.0012,"kind":"transition","machine":"task","id":"inc-1","event":"compute","from":"waiting","to":"processing"}\n',
    );
  });

  it("writes the same bytes into a buffer as encodeRecordLine, for any JSON text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.nat(), (text, seq) => {
        const record: LogRecord = { actor: "a", seq, t: 0, kind: "stop", reason: text };
        const json = JSON.stringify(record);
        const buffer = Buffer.alloc(3 + maxRecordLineBytes(json));
        const end = writeRecordLine(buffer, 3, json);
        expect(buffer.toString("utf8", 3, end)).toBe(encodeRecordLine(record));
      }),
    );
  });

  it("computes the same CRC32 as zlib over any byte range", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), fc.nat(), (bytes, a, b) => {
        const start = bytes.length === 0 ? 0 : a % bytes.length;
        const end = start + (bytes.length === 0 ? 0 : b % (bytes.length - start + 1));
        expect(crc32Range(bytes, start, end)).toBe(crc32(bytes.subarray(start, end)));
      }),
    );
  });

  it("reports a checksum mismatch, a missing checksum, bad JSON and a bad record shape", () => {
    const line = encodeRecordLine(transition("scheduler", 1)).slice(0, -1);
    expect(decodeRecordLine(line.replace('"compute"', '"computE"'))).toMatchObject({ ok: false, kind: "checksum" });
    expect(decodeRecordLine(line.slice(9))).toMatchObject({ ok: false, kind: "malformed" });
    const notJson = "{oops";
    expect(decodeRecordLine(`${crc32(notJson).toString(16).padStart(8, "0")} ${notJson}`)).toMatchObject({ ok: false, kind: "malformed", message: expect.stringContaining("not JSON") });
    const noActor = JSON.stringify({ seq: 0, t: 0, kind: "stop" });
    expect(decodeRecordLine(`${crc32(noActor).toString(16).padStart(8, "0")} ${noActor}`)).toEqual({ ok: false, kind: "malformed", message: "record has no actor" });
  });

  it("decodes a header and reports an unknown version with what the header says", () => {
    expect(decodeHeaderLine('{"format":"natsched-log","v":1,"created":5,"meta":{"a":1}}')).toEqual({ ok: true, header: { format: "natsched-log", v: 1, created: 5, meta: { a: 1 } } });
    expect(decodeHeaderLine('{"format":"natsched-log","v":9,"created":5,"meta":{}}')).toMatchObject({ ok: false, kind: "version", header: { v: 9 } });
    expect(decodeHeaderLine('{"format":"other","v":1}')).toMatchObject({ ok: false, kind: "malformed" });
  });
});

describe("FileLogSink and readers", () => {
  it("round-trips every record kind through a file, streaming and sync", async () => {
    const path = join(dir, "kinds.natlog");
    await writeLog(path, ALL_KINDS, { run: "test", n: 3 });

    const reader = await openLog(path);
    expect(reader.header).toMatchObject({ format: "natsched-log", v: 1, meta: { run: "test", n: 3 } });
    expect(typeof reader.header.created).toBe("number");
    expect(await reader.readAll()).toEqual({ records: ALL_KINDS, problems: [] });
    expect(readLogSync(path)).toEqual({ header: reader.header, records: ALL_KINDS, problems: [] });

    const lines = readFileSync(path, "utf8").split("\n");
    expect(lines).toHaveLength(ALL_KINDS.length + 2); // header, records, "" after the last newline
    expect(lines[1]).toMatch(/^[0-9a-f]{8} \{/);
  });

  it("keeps 100,000 records in order across many small batches, flushes and close", async () => {
    const path = join(dir, "many.natlog");
    const sink = await FileLogSink.open(path, { batchBytes: 4096 });
    const total = 100_000;
    for (let seq = 0; seq < total; seq++) {
      sink.append(transition("scheduler", seq));
      if (seq === 49_999) {
        await sink.flush();
        // flush resolved: everything appended so far is in the file
        expect(readLogSync(path).records).toHaveLength(50_000);
      }
      if (seq % 7_919 === 0) void sink.flush();
      if (seq % 10_000 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await sink.close();

    const { records, problems } = await (await openLog(path)).readAll();
    expect(problems).toEqual([]);
    expect(records).toHaveLength(total);
    expect(records.every((record, i) => record.seq === i && (record as TransitionRecord).id === `inc-${i}`)).toBe(true);
  });

  it("writes a record larger than a batch and larger than the reader's chunk", async () => {
    const path = join(dir, "big.natlog");
    const big: LogRecord = { ...transition("scheduler", 1), why: { blob: "x".repeat(3_000_000) } };
    await writeLog(path, [transition("scheduler", 0), big, transition("scheduler", 2)]);
    const { records, problems } = await (await openLog(path)).readAll();
    expect(problems).toEqual([]);
    expect(records).toEqual([transition("scheduler", 0), big, transition("scheduler", 2)]);
  });

  it("reports a torn last record and returns every record before it", async () => {
    const path = join(dir, "torn.natlog");
    await writeLog(path, Array.from({ length: 10 }, (_, seq) => transition("scheduler", seq)));
    truncateSync(path, statSync(path).size - 20);

    const { records, problems } = await (await openLog(path)).readAll();
    expect(records.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(problems).toEqual([{ kind: "torn", line: 11, message: expect.stringContaining("torn last record") }]);
    expect(readLogSync(path).problems).toEqual(problems);
  });

  it("reports a flipped byte as a checksum problem on its line, and the resulting gap", async () => {
    const path = join(dir, "flip.natlog");
    await writeLog(path, Array.from({ length: 10 }, (_, seq) => transition("scheduler", seq)));
    const bytes = readFileSync(path);
    const lineStarts = [0];
    bytes.forEach((byte, i) => byte === 0x0a && lineStarts.push(i + 1));
    const at = lineStarts[6]! + 30; // inside the JSON of line 7: seq 5
    bytes[at] = bytes[at]! ^ 0x04;
    writeFileSync(path, bytes);

    const { records, problems } = await (await openLog(path)).readAll();
    expect(records.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 6, 7, 8, 9]);
    expect(problems).toEqual([
      { kind: "checksum", line: 7, message: expect.stringContaining("checksum mismatch") },
      { kind: "gap", line: 8, actor: "scheduler", expected: 5, found: 6, message: "line 8: actor scheduler expected seq 5, found 6: seq 5 is missing" },
    ]);
  });

  it("reports a gap in one actor's sequence and keeps the record", async () => {
    const path = join(dir, "gap.natlog");
    writeRawLog(path, [transition("scheduler", 0), transition("worker.a", 0), transition("scheduler", 1), transition("scheduler", 4), transition("worker.a", 1), transition("scheduler", 5)]);
    const { records, problems } = await (await openLog(path)).readAll();
    expect(records.map((r) => `${r.actor}:${r.seq}`)).toEqual(["scheduler:0", "worker.a:0", "scheduler:1", "scheduler:4", "worker.a:1", "scheduler:5"]);
    expect(problems).toEqual([
      { kind: "gap", line: 5, actor: "scheduler", expected: 2, found: 4, message: "line 5: actor scheduler expected seq 2, found 4: seqs 2..3 are missing" },
    ]);
  });

  it("reports repeated and backward seqs as duplicates and drops those records", async () => {
    const path = join(dir, "dup.natlog");
    writeRawLog(path, [transition("scheduler", 0), transition("scheduler", 1), transition("scheduler", 1, "again"), transition("scheduler", 2), transition("scheduler", 0, "back")]);
    const { records, problems } = await (await openLog(path)).readAll();
    expect(records.map((r) => (r as TransitionRecord).id)).toEqual(["inc-0", "inc-1", "inc-2"]);
    expect(problems.map(({ kind, line, actor, expected, found }) => ({ kind, line, actor, expected, found }))).toEqual([
      { kind: "duplicate", line: 4, actor: "scheduler", expected: 2, found: 1 },
      { kind: "duplicate", line: 6, actor: "scheduler", expected: 3, found: 0 },
    ]);
  });

  it("reports malformed lines by line number and never skips one silently", async () => {
    const path = join(dir, "malformed.natlog");
    const notJson = "{oops";
    const noActor = JSON.stringify({ seq: 1, t: 0, kind: "stop" });
    const withCrc = (json: string) => `${crc32(json).toString(16).padStart(8, "0")} ${json}`;
    writeRawLog(path, [transition("scheduler", 0), "not a record", withCrc(notJson), "", withCrc(noActor), transition("scheduler", 1)]);
    const { records, problems } = await (await openLog(path)).readAll();
    expect(records.map((r) => r.seq)).toEqual([0, 1]);
    expect(problems.map((p) => [p.kind, p.line])).toEqual([
      ["malformed", 3],
      ["malformed", 4],
      ["malformed", 5],
      ["malformed", 6],
    ]);
    expect(problems[2]!.message).toBe("line 5: empty line");
    expect(problems[3]!.message).toBe("line 6: record has no actor");
    expect(readLogSync(path).problems).toEqual(problems);
  });

  it("reports an unsupported header version and reads no records", async () => {
    const path = join(dir, "v3.natlog");
    writeRawLog(path, [transition("scheduler", 0)], '{"format":"natsched-log","v":3,"created":1,"meta":{}}');
    const reader = await openLog(path);
    expect(reader.header.v).toBe(3);
    const result = await reader.readAll();
    expect(result.records).toEqual([]);
    expect(result.problems).toEqual([{ kind: "version", line: 1, message: "line 1: log format version 3 is not supported (this reader reads versions 1 and 2); no records read" }]);
    expect(readLogSync(path)).toMatchObject({ records: [], problems: result.problems });
    await expect(FileLogSink.open(path, { append: true })).rejects.toBeInstanceOf(LogCorruptError);
  });

  it("throws LogCorruptError for a file that is not a natsched log", async () => {
    const notLog = join(dir, "not.natlog");
    writeFileSync(notLog, '{"hello":1}\n');
    await expect(openLog(notLog)).rejects.toMatchObject({ code: "LOG_CORRUPT", line: 1 });
    expect(() => readLogSync(notLog)).toThrow(LogCorruptError);
    const noNewline = join(dir, "torn-header.natlog");
    writeFileSync(noNewline, '{"format":"natsched-log","v":1');
    await expect(openLog(noNewline)).rejects.toMatchObject({ code: "LOG_CORRUPT" });
  });

  describe("filters", () => {
    const records: LogRecord[] = [
      { actor: "scheduler", seq: 0, t: 0, kind: "input", event: { op: "update-graph", tasks: [{ key: "x" }, { key: "y" }] } },
      { actor: "scheduler", seq: 1, t: 0, kind: "transition", machine: "task", id: "x", event: "compute", from: "released", to: "waiting" },
      { actor: "worker.w1", seq: 0, t: 0, kind: "input", event: { op: "compute-task", key: "x" } },
      { actor: "worker.w1", seq: 1, t: 0, kind: "input", event: { op: "free-keys", keys: ["y", "x"] } },
      { actor: "worker.w1", seq: 2, t: 0, kind: "transition", machine: "wtask", id: "y", event: "free", from: "memory", to: "released" },
      { actor: "scheduler", seq: 2, t: 0, kind: "input", event: { op: "heartbeat", worker: "x" } },
      { actor: "worker.w2", seq: 1, t: 0, kind: "stop" },
    ];

    it("filter by actor, key and kinds, and still check every line", async () => {
      const path = join(dir, "filters.natlog");
      await writeLog(path, records);
      const reader = await openLog(path);
      const seqsOf = async (filter: Parameters<typeof reader.readAll>[0]) => (await reader.readAll(filter)).records.map((r) => `${r.actor}:${r.seq}`);

      expect(await seqsOf({ actor: "worker.w1" })).toEqual(["worker.w1:0", "worker.w1:1", "worker.w1:2"]);
      expect(await seqsOf({ key: "x" })).toEqual(["scheduler:0", "scheduler:1", "worker.w1:0", "worker.w1:1"]);
      expect(await seqsOf({ key: "y" })).toEqual(["scheduler:0", "worker.w1:1", "worker.w1:2"]);
      expect(await seqsOf({ kinds: ["transition"] })).toEqual(["scheduler:1", "worker.w1:2"]);
      expect(await seqsOf({ actor: "worker.w1", key: "x", kinds: ["input"] })).toEqual(["worker.w1:0", "worker.w1:1"]);
      // worker.w2 starts at seq 1: reported whatever the filter
      expect((await reader.readAll({ actor: "scheduler" })).problems).toEqual([
        { kind: "gap", line: 8, actor: "worker.w2", expected: 0, found: 1, message: "line 8: actor worker.w2 expected seq 0, found 1: seq 0 is missing" },
      ]);
      expect(readLogSync(path, { key: "x" }).records).toEqual([records[0], records[1], records[2], records[3]]);

      const streamed: number[] = [];
      for await (const record of reader.records({ actor: "scheduler" })) streamed.push(record.seq);
      expect(streamed).toEqual([0, 1, 2]);
      expect(reader.problems).toHaveLength(1);
    });
  });

  it("appends to an existing log after checking its header, keeping the header", async () => {
    const path = join(dir, "append.natlog");
    await writeLog(path, [0, 1, 2].map((seq) => transition("scheduler", seq)), { first: true });
    const header = readFileSync(path, "utf8").split("\n")[0];

    const sink = await FileLogSink.open(path, { append: true, meta: { first: false } });
    expect(sink.truncatedTail).toBe(0);
    for (const seq of [3, 4]) sink.append(transition("scheduler", seq));
    await sink.close();

    expect(readFileSync(path, "utf8").split("\n")[0]).toBe(header);
    const { header: read, records, problems } = readLogSync(path);
    expect(read.meta).toEqual({ ...writerMeta(), first: true });
    expect(records.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(problems).toEqual([]);
  });

  it("cuts a torn tail off before appending, and creates a missing log", async () => {
    const path = join(dir, "torn-append.natlog");
    await writeLog(path, [0, 1, 2].map((seq) => transition("scheduler", seq)));
    const sizeBefore = statSync(path).size;
    appendFileSync(path, encodeRecordLine(transition("scheduler", 3)).slice(0, 25));

    const sink = await FileLogSink.open(path, { append: true });
    expect(sink.truncatedTail).toBe(25);
    expect(statSync(path).size).toBe(sizeBefore);
    sink.append(transition("scheduler", 3));
    await sink.close();
    expect(readLogSync(path)).toMatchObject({ problems: [], records: [0, 1, 2, 3].map((seq) => transition("scheduler", seq)) });

    const fresh = join(dir, "fresh.natlog");
    const created = await FileLogSink.open(fresh, { append: true, meta: { m: 1 } });
    created.append(transition("scheduler", 0));
    await created.close();
    expect(readLogSync(fresh)).toMatchObject({ header: { meta: { m: 1 } }, records: [transition("scheduler", 0)], problems: [] });
  });

  it("never throws from append on an I/O error, and rejects flush and close with the first error", async () => {
    // A real I/O error: the log is a named pipe whose reader goes away, so writes fail with EPIPE.
    const path = join(dir, "ioerror.fifo");
    execFileSync("mkfifo", [path]);
    const reader = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const sink = await FileLogSink.open(path);
    await reader.close();
    sink.append(transition("scheduler", 0));
    const failure = await sink.flush().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toMatchObject({ code: "EPIPE" });
    expect(() => sink.append(transition("scheduler", 1))).not.toThrow();
    await expect(sink.flush()).rejects.toBe(failure);
    await expect(sink.close()).rejects.toBe(failure);
  });

  it("throws ClosedError when appending after close", async () => {
    const sink = await FileLogSink.open(join(dir, "closed.natlog"));
    await sink.close();
    expect(() => sink.append(transition("scheduler", 0))).toThrow(ClosedError);
    await expect(sink.close()).resolves.toBeUndefined();
  });

  it("stops reading when the consumer stops iterating", async () => {
    const path = join(dir, "early.natlog");
    await writeLog(path, Array.from({ length: 1000 }, (_, seq) => transition("scheduler", seq)));
    const reader = await openLog(path);
    const seen: number[] = [];
    for await (const record of reader.records()) {
      seen.push(record.seq);
      if (seen.length === 3) break;
    }
    expect(seen).toEqual([0, 1, 2]);
    expect((await reader.readAll()).records).toHaveLength(1000);
  });
});

describe("MemoryLogSink, NullLogSink and checkSequences", () => {
  it("keeps copies of records in order", async () => {
    const sink = new MemoryLogSink();
    const record = transition("scheduler", 0);
    sink.append(record);
    record.to = "mutated";
    sink.append(transition("scheduler", 1));
    await sink.flush();
    expect(sink.records).toEqual([transition("scheduler", 0), transition("scheduler", 1)]);
    expect(sink.location).toBe("memory");
    await sink.close();
    expect(() => sink.append(transition("scheduler", 2))).toThrow(ClosedError);

    const shared = new MemoryLogSink({ copy: false, location: "sim" });
    shared.append(record);
    expect(shared.records[0]).toBe(record);
  });

  it("checkSequences reports gaps and duplicates of an in-memory log", () => {
    const records = [transition("a", 0), transition("b", 1), transition("a", 1), transition("a", 1), transition("a", 3)];
    expect(checkSequences(records)).toEqual([
      { kind: "gap", actor: "b", expected: 0, found: 1, message: "record #1: actor b expected seq 0, found 1: seq 0 is missing" },
      { kind: "duplicate", actor: "a", expected: 2, found: 1, message: "record #3: actor a expected seq 2, found 1, which is not after the seqs already read" },
      { kind: "gap", actor: "a", expected: 2, found: 3, message: "record #4: actor a expected seq 2, found 3: seq 2 is missing" },
    ]);
    expect(checkSequences([transition("a", 0), transition("a", 1)])).toEqual([]);
  });

  it("NullLogSink accepts and discards", async () => {
    const sink = new NullLogSink();
    sink.append(transition("a", 0));
    await expect(sink.flush()).resolves.toBeUndefined();
    await expect(sink.close()).resolves.toBeUndefined();
  });
});

describe("recordJson", () => {
  it("matches JSON.stringify for every record shape, including keys that need escaping", async () => {
    const { recordJson } = await import("../log/record-json.js");
    const keys = ["inc-1a2b", "('x', 3)", 'say "hi"', "back\\slash", "tab\there", "emoji-\u{1F600}", "lone-\ud800", "nl\n"];
    for (const id of keys) {
      const transition = { actor: "worker.a", seq: 7, t: 1795321934.660123, kind: "transition", machine: "wtask", id, event: "DONE", from: "executing", to: "memory" } as const;
      expect(recordJson(transition)).toBe(JSON.stringify(transition));
      const withWhy = { ...transition, why: { worker: "a", candidates: [["a", 0.5, 10]] } };
      expect(recordJson(withWhy)).toBe(JSON.stringify(withWhy));
      const input = { actor: "scheduler", seq: 1, t: 2, kind: "input", event: { op: "task-finished", key: id } } as const;
      expect(recordJson(input)).toBe(JSON.stringify(input));
    }
  });
});
