import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IndexedHeap } from "../machines/util/heap.js";
import { OrderedQueue } from "../machines/util/ordered-queue.js";

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

describe("OrderedQueue", () => {
  // Distinct ranks (a strict order): the queue must then agree with IndexedHeap on every result.
  const strictLess = (a: Item, b: Item): boolean => a.rank < b.rank;
  type QOp = Op | { kind: "pushRun"; from: number; count: number };
  const qop: fc.Arbitrary<QOp> = fc.oneof(
    op,
    op,
    fc.record({ kind: fc.constant("pushRun" as const), from: fc.nat({ max: 60 }), count: fc.nat({ max: 20 }) }),
  );

  it("gives the same results as IndexedHeap under any mix of operations, in-order runs included", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: -1000, max: 1000 }), { minLength: 61, maxLength: 61 }), fc.array(qop, { maxLength: 300 }), (ranks, ops) => {
        const items: Item[] = ranks.map((rank, name) => ({ name, rank }));
        const byRankOrder = [...items].sort(byRank);
        const slot = Symbol("queue");
        const queue = new OrderedQueue<Item>(strictLess, slot);
        const heap = new IndexedHeap<Item>(strictLess);
        for (const o of ops) {
          switch (o.kind) {
            case "push":
              queue.push(items[o.item]!);
              heap.push(items[o.item]!);
              break;
            case "pushRun":
              // Items in increasing order, as update-graph queues a graph's root tasks.
              for (const item of byRankOrder.slice(o.from, o.from + o.count)) {
                queue.push(item);
                heap.push(item);
              }
              break;
            case "remove":
              expect(queue.remove(items[o.item]!)).toBe(heap.remove(items[o.item]!));
              break;
            case "has":
              expect(queue.has(items[o.item]!)).toBe(heap.has(items[o.item]!));
              break;
            case "pop":
              expect(queue.pop()).toBe(heap.pop());
              break;
            case "peekN":
              expect(queue.peekN(o.n)).toEqual(heap.peekN(o.n));
              break;
          }
          expect(queue.size).toBe(heap.size);
          expect(queue.peek()).toBe(heap.peek());
        }
        expect(new Set(queue.values())).toEqual(new Set(heap.values()));
        const drained: Item[] = [];
        for (let top = queue.pop(); top !== undefined; top = queue.pop()) drained.push(top);
        const expected: Item[] = [];
        for (let top = heap.pop(); top !== undefined; top = heap.pop()) expected.push(top);
        expect(drained).toEqual(expected);
        for (const item of items) expect(queue.has(item)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("pops a long in-order run with holes in order, and compacts it", () => {
    const items: Item[] = Array.from({ length: 1000 }, (_, i) => ({ name: i, rank: i }));
    const queue = new OrderedQueue<Item>(strictLess);
    for (const item of items) queue.push(item);
    for (const item of items) if (item.rank % 3 === 1) queue.remove(item);
    queue.push({ name: -1, rank: 500.5 }); // out of order: goes to the heap
    const out: number[] = [];
    for (let top = queue.pop(); top !== undefined; top = queue.pop()) out.push(top.rank);
    expect(out).toEqual([...items.filter((i) => i.rank % 3 !== 1).map((i) => i.rank), 500.5].sort((a, b) => a - b));
  });
});
