/**
 * The pieces replay's speed rests on: transition lines read in place must mean exactly what
 * JSON.parse says they mean (or be left to it), and the JSON-equality of live values with
 * logged ones must be equality through JSON.stringify.
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { recordShapeProblem } from "../log/codec.js";
import { recordJson } from "../log/record-json.js";
import { diffValues, jsonEqual } from "../replay/replay-diff.js";
import { ACTOR, EVENT, FROM, ID, MACHINE, TO, TransitionLine } from "../replay/transition-line.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import type { MachineName } from "../machines/reasons.js";

const FIELDS = [ACTOR, MACHINE, ID, EVENT, FROM, TO] as const;
const NAMES = ["actor", "machine", "id", "event", "from", "to"] as const;

/** Fields in the order ActorRecorder creates them, which JSON.stringify keeps; any machine name, as a log may hold. */
function inRecorderOrder(r: Omit<TransitionRecord, "kind" | "machine"> & { machine: string }): TransitionRecord {
  const { actor, seq, t, id, event, from, to, why } = r;
  const machine = r.machine as MachineName;
  return why === undefined ? { actor, seq, t, kind: "transition", machine, id, event, from, to } : { actor, seq, t, kind: "transition", machine, id, event, from, to, why };
}

const text = fc.oneof(fc.string(), fc.constantFrom("task", "wtask", "processing.assigned", "worker.a", 'quo"te', "back\\slash", "new\nline", "é", "\u{1F600}", ""));
const json = fc.jsonValue();
const transition: fc.Arbitrary<TransitionRecord> = fc
  .record({
    actor: text,
    seq: fc.nat({ max: Number.MAX_SAFE_INTEGER }),
    t: fc.double({ noNaN: true, noDefaultInfinity: true }),
    machine: text,
    id: text,
    event: text,
    from: text,
    to: text,
    why: fc.option(fc.dictionary(fc.string(), json), { nil: undefined }),
  })
  .map(inRecorderOrder);

/** What the generic decoder makes of a record's JSON: the record, or undefined if it is not one. */
function generic(body: string): LogRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  return recordShapeProblem(value) === undefined ? (value as LogRecord) : undefined;
}

/** Whether the in-place reading of `body` agrees with JSON.parse (when it reads it at all). */
function agrees(body: string): boolean {
  const buf = Buffer.from(`xx${body}yy`, "utf8");
  const line = new TransitionLine();
  if (!line.parse(buf, 2, buf.length - 2)) return true;
  const record = generic(body);
  if (record === undefined || record.kind !== "transition") return false;
  return (
    FIELDS.every((field, i) => line.text(field) === record[NAMES[i]!] && line.is(field, record[NAMES[i]!])) &&
    line.seq === record.seq &&
    Object.is(line.t(), record.t) &&
    isDeepStrictEqual(line.why, record.why) &&
    isDeepStrictEqual(line.record(), record)
  );
}

