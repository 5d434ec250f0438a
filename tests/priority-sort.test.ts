/** sortByPriority's shortcuts give exactly what the stable sort gives. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { priorityCompare, sortByPriority, type Priority } from "../machines/priority.js";

interface Item {
  id: number;
  priority: Priority;
}

const reference = (items: Item[]): number[] => [...items].sort((a, b) => priorityCompare(a.priority, b.priority)).map((x) => x.id);

function sorted(items: Item[]): number[] {
  const copy = [...items];
  sortByPriority(copy);
  return copy.map((x) => x.id);
}

describe("sortByPriority", () => {
  it("agrees with the stable sort on arbitrary priorities (ties included)", () => {
    const priority = fc.tuple(fc.integer({ min: -2, max: 2 }), fc.integer({ min: 0, max: 3 }), fc.oneof(fc.integer({ min: 0, max: 20 }), fc.double({ noNaN: true, min: -5, max: 5 })));
    fc.assert(
      fc.property(fc.array(priority, { maxLength: 60 }), (ps) => {
        const items = ps.map((priority, id) => ({ id, priority: priority as Priority }));
        expect(sorted(items)).toEqual(reference(items));
      }),
    );
  });

  it("agrees with it on a graph's orders (one generation, a permutation of a range): the one-pass placement", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 0, max: 1000 }), fc.infiniteStream(fc.nat()), (n, from, randoms) => {
        const orders = Array.from({ length: n }, (_, i) => from + i);
        const r = randoms[Symbol.iterator]();
        for (let i = n - 1; i > 0; i--) {
          const j = r.next().value % (i + 1);
          [orders[i], orders[j]] = [orders[j]!, orders[i]!];
        }
        const items = orders.map((o, id) => ({ id, priority: [0, 7, o] as Priority }));
        expect(sorted(items)).toEqual(reference(items));
      }),
    );
  });

  it("sorts in place, leaving an ordered array as it is", () => {
    const items: Item[] = [
      { id: 0, priority: [0, 1, 3] },
      { id: 1, priority: [0, 1, 1] },
      { id: 2, priority: [-1, 2, 9] },
    ];
    sortByPriority(items);
    expect(items.map((x) => x.id)).toEqual([2, 1, 0]);
    const again = [...items];
    sortByPriority(again);
    expect(again).toEqual(items);
  });
});
