import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IndexedHeap } from "../machines/util/heap.js";

interface Item {
  name: number;
  rank: number;
}

const less = (a: Item, b: Item): boolean => a.rank < b.rank || (a.rank === b.rank && a.name < b.name);
const byRank = (a: Item, b: Item): number => (less(a, b) ? -1 : less(b, a) ? 1 : 0);

type Op = { kind: "push" | "remove" | "has"; item: number } | { kind: "pop" } | { kind: "peekN"; n: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom("push" as const, "remove" as const, "has" as const), item: fc.nat({ max: 30 }) }),
  fc.record({ kind: fc.constant("pop" as const) }),
  fc.record({ kind: fc.constant("peekN" as const), n: fc.nat({ max: 12 }) }),
);

describe("IndexedHeap", () => {
  it("behaves like a sorted set under any mix of push, pop, remove, has and peekN", () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 5 }), { minLength: 31, maxLength: 31 }), fc.array(op, { maxLength: 200 }), (ranks, ops) => {
        const items: Item[] = ranks.map((rank, name) => ({ name, rank }));
        const heap = new IndexedHeap<Item>(less);
        // The same items sit in a second heap too: positions must not leak between heaps.
        const other = new IndexedHeap<Item>(less);
        for (const item of items) if (item.name % 3 === 0) other.push(item);
        const model = new Set<Item>();
        for (const o of ops) {
          const sorted = [...model].sort(byRank);
          switch (o.kind) {
            case "push":
              heap.push(items[o.item]!);
              model.add(items[o.item]!);
              break;
            case "remove":
              expect(heap.remove(items[o.item]!)).toBe(model.delete(items[o.item]!));
              break;
            case "has":
              expect(heap.has(items[o.item]!)).toBe(model.has(items[o.item]!));
              break;
            case "pop": {
              const top = heap.pop();
              expect(top).toBe(sorted[0]);
              if (top !== undefined) model.delete(top);
              break;
            }
            case "peekN":
              expect(heap.peekN(o.n)).toEqual(sorted.slice(0, o.n));
              break;
          }
          expect(heap.size).toBe(model.size);
          expect(heap.peek()).toBe([...model].sort(byRank)[0]);
        }
        expect(new Set(heap.values())).toEqual(model);
        const drained: Item[] = [];
        for (let top = other.pop(); top !== undefined; top = other.pop()) drained.push(top);
        expect(drained).toEqual(items.filter((item) => item.name % 3 === 0).sort(byRank));
      }),
      { numRuns: 300 },
    );
  });
});
