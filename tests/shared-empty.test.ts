/** Shared empty collections that records replace with their own on the first write. */
import { describe, expect, it } from "vitest";
import { emptyMap, emptySet, withAdded, withDeleted, withEntry, withoutEntry } from "../machines/util/shared-empty.js";

describe("shared empty collections", () => {
  it("a write to the shared empty set makes a set of its own and leaves the shared one empty", () => {
    const a = withAdded(emptySet<string>(), "x");
    expect([...a]).toEqual(["x"]);
    expect(emptySet<string>().size).toBe(0);
    expect(withAdded(a, "y")).toBe(a);
    expect([...a]).toEqual(["x", "y"]);
    expect(withDeleted(a, "x")).toBe(a);
    expect([...a]).toEqual(["y"]);
    expect(withDeleted(emptySet<string>(), "x")).toBe(emptySet());
  });

  it("the same for maps", () => {
    const m = withEntry(emptyMap<string, number>(), "p", 1);
    expect([...m]).toEqual([["p", 1]]);
    expect(emptyMap<string, number>().size).toBe(0);
    expect(withEntry(m, "p", 2)).toBe(m);
    expect(m.get("p")).toBe(2);
    expect(withoutEntry(m, "p")).toBe(m);
    expect(m.size).toBe(0);
    expect(withoutEntry(emptyMap<string, number>(), "p")).toBe(emptyMap());
  });
});
