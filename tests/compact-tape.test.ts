import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NOT_HELD, Tape } from "../log/compact-tape.js";
import { Slabs } from "../log/slabs.js";

// fast-check's stringify tells -0 from 0 and shows NaN, undefined and key order: equal text, same payload.
const same = (a: unknown, b: unknown): void => expect(fc.stringify(a)).toBe(fc.stringify(b));

const keyName = fc.constantFrom("op", "key", "t", "a", "b", "7", "0", "worker", "x y", "", "é", "constructor");
const leaf = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(-0, NaN, Infinity, -Infinity, 2 ** 53, -(2 ** 31)),
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
);
const { value } = fc.letrec<{ value: unknown; array: unknown[]; object: Record<string, unknown> }>((tie) => ({
  value: fc.oneof({ depthSize: "small" }, leaf, tie("array"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 5 }),
  object: fc.dictionary(keyName, tie("value"), { maxKeys: 6, noNullPrototype: true }),
}));

describe("the compact log's tape", () => {
  it("gives back every payload written, field by field in the same order, whatever its values and key orders", () => {
    const tape = new Tape(new Slabs()); // one for all runs: later runs meet the shapes of earlier ones
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 40 }), (payloads) => {
        const at = payloads.map((p) => tape.write(p));
        expect(at.every((a) => a >= 0)).toBe(true);
        // Read in another order than written: positions are independent.
        for (let i = payloads.length - 1; i >= 0; i--) same(tape.read(at[i]!), payloads[i]);
      }),
      { numRuns: 300 },
    );
  });

  it("holds events of a few kinds in turn, and objects of many key sets once the shapes run out", () => {
    const tape = new Tape(new Slabs());
    const written: [number, unknown][] = [];
    const put = (v: unknown): void => {
      written.push([tape.write(v), v]);
    };
    for (let i = 0; i < 2_000; i++) {
      put({ op: "compute-task", key: `k-${i}`, deps: [`k-${i - 1}`], priority: [0, 1, i], t: i / 3 });
      put({ op: "task-finished", key: `k-${i}`, nbytes: 8, start: -0, t: NaN });
      // A dictionary of 40 keys of its own: 80,000 key sequences in all, more than the shapes kept.
      put(Object.fromEntries(Array.from({ length: 40 }, (_, j) => [`d-${i}-${j}`, j % 2 === 0 ? j : { nested: [j], op: "x" }])));
      put({ op: "compute-task", key: `k-${i}`, deps: [], priority: [0, 1, i], t: i });
    }
    expect(written.every(([at]) => at >= 0)).toBe(true);
    for (const [at, v] of written) same(tape.read(at), v);
  });

  it("refuses what it cannot give back exactly, and keeps nothing of it", () => {
    const tape = new Tape(new Slabs());
    const first = tape.write({ op: "a", s: "kept" });
    const holes = [1, , 3]; // eslint-disable-line no-sparse-arrays
    for (const v of [new Map(), new Date(0), holes, { n: 1n }, { f: () => 1 }, JSON.parse('{"__proto__": 1}'), Object.create({ inherited: 1 }), [Symbol("s")]]) {
      expect(tape.write({ op: "b", s: "dropped", v })).toBe(NOT_HELD);
    }
    const deep = JSON.parse("[".repeat(33) + "]".repeat(33));
    expect(tape.write(deep)).toBe(NOT_HELD);
    const next = tape.write({ op: "c", s: "after" });
    same(tape.read(first), { op: "a", s: "kept" });
    same(tape.read(next), { op: "c", s: "after" });
    same(tape.read(tape.write(JSON.parse("[".repeat(32) + "]".repeat(32)))), JSON.parse("[".repeat(32) + "]".repeat(32)));
  });
});
