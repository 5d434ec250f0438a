/**
 * The worker's bounded tombstone table (machines/worker/tombstones.ts) against the plain
 * model it replaces: an insertion-ordered Map where voiding again moves a key last and the
 * first entry goes once the bound is passed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Tombstones } from "../machines/worker/tombstones.js";

class MapModel {
  readonly map = new Map<string, number>();
  constructor(private readonly max: number) {}
  void(key: string, attempt: number): void {
    const old = this.map.get(key);
    if (old !== undefined) {
      if (old >= attempt) return;
      this.map.delete(key);
    }
    this.map.set(key, attempt);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }
}

const step = fc.oneof(
  { weight: 20, arbitrary: fc.record({ kind: fc.constant("void" as const), key: fc.integer({ min: 0, max: 40 }).map((i) => `k${i}`), attempt: fc.integer({ min: 0, max: 50 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("clear" as const) }) },
);

describe("worker tombstones", () => {
  it("keep what the ordered-Map model keeps, in its order, through any voids and clears", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.array(step, { maxLength: 400 }), (max, steps) => {
        const t = new Tombstones(max);
        const model = new MapModel(max);
        for (const s of steps) {
          if (s.kind === "clear") {
            t.clear();
            model.map.clear();
          } else {
            t.void(s.key, s.attempt);
            model.void(s.key, s.attempt);
          }
          expect(t.size).toBe(model.map.size);
        }
        expect([...t]).toEqual([...model.map]);
        expect([...t.keys()]).toEqual([...model.map.keys()]);
        for (let i = 0; i <= 40; i++) expect(t.get(`k${i}`)).toBe(model.map.get(`k${i}`));
      }),
      { numRuns: 300 },
    );
  });

  it("agree with the model over a long run that passes and rebuilds its arrays many times", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 400 }), fc.integer(), (max, keySpace, seed) => {
        const t = new Tombstones(max);
        const model = new MapModel(max);
        let x = seed >>> 0;
        for (let i = 0; i < 20_000; i++) {
          x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
          const key = `k${x % keySpace}`;
          const attempt = i - (x % 7); // mostly rising, sometimes not above the one kept
          t.void(key, attempt);
          model.void(key, attempt);
        }
        expect([...t]).toEqual([...model.map]);
        for (let i = 0; i < keySpace; i++) expect(t.get(`k${i}`)).toBe(model.map.get(`k${i}`));
      }),
      { numRuns: 40 },
    );
  });

  it("hold no more slots than a bounded multiple of the live keys, however long the run", () => {
    const t = new Tombstones(1000);
    for (let i = 0; i < 200_000; i++) t.void(`fresh-${i}`, i);
    for (let i = 0; i < 200_000; i++) t.void(`again-${i % 10}`, i);
    expect(t.size).toBe(1000);
    const slots = (t as unknown as { keysAt: unknown[] }).keysAt.length;
    expect(slots).toBeLessThanOrEqual(4 * 1000 + 200);
    expect([...t.keys()].slice(-10)).toEqual(Array.from({ length: 10 }, (_, i) => `again-${i}`));
  });
});
