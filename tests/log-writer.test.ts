import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as zlib from "node:zlib";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { captureDecoderProgram } from "../log/capture-decoder.js";
import { CAPTURE_TAGS } from "../log/capture-tags.js";
import { LogCapture } from "../log/log-capture.js";
import { logWriterProgram } from "../log/log-format-thread.js";
import { FileLogSink, readLogSync, type LogRecord } from "../log/index.js";
import { json, number, object, text, writeCaptured } from "./log-arbitraries.js";
import type { MachineName } from "../machines/reasons.js";

const transition = fc
  .tuple(text, fc.oneof(fc.nat(), fc.constantFrom(9, 10, 99, 100, 12_345, 999_999_999, 1e9, 2 ** 31 - 1, 2 ** 31, 2 ** 53 - 1)), number, text, text, text, text, text)
  // Any machine name: the format keeps whatever name a log holds.
  .map(([actor, seq, t, machine, id, event, from, to]) => ({ actor, seq, t, kind: "transition" as const, machine: machine as MachineName, id, event, from, to }));
const record: fc.Arbitrary<LogRecord> = fc.oneof(
  transition,
  fc.tuple(transition, object).map(([r, why]) => ({ ...r, why })),
  fc.tuple(transition, object).map(([{ actor, seq, t }, event]) => ({ actor, seq, t, kind: "input" as const, event: { op: "x", ...event } })),
  // As the recorder builds them: the record's t is the event's (captured through LogCapture.input).
  fc.tuple(transition, object).map(([{ actor, seq, t }, event]) => ({ actor, seq, t, kind: "input" as const, event: { op: "x", ...event, t } })),
  fc.tuple(transition, text, object).map(([{ actor, seq, t }, role, init]) => ({ actor, seq, t, kind: "start" as const, role, init })),
  transition.map(({ actor, seq, t }) => ({ actor, seq, t, kind: "stop" as const })),
  fc.tuple(transition, text).map(([{ actor, seq, t }, reason]) => ({ actor, seq, t, kind: "stop" as const, reason })),
  // Fields in another order.
  transition.map(({ kind, actor, seq, t, ...rest }) => ({ kind, actor, seq, t, ...rest })),
  // Not the recorder's layout: extra fields, another order, values only JSON.stringify handles.
  fc.tuple(transition, json).map(([r, extra]) => ({ ...r, extra }) as unknown as LogRecord),
  fc.tuple(transition, object).map(([{ actor, seq, t, kind: _kind, event: _event, ...rest }, event]) => ({ kind: "input", actor, seq, t, event: { ...event, at: new Date(0), bytes: new Uint8Array([1, 2]) }, ...rest }) as unknown as LogRecord),
);

const program = logWriterProgram(captureDecoderProgram(CAPTURE_TAGS), zlib);
const crc32 = (data: Buffer): number => zlib.crc32(data);

/** Captures the records (transitions both as objects and as fields), writes them as version-1 lines, returns the lines. */
function roundTrip(records: LogRecord[], batch: { nums: number; chars: number }): string[] {
  const lines = writeCaptured(records, batch, 1).toString("utf8").split("\n");
  expect(lines.pop()).toBe("");
  return lines;
}