describe("transition lines read in place", () => {
  it("reads what recordJson writes exactly as JSON.parse does, whenever its strings are plain ASCII", () => {
    fc.assert(
      fc.property(transition, (record) => {
        const body = recordJson(record);
        expect({ body, agrees: agrees(body) }).toEqual({ body, agrees: true });
        const plain = NAMES.every((name) => /^[\x20-\x7f]*$/.test(record[name]) && !/["\\]/.test(record[name])) && record.actor !== "";
        const buf = Buffer.from(body, "utf8");
        expect(new TransitionLine().parse(buf, 0, buf.length)).toBe(plain);
      }),
      { numRuns: 1000 },
    );
  });

  it("never reads a damaged or reshaped line differently from JSON.parse", () => {
    const plainText = fc.stringMatching(/^[a-z.]{1,12}$/);
    const plainRecord = fc
      .record({ actor: plainText, seq: fc.nat(), t: fc.double({ noNaN: true, noDefaultInfinity: true }), machine: plainText, id: plainText, event: plainText, from: plainText, to: plainText, why: fc.option(fc.dictionary(plainText, json), { nil: undefined }) })
      .map(inRecorderOrder);
    const edit = fc.tuple(fc.nat(), fc.nat({ max: 3 }), fc.string({ maxLength: 3 }));
    fc.assert(
      fc.property(plainRecord, fc.array(edit, { minLength: 1, maxLength: 3 }), (record, edits) => {
        let body = recordJson(record);
        for (const [at, op, insert] of edits) {
          const i = at % (body.length + 1);
          body = op === 0 ? body.slice(0, i) + body.slice(i + 1) : op === 1 ? body.slice(0, i) + insert + body.slice(i) : op === 2 ? body.slice(0, i) + insert + body.slice(i + insert.length) : body.slice(0, i);
        }
        expect(agrees(body)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it("leaves other field orders, escapes and extra fields to the generic decoder", () => {
    const base = { actor: "scheduler", seq: 3, t: 1.5, kind: "transition", machine: "task", id: "x", event: "FINISH", from: "processing.assigned", to: "memory" };
    const reject = (body: string) => {
      const buf = Buffer.from(body);
      return !new TransitionLine().parse(buf, 0, buf.length);
    };
    expect(reject(JSON.stringify(base))).toBe(false);
    expect(reject(JSON.stringify({ ...base, why: { worker: "a" } }))).toBe(false);
    expect(reject(JSON.stringify({ ...base, extra: 1 }))).toBe(true);
    expect(reject(JSON.stringify({ ...base, why: { worker: "a" }, extra: 1 }))).toBe(true);
    expect(reject(JSON.stringify({ seq: 3, ...(base as Record<string, unknown>) }))).toBe(true); // seq first
    expect(reject(JSON.stringify({ to: "memory", ...(base as Record<string, unknown>) }))).toBe(true);
    expect(reject(JSON.stringify(base).replace('"x"', '"\\u0078"'))).toBe(true);
    expect(reject(JSON.stringify({ ...base, seq: 1e21 }))).toBe(true);
    expect(reject(JSON.stringify(base).replace('"seq":3', '"seq":03'))).toBe(true);
    expect(reject(JSON.stringify({ ...base, why: [1] }))).toBe(true);
    expect(reject(JSON.stringify({ ...base, why: null }))).toBe(true);
  });
});

describe("jsonEqual", () => {
  const live = fc.anything({ withBoxedValues: false, withMap: false, withSet: false, withObjectString: false, withNullPrototype: false });

  it("a live value equals what the log holds for it", () => {
    fc.assert(
      fc.property(live, (value) => {
        const logged = JSON.stringify(value);
        if (logged === undefined) return;
        expect(jsonEqual(JSON.parse(logged), value)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it("is equality after JSON.stringify, no more and no less", () => {
    fc.assert(
      fc.property(fc.jsonValue(), live, (logged, value) => {
        const through = JSON.stringify(value);
        const expected = through !== undefined && isDeepStrictEqual(JSON.parse(JSON.stringify(logged)), JSON.parse(through));
        expect(jsonEqual(JSON.parse(JSON.stringify(logged)), value)).toBe(expected);
      }),
      { numRuns: 3000 },
    );
    expect(jsonEqual({ a: 1, b: null }, { b: NaN, a: 1, c: undefined })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(jsonEqual([null, 2], [undefined, 2])).toBe(true);
    expect(jsonEqual({ d: "2020-01-01T00:00:00.000Z" }, { d: new Date(Date.UTC(2020, 0, 1)) })).toBe(true);
  });
});

describe("diffValues", () => {
  it("names each path that differs, lists of keys whole", () => {
    const before = { state: "processing.assigned", processingOn: "a", whoHas: [], nested: { x: 1, y: [1, { z: 2 }] }, gone: 1 };
    const after = { state: "memory", processingOn: null, whoHas: ["a"], nested: { x: 1, y: [1, { z: 3 }] }, added: true };
    expect(diffValues(before, after)).toEqual([
      { path: "state", before: "processing.assigned", after: "memory" },
      { path: "processingOn", before: "a", after: null },
      { path: "whoHas", before: [], after: ["a"] },
      { path: "nested.y[1].z", before: 2, after: 3 },
      { path: "gone", before: 1, after: undefined },
      { path: "added", before: undefined, after: true },
    ]);
    expect(diffValues(undefined, { state: "released" })).toEqual([{ path: "(value)", before: undefined, after: { state: "released" } }]);
    expect(diffValues({ a: [1, 2] }, { a: [1, 2] })).toEqual([]);
  });
});
