import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as zlib from "node:zlib";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { captureDecoderProgram } from "../log/capture-decoder.js";
import { CAPTURE_TAGS } from "../log/capture-tags.js";
import { FrameScanner, type FrameScanOptions } from "../log/frame-scanner.js";
import { decodeFrameHead, FRAME_HEAD_BYTES } from "../log/frame-format.js";
import { exportLog } from "../tools/jetstream-export.js";
import { LogCapture } from "../log/log-capture.js";
import { logWriterProgram } from "../log/log-format-thread.js";
import { FileLogSink, openLog, readLogSync, type LogProblem, type LogRecord, type TransitionRecord } from "../log/index.js";
import { replay } from "../replay/replay.js";
import { runCli } from "../cli/run.js";
import { number, object, text, writeCaptured } from "./log-arbitraries.js";
import { recordRun } from "./replay-fixtures.js";
import type { MachineName } from "../machines/reasons.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-frames-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What a reader gives back for a record: what JSON gives back (NaN as null, -0 as 0, undefined fields gone). */
const asJson = (r: unknown): unknown => JSON.parse(JSON.stringify(r));

const name = fc.constantFrom("scheduler", "worker.a", "task", "READY", "memory", "processing.assigned", "task-key-0123456789", "x");
const transition = fc
  .tuple(name, fc.nat(), number, name, fc.oneof(name, text), name, name, name)
  // Any machine name: the format keeps whatever name a log holds.
  .map(([actor, seq, t, machine, id, event, from, to]): TransitionRecord => ({ actor, seq, t, kind: "transition", machine: machine as MachineName, id, event, from, to }));
const record: fc.Arbitrary<LogRecord> = fc.oneof(
  transition,
  fc.tuple(transition, object).map(([r, why]) => ({ ...r, why })),
  fc.tuple(transition, object).map(([{ actor, seq, t }, event]) => ({ actor, seq, t, kind: "input" as const, event: { ...event, op: "x", t } })),
  fc.tuple(transition, text, object).map(([{ actor, seq, t }, role, init]) => ({ actor, seq, t, kind: "start" as const, role, init })),
  fc.tuple(transition, fc.option(text, { nil: undefined })).map(([{ actor, seq, t }, reason]) => (reason === undefined ? { actor, seq, t, kind: "stop" as const } : { actor, seq, t, kind: "stop" as const, reason })),
  // Not the recorder's layout, or values only JSON.stringify handles: kept as text.
  transition.map(({ kind, actor, seq, t, ...rest }) => ({ kind, actor, seq, t, ...rest })),
  fc.tuple(transition, object).map(([{ actor, seq, t }, event]) => ({ actor, seq, t, kind: "input", event: { ...event, op: "y", at: new Date(0) } }) as unknown as LogRecord),
);

/** Captures the records into batches of the given size, writes each as a frame, returns the bytes. */
const framesOf = (records: LogRecord[], batch: { nums: number; chars: number }): Buffer => writeCaptured(records, batch, 2);

/** Scans frame bytes as a reader does (no sequence checks matter here: every record is its actor's next). */
function scan(bytes: Buffer, chunk = bytes.length, options: FrameScanOptions = {}): { records: LogRecord[]; problems: LogProblem[] } {
  const records: LogRecord[] = [];
  const problems: LogProblem[] = [];
  const scanner = new FrameScanner(0, { problem: (p) => problems.push(p), record: (r) => records.push(r) > 0 }, options);
  for (let at = 0; at < bytes.length; at += chunk) scanner.push(bytes.subarray(at, Math.min(at + chunk, bytes.length)));
  scanner.finish();
  return { records, problems };
}

/** Numbers every record as its actor's next, so that sequence checks pass. */
function sequenced(records: LogRecord[]): LogRecord[] {
  const next = new Map<string, number>();
  return records.map((r) => {
    const seq = next.get(r.actor) ?? 0;
    next.set(r.actor, seq + 1);
    return { ...r, seq } as LogRecord;
  });
}