describe("the file log's capture and writer thread", () => {
  it("writes every record exactly as JSON.stringify does, with a valid checksum", () => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 12 }), fc.constantFrom({ nums: 16, chars: 16 }, { nums: 4096, chars: 4096 }), (records, batch) => {
        const lines = roundTrip(records, batch);
        expect(lines).toHaveLength(records.length);
        lines.forEach((line, i) => {
          const body = line.slice(9);
          expect(body).toBe(JSON.stringify(records[i]));
          expect(line.slice(0, 9)).toBe(crc32(Buffer.from(body, "utf8")).toString(16).padStart(8, "0") + " ");
        });
      }),
      { numRuns: 400 },
    );
  });

  it("writes recurring keys and names across batches, records rolled back at a full batch included", () => {
    const keys = [...Array.from({ length: 4 }, (_, i) => `task-key-number-${i}-of-the-pool`), 'a "quoted"\\key\u00e9\u{1F600}', "\ud800lone"];
    const key = fc.constantFrom(...keys);
    const recurring: fc.Arbitrary<LogRecord> = fc.oneof(
      fc.tuple(key, fc.nat(), fc.constantFrom("READY", "EXECUTE")).map(([id, seq, event]) => ({ actor: "w", seq, t: seq / 3, kind: "transition" as const, machine: "wtask" as const, id, event, from: "a", to: "b" })),
      fc.tuple(key, key, fc.nat()).map(([id, other, seq]) => ({ actor: "s", seq, t: seq, kind: "transition" as const, machine: "task" as const, id, event: "ASSIGN", from: "q", to: "p", why: { worker: other } })),
      fc.tuple(key, fc.array(key, { maxLength: 3 }), fc.nat()).map(([k, ks, seq]) => ({ actor: "w", seq, t: seq, kind: "input" as const, event: { op: "free-keys", key: k, keys: ks, t: seq } })),
    );
    fc.assert(
      fc.property(fc.array(recurring, { maxLength: 40 }), fc.constantFrom({ nums: 24, chars: 64 }, { nums: 4096, chars: 4096 }), (records, batch) => {
        const lines = roundTrip(records, batch);
        expect(lines.map((line) => line.slice(9))).toEqual(records.map((r) => JSON.stringify(r)));
      }),
      { numRuns: 300 },
    );
  });

  it("throws what JSON.stringify throws for a record it cannot write, and keeps the batch intact", () => {
    const capture = new LogCapture(new Float64Array(256), new Uint16Array(1024));
    const ok: LogRecord = { actor: "a", seq: 0, t: 1, kind: "input", event: { op: "x", key: "k" } };
    expect(capture.record(ok)).toBe(true);
    const cyclic: Record<string, unknown> = { op: "x" };
    cyclic.self = cyclic;
    expect(() => capture.record({ actor: "a", seq: 1, t: 1, kind: "input", event: cyclic as never })).toThrow(TypeError);
    expect(() => capture.record({ actor: "a", seq: 1, t: 1, kind: "input", event: { op: "x", n: 1n } as never })).toThrow(TypeError);
    expect(capture.record({ ...ok, seq: 1, event: { op: "y", newKey: 2 } })).toBe(true);
    const lines: string[] = [];
    program.writer(1).write(capture.nums, capture.chars, capture.n, capture.c, capture.records, (b, s, e) => lines.push(Buffer.from(b).toString("utf8", s, e)));
    expect(lines.join("").split("\n").slice(0, -1).map((l) => JSON.parse(l.slice(9)))).toEqual([ok, { ...ok, seq: 1, event: { op: "y", newKey: 2 } }]);
  });

  describe("through the writer thread", () => {
    const dir = mkdtempSync(join(tmpdir(), "natsched-writer-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("keeps several logs apart and in order, batches bigger than a slot and more keys than the capture keeps interned included", async () => {
      const paths = [0, 1, 2].map((i) => join(dir, `log-${i}.natlog`));
      const sinks = await Promise.all(paths.map((path, i) => FileLogSink.open(path, i === 0 ? { format: "jsonl" } : {})));
      const expected: LogRecord[][] = [[], [], []];
      for (let seq = 0; seq < 75_000; seq++) {
        const i = seq % 3;
        const r: LogRecord =
          seq === 45_000
            ? { actor: `a${i}`, seq: expected[i]!.length, t: seq, kind: "input", event: { op: "big", keys: Array.from({ length: 200_000 }, (_, k) => `key-${k}`), t: seq } }
            : // Keys come back after many others, as a task's key does between its first and last record.
              { actor: `a${i}`, seq: expected[i]!.length, t: seq / 7, kind: "transition", machine: "task", id: `key-${seq % 2 === 0 ? seq : seq - 50_001}`, event: "E", from: "a", to: "b" };
        expected[i]!.push(r);
        if (r.kind === "transition" && seq % 2 === 0) sinks[i]!.appendTransition(r.actor, r.seq, r.t, r.machine, r.id, r.event, r.from, r.to);
        else if (r.kind === "input") sinks[i]!.appendInput(r.actor, r.seq, { ...r.event, t: r.t });
        else sinks[i]!.append(r);
      }
      await Promise.all(sinks.map((s) => s.close()));
      paths.forEach((path, i) => expect(readLogSync(path)).toMatchObject({ records: expected[i], problems: [] }));
      expect(readFileSync(paths[0]!, "utf8").split("\n")[1]).toMatch(/^[0-9a-f]{8} \{"actor":"a0","seq":0,/);
    });

    it("writes a small batch itself while the thread has nothing in hand: in the file when flush returns, after what the thread wrote", async () => {
      for (const format of ["binary", "jsonl"] as const) {
        const path = join(dir, `small-${format}.natlog`);
        const sink = await FileLogSink.open(path, { format });
        // Bigger than a slot: this one goes through the thread.
        const big: LogRecord = { actor: "a", seq: 0, t: 0, kind: "input", event: { op: "big", keys: Array.from({ length: 100_000 }, (_, k) => `key-${k}`), t: 0 } };
        sink.append(big);
        await sink.flush();
        const small: LogRecord = { actor: "a", seq: 1, t: 1, kind: "transition", machine: "task", id: "k", event: "E", from: "a", to: "b" };
        sink.append(small);
        const flushed = sink.flush();
        expect(readLogSync(path).records).toEqual([big, small]);
        await flushed;
        await sink.close();
        expect(readLogSync(path)).toMatchObject({ records: [big, small], problems: [] });
      }
    });
  });
});