describe("version-2 frames", () => {
  it("give back every record as JSON would, however batches are cut and bytes arrive", () => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 14 }), fc.constantFrom({ nums: 16, chars: 16 }, { nums: 64, chars: 64 }, { nums: 4096, chars: 4096 }), fc.integer({ min: 1, max: 300 }), (raw, batch, chunk) => {
        const records = sequenced(raw.filter((r) => Number.isFinite(r.t)));
        const bytes = framesOf(records, batch);
        expect(bytes.length % 8).toBe(0);
        const read = scan(bytes, chunk);
        expect(read.problems).toEqual([]);
        expect(read.records).toEqual(records.map(asJson));
      }),
      { numRuns: 400 },
    );
  });

  it("keep task keys, names and object shapes right across batches, records rolled back at a full batch included", () => {
    const keys = Array.from({ length: 5 }, (_, i) => `task-key-number-${i}-of-the-pool`);
    const key = fc.constantFrom(...keys);
    const recurring: fc.Arbitrary<LogRecord> = fc.oneof(
      fc.tuple(key, fc.constantFrom("READY", "EXECUTE")).map(([id, event]) => ({ actor: "w", seq: 0, t: 1.5, kind: "transition" as const, machine: "wtask" as const, id, event, from: "a", to: "b" })),
      fc.tuple(key, key).map(([id, other]) => ({ actor: "s", seq: 0, t: 2, kind: "transition" as const, machine: "task" as const, id, event: "ASSIGN", from: "q", to: "p", why: { worker: other, cost: [1, { key: other }] } })),
      fc.tuple(key, fc.array(key, { maxLength: 3 })).map(([k, ks]) => ({ actor: "w", seq: 0, t: 3, kind: "input" as const, event: { op: "free-keys", key: k, keys: ks, nested: { key: k, deps: ks.map((d) => ({ key: d })) }, t: 3 } })),
      // A dictionary keyed by task keys (each its own shape), and one too wide for a shape.
      fc.array(key, { maxLength: 4 }).map((ks) => ({ actor: "s", seq: 0, t: 4, kind: "input" as const, event: { op: "who-has", who: Object.fromEntries(ks.map((k) => [k, ["w"]])), t: 4 } })),
      fc.constant({ actor: "s", seq: 0, t: 5, kind: "input" as const, event: { op: "wide", ...Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`f${i}`, i])), t: 5 } }),
    );
    fc.assert(
      fc.property(fc.array(recurring, { maxLength: 40 }), fc.constantFrom({ nums: 24, chars: 64 }, { nums: 256, chars: 256 }, { nums: 4096, chars: 4096 }), (raw, batch) => {
        const records = sequenced(raw);
        expect(scan(framesOf(records, batch)).records).toEqual(records.map(asJson));
      }),
      { numRuns: 300 },
    );
  });

  it("with transientTransitions, hand over a log's plain transitions in one object", () => {
    const transitions = sequenced(["a", "b", "c"].map((id, i) => ({ actor: "s", seq: 0, t: i, kind: "transition", machine: "task", id, event: "QUEUE", from: "released", to: "queued", ...(i === 1 ? { why: { worker: "w" } } : {}) }) as LogRecord));
    const objects = new Set<LogRecord>();
    const ids: string[] = [];
    const scanner = new FrameScanner(0, { problem: () => {}, record: (r) => (objects.add(r), ids.push(r.kind === "transition" ? r.id : ""), true) }, { transientTransitions: true });
    scanner.push(framesOf(transitions, { nums: 4096, chars: 4096 }));
    scanner.finish();
    expect(ids).toEqual(["a", "b", "c"]);
    expect(objects.size).toBe(1);
  });

  /**
   * Records framed, then scanned whole and with `options`: the same records and problems,
   * except the part `leanPart` names (an input's event, a transition's why), which is whole
   * or exactly its `fields`. Returns how many parts were read lean.
   */
  function leanRuns(extra: fc.Arbitrary<LogRecord>, options: FrameScanOptions, fields: ReadonlySet<string>, leanPart: (r: LogRecord) => "event" | "why" | undefined): number {
    let lean = 0;
    fc.assert(
      fc.property(fc.array(fc.oneof(record, extra), { maxLength: 30 }), fc.constantFrom({ nums: 64, chars: 64 }, { nums: 4096, chars: 4096 }), fc.integer({ min: 1, max: 300 }), (raw, batch, chunk) => {
        const records = sequenced(raw.filter((r) => Number.isFinite(r.t)));
        const bytes = framesOf(records, batch);
        const whole = scan(bytes, chunk);
        const read = scan(bytes, chunk, options);
        expect(read.problems).toEqual(whole.problems);
        expect(read.records.length).toBe(whole.records.length);
        read.records.forEach((r, i) => {
          const w = whole.records[i]!;
          const part = leanPart(w);
          const [readPart, wholePart] = part === undefined ? [undefined, undefined] : [(r as unknown as Record<string, unknown>)[part], (w as unknown as Record<string, unknown>)[part]];
          expect({ ...r, ...(part ? { [part]: undefined } : {}) }).toEqual({ ...w, ...(part ? { [part]: undefined } : {}) });
          if (part === undefined || JSON.stringify(readPart) === JSON.stringify(wholePart)) return;
          expect(readPart).toEqual(Object.fromEntries(Object.entries(wholePart as object).filter(([k]) => fields.has(k))));
          lean++;
        });
      }),
      { numRuns: 400 },
    );
    return lean;
  }

  const poolKey = fc.constantFrom(...Array.from({ length: 4 }, (_, i) => `task-key-number-${i}-of-the-pool`));

  it("with inputFields, build only those fields of an input's event (all of them for a shape new in its frame), and every other record and problem as without", () => {
    const fields = new Set(["op", "key", "keys", "t"]);
    const key = poolKey;
    const input = fc.oneof(
      fc.tuple(key, fc.array(key, { maxLength: 3 }), fc.string()).map(([k, ks, s]) => ({ actor: "w", seq: 0, t: 3, kind: "input" as const, event: { op: "compute-task", key: k, deps: ks, func: s, nested: { key: k, deps: ks.map((d) => ({ key: d })) }, keys: ks, t: 3 } })),
      fc.tuple(key, key).map(([id, other]) => ({ actor: "s", seq: 0, t: 2, kind: "transition" as const, machine: "task" as const, id, event: "ASSIGN", from: "q", to: "p", why: { worker: other } })),
      fc.tuple(fc.array(key, { maxLength: 3 }), object).map(([ks, extra]) => ({ actor: "c", seq: 0, t: 4, kind: "input" as const, event: { op: "reports", ops: ks.map((k) => ({ op: "key-in-memory", key: k, workers: ["w"] })), extra, t: 4 } })),
    ) as fc.Arbitrary<LogRecord>;
    expect(leanRuns(input, { inputFields: fields }, fields, (r) => (r.kind === "input" ? "event" : undefined))).toBeGreaterThan(100);
  });

  it("with whyFields, build only those fields of a transition's why (all of them for a shape new in its frame), and every other record and problem as without", () => {
    const fields = new Set(["worker", "victim", "thief", "reason"]);
    const worker = fc.constantFrom("worker-0", "worker-1", "a-worker-with-a-long-name-2");
    const key = poolKey;
    const transition = (id: string, event: string, why: Record<string, unknown>) => ({ actor: "s", seq: 0, t: 2, kind: "transition" as const, machine: "task" as const, id, event, from: "q", to: "p", why });
    const withWhy = fc.oneof(
      fc.tuple(key, worker, fc.array(worker, { maxLength: 4 }), fc.nat()).map(([id, w, ws, slots]) => transition(id, "ASSIGN", { worker: w, rule: "rootish-queuing", saturation: { slots, limit: "dask" }, candidates: ws.map((c, i) => [c, i]) })),
      fc.tuple(key, worker, worker, object).map(([id, victim, thief, extra]) => transition(id, "STEAL", { victim, thief, extra })),
      fc.tuple(key, fc.string(), fc.array(key, { maxLength: 3 })).map(([id, reason, keys]) => transition(id, "CLOSE", { reason, keys })),
    ) as fc.Arbitrary<LogRecord>;
    expect(leanRuns(withWhy, { whyFields: fields }, fields, (r) => (r.kind === "transition" && r.why !== undefined ? "why" : undefined))).toBeGreaterThan(100);
  });

  it("with transientTransitions, hand over every transition in one object refilled, with the same fields, and every other record and problem as without", () => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 30 }), fc.constantFrom({ nums: 64, chars: 64 }, { nums: 4096, chars: 4096 }), fc.integer({ min: 1, max: 300 }), fc.boolean(), (raw, batch, chunk, torn) => {
        const records = sequenced(raw.filter((r) => Number.isFinite(r.t)));
        let bytes = framesOf(records, batch);
        if (torn) bytes = bytes.subarray(0, Math.floor(bytes.length * 0.7));
        const whole = scan(bytes, chunk);
        const copies: unknown[] = [];
        const problems: LogProblem[] = [];
        const scanner = new FrameScanner(0, { problem: (p) => problems.push(p), record: (r) => (copies.push(r.kind === "transition" && r.why === undefined ? { ...r, why: undefined } : { ...r }), true) }, { transientTransitions: true });
        for (let at = 0; at < bytes.length; at += chunk) scanner.push(bytes.subarray(at, Math.min(at + chunk, bytes.length)));
        scanner.finish();
        expect(problems).toEqual(whole.problems);
        // toEqual takes a field undefined as one absent: a transition without `why` has it undefined.
        expect(copies).toEqual(whole.records);
      }),
      { numRuns: 300 },
    );
  });

  it("take a record bigger than a batch in one walk once it starts an empty batch, and leave a batch that holds others as it was", () => {
    const capture = new LogCapture(new Float64Array(32), new Uint16Array(64));
    expect(capture.transition("s", 0, 1, "task", "k", "QUEUE", "released", "queued", undefined)).toBe(true);
    const before = { n: capture.n, c: capture.c, records: capture.records };
    let reads = 0;
    const tasks = Array.from({ length: 500 }, (_, i) => ({ key: `task-key-${i}-of-a-big-graph`, args: [i, -0, 0.5], deps: i > 0 ? [`task-key-${i - 1}-of-a-big-graph`] : [] }));
    const event = { op: "update-graph", tasks, t: 2 } as Record<string, unknown>;
    // A getter counts the walks: every attempt reads it once.
    Object.defineProperty(event, "client", { enumerable: true, get: () => (reads++, "client-1") });
    const big = { actor: "s", seq: 1, t: 2, kind: "input" as const, event: event as never };
    expect(capture.input("s", 1, event as never)).toBe(false);
    expect({ n: capture.n, c: capture.c, records: capture.records }).toEqual(before);
    const frames: Buffer[] = [];
    const writer = logWriterProgram(captureDecoderProgram(CAPTURE_TAGS), zlib).writer(2);
    const seal = (): void => {
      writer.write(capture.nums, capture.chars, capture.n, capture.c, capture.records, (bytes, start, end) => frames.push(Buffer.from(bytes.subarray(start, end))));
      capture.replace(new Float64Array(32), new Uint16Array(64));
    };
    seal();
    reads = 0;
    expect(capture.input("s", 1, event as never)).toBe(true);
    expect(reads).toBe(1);
    expect(capture.nums.length).toBeGreaterThan(32);
    seal();
    const read = scan(Buffer.concat(frames));
    expect(read.problems).toEqual([]);
    expect(read.records).toEqual([{ actor: "s", seq: 0, t: 1, kind: "transition", machine: "task", id: "k", event: "QUEUE", from: "released", to: "queued" }, asJson(big)]);
  });

  it("decode nothing but throw a clear error on batches that are not the capture's", () => {
    const decoders = [captureDecoderProgram(CAPTURE_TAGS).decoder(), captureDecoderProgram(CAPTURE_TAGS).decoder({ inputFields: new Set(["op", "key"]) })];
    const sink = { record: () => undefined, raw: () => undefined };
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer({ min: -2, max: 30 }), fc.double()), { maxLength: 40 }), fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 20 }), (nums, chars) => {
        for (const decoder of decoders) {
          try {
            decoder.decode(Float64Array.from(nums), Uint16Array.from(chars), nums.length, chars.length, sink);
          } catch (err) {
            expect((err as Error).message).toMatch(/^malformed batch at item \d+: /);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("report damage and keep every record outside it: a flipped body byte, a flipped head byte, junk between frames, a torn end", () => {
    const records = sequenced(Array.from({ length: 60 }, (_, i): LogRecord => ({ actor: `a${i % 2}`, seq: 0, t: i, kind: "transition", machine: "task", id: `k-${i}`, event: "E", from: "x", to: "y" })));
    const frames = Array.from({ length: 6 }, (_, f) => framesOf(records.slice(f * 10, f * 10 + 10), { nums: 4096, chars: 4096 }));
    const at = (f: number): number => frames.slice(0, f).reduce((sum, b) => sum + b.length, 0);
    const damaged = frames.map((b) => Buffer.from(b));
    damaged[1]![FRAME_HEAD_BYTES + 5]! ^= 0x40; // body of frame 1
    damaged[3]![6]! ^= 0x01; // head of frame 3 (its n): the head's own CRC catches it
    const junk = Buffer.from("not a frame at all, but nsF2 once");
    const bytes = Buffer.concat([...damaged.slice(0, 5), junk, damaged[5]!.subarray(0, damaged[5]!.length - 3)]);
    const read = scan(bytes, 17);
    const kept = [0, 2, 4].flatMap((f) => records.slice(f * 10, f * 10 + 10));
    expect(read.records).toEqual(kept.map(asJson));
    const kinds = read.problems.map((p) => `${p.kind}@${p.offset}`);
    expect(kinds).toEqual([
      `checksum@${at(1)}`,
      "gap@" + at(2),
      "gap@" + at(2),
      `malformed@${at(3)}`,
      "gap@" + at(4),
      "gap@" + at(4),
      `malformed@${at(5)}`,
      `torn@${at(5) + junk.length}`,
    ]);
    expect(read.problems[0]!.message).toMatch(/checksum mismatch .*: its 10 records are skipped/);
    expect(read.problems[3]!.message).toBe(`bytes ${at(3)}..${at(4) - 1} are not a frame (${at(4) - at(3)} bytes skipped)`);
    expect(read.problems[7]!.message).toMatch(/torn last frame/);
    expect(read.problems[1]!.message).toMatch(/^record #10 \(frame at byte \d+\): actor a0 expected seq 5, found 10/);
  });
});

describe("a share of a version-2 log (a parallel replay's part)", () => {
  /** Scans as one part of a parallel replay does: only `taken` actors' records handed over, problems of all. */
  function scanShare(bytes: Buffer, taken: (actor: string) => boolean, chunk: number): { records: LogRecord[]; problems: LogProblem[]; first: Map<string, number> } {
    const records: LogRecord[] = [];
    const problems: LogProblem[] = [];
    const first = new Map<string, number>();
    const scanner = new FrameScanner(0, { problem: (p) => problems.push(p), record: (r) => records.push(r) > 0 }, { takes: taken, firstRecord: (actor, index) => first.set(actor, index) });
    for (let at = 0; at < bytes.length; at += chunk) scanner.push(bytes.subarray(at, Math.min(at + chunk, bytes.length)));
    scanner.finish();
    return { records, problems, first };
  }

  it("hands over the taken actors' records and reports a bad record of an actor it does not take, as a whole scan does", () => {
    const records = sequenced(Array.from({ length: 40 }, (_, i): LogRecord => ({ actor: `a${i % 2}`, seq: 0, t: i, kind: "transition", machine: "task", id: `k-${i}`, event: "E", from: "x", to: "y", ...(i % 4 === 1 ? { why: { rule: "r", n: i } } : {}) }) as LogRecord));
    // Records of a1 that are not records (a seq that is not a whole number, a why that is not an object), late in a frame.
    const bad = records.map((r, i) => (i === 13 ? { ...r, seq: 6.5 } : i === 33 ? { ...r, why: [1] } : r)) as LogRecord[];
    const bytes = Buffer.concat([0, 1, 2, 3].map((f) => framesOf(bad.slice(f * 10, f * 10 + 10), { nums: 4096, chars: 4096 })));
    const whole = scan(bytes);
    for (const chunk of [bytes.length, 64, 7]) {
      const part = scanShare(bytes, (actor) => actor === "a0", chunk);
      expect(part.records).toEqual(whole.records.filter((r) => r.actor === "a0"));
      expect(part.first).toEqual(new Map([["a0", 0]]));
      // The whole scan's problems but the gaps of a1, whose sequence only the part taking it checks.
      expect(part.problems).toEqual(whole.problems.filter((p) => p.kind === "malformed"));
      expect(part.problems.map((p) => p.message)).toEqual([
        expect.stringMatching(/^record #13 \(frame at byte \d+\): record seq is not a non-negative integer$/),
        expect.stringMatching(/^record #33 \(frame at byte \d+\): transition record why is not an object$/),
      ]);
    }
  });
});

describe("a version-2 log file", () => {
  it("is what FileLogSink writes by default: a padded header, aligned frames, read back streaming and whole", async () => {
    const path = join(dir, "default.natlog");
    const sink = await FileLogSink.open(path, { meta: { run: 1 }, batchBytes: 2048 });
    const records = sequenced(Array.from({ length: 3000 }, (_, i): LogRecord => (i % 3 === 0 ? { actor: "w", seq: 0, t: i, kind: "input", event: { op: "compute-task", key: `k-${i >> 1}`, args: [i, -0], t: i } } : { actor: "s", seq: 0, t: i / 7, kind: "transition", machine: "task", id: `k-${i >> 1}`, event: "E", from: "a", to: "b" })));
    for (const r of records) sink.append(r);
    await sink.close();
    const bytes = readFileSync(path);
    const headerEnd = bytes.indexOf(0x0a) + 1;
    expect(headerEnd % 8).toBe(0);
    expect(JSON.parse(bytes.toString("utf8", 0, headerEnd))).toMatchObject({ format: "natsched-log", v: 2, meta: { run: 1 } });
    let frames = 0;
    for (let at = headerEnd; at < bytes.length; frames++) {
      const head = decodeFrameHead(bytes, at)!;
      expect(head).toBeDefined();
      at += FRAME_HEAD_BYTES + head.bodyBytes;
    }
    expect(frames).toBeGreaterThan(10);
    const expected = records.map(asJson);
    expect(readLogSync(path)).toMatchObject({ records: expected, problems: [] });
    expect(await (await openLog(path)).readAll()).toEqual({ records: expected, problems: [] });
    expect(await (await openLog(path)).readAll({ kinds: ["input"], key: "k-3" })).toEqual({ records: [expected[6]], problems: [] });
  });

  it("cuts a torn frame off before appending and goes on in its own format", async () => {
    const path = join(dir, "append.natlog");
    const first = await FileLogSink.open(path);
    for (let seq = 0; seq < 3; seq++) first.append({ actor: "s", seq, t: seq, kind: "stop" });
    await first.close();
    const size = statSync(path).size;
    appendFileSync(path, Buffer.from([0x6e, 0x73, 0x46, 0x32, 9, 9, 9])); // a head cut short
    const again = await FileLogSink.open(path, { append: true, format: "jsonl" });
    expect(again.truncatedTail).toBe(7);
    expect(again.formatVersion).toBe(2);
    again.append({ actor: "s", seq: 3, t: 3, kind: "stop" });
    await again.close();
    expect(statSync(path).size).toBeGreaterThan(size);
    expect(readLogSync(path)).toMatchObject({ records: [0, 1, 2, 3].map((seq) => ({ actor: "s", seq, t: seq, kind: "stop" })), problems: [] });
  });

  it("refuses an unknown format option", async () => {
    await expect(FileLogSink.open(join(dir, "bad.natlog"), { format: "xml" as never })).rejects.toMatchObject({ code: "BAD_OPTION" });
  });

  it("replays a real run, notices a changed transition, and converts to JSON lines and back", async () => {
    const path = join(dir, "run.natlog");
    await recordRun({ path });
    expect(readFileSync(path).subarray(0, 40).toString()).toMatch(/"v":2/);
    const ok = await replay(path);
    expect(ok.ok).toBe(true);
    expect(ok.problems).toEqual([]);
    const { records } = readLogSync(path);
    expect(ok.stats.transitions).toBe(records.filter((r) => r.kind === "transition").length);

    // The same log, one scheduler transition changed, written as a binary log again.
    const at = records.findIndex((r) => r.kind === "transition" && r.actor === "scheduler" && r.to === "memory");
    const tampered = join(dir, "tampered.natlog");
    const sink = await FileLogSink.open(tampered);
    records.forEach((r, i) => sink.append(i === at ? { ...(r as TransitionRecord), to: "erred" } : r));
    await sink.close();
    const bad = await replay(tampered);
    expect(bad.ok).toBe(false);
    expect(Object.keys(bad.actors).filter((a) => bad.actors[a]!.divergence !== undefined)).toEqual(["scheduler"]);
    expect(bad.actors.scheduler!.divergence!.recorded).toMatchObject({ seq: records[at]!.seq, to: "erred" });

    const lines = join(dir, "run.jsonl.natlog");
    expect((await exportLog(path, lines, { format: "jsonl" })).problems).toEqual([]);
    expect(readFileSync(lines, "utf8").split("\n")[1]).toMatch(/^[0-9a-f]{8} \{"actor":/);
    expect(readLogSync(lines).records).toEqual(records);
    const back = join(dir, "run.back.natlog");
    await exportLog(lines, back, { format: "binary" });
    expect(readLogSync(back)).toMatchObject({ header: { v: 2, created: readLogSync(path).header.created }, records, problems: [] });
    expect((await replay(back)).ok).toBe(true);
  });

  it("is read past a damaged frame by replay, which reports it", async () => {
    const path = join(dir, "damaged.natlog");
    await recordRun({ path });
    const bytes = readFileSync(path);
    const headerEnd = bytes.indexOf(0x0a) + 1;
    const second = headerEnd + FRAME_HEAD_BYTES + decodeFrameHead(bytes, headerEnd)!.bodyBytes;
    if (second < bytes.length) {
      bytes[second + FRAME_HEAD_BYTES + 3]! ^= 0xff;
    } else {
      bytes[headerEnd + FRAME_HEAD_BYTES + 3]! ^= 0xff;
    }
    writeFileSync(path, bytes);
    const result = await replay(path);
    expect(result.problems.some((p) => p.kind === "checksum")).toBe(true);
  });

  it("turns into JSON lines and back from the command line, and says so for a bad format", async () => {
    const path = join(dir, "cli.natlog");
    const sink = await FileLogSink.open(path);
    sink.append({ actor: "s", seq: 0, t: 1, kind: "input", event: { op: "x", key: "k", t: 1 } });
    await sink.close();
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    const lines = join(dir, "cli.jsonl.natlog");
    expect(await runCli(["log", "export", path, lines, "--format", "jsonl"], io)).toBe(0);
    expect(readFileSync(lines, "utf8").split("\n")[1]).toMatch(/^[0-9a-f]{8} \{"actor":"s","seq":0,"t":1,"kind":"input","event":\{"op":"x","key":"k","t":1\}\}$/);
    expect(await runCli(["log", "export", lines, join(dir, "cli.xml"), "--format", "xml"], io)).toBe(1);
    expect(err.join("\n")).toMatch(/log\.format: must be "binary" or "jsonl", not "xml"/);
    expect(await runCli(["log", lines], io)).toBe(0);
    expect(await runCli(["log", path], io)).toBe(0);
    expect(out.join("\n")).toMatch(/format v1[\s\S]*format v2/);
  });
});
