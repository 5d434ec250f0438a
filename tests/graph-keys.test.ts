import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareKeys, isTupleKey, keySplit, keySplitGroup, parseTupleKey, tupleKey } from "../machines/graph/index.js";
import { hashedKeyPrefix, keySplitGeneral } from "../machines/graph/keys.js";

// Expected values were checked against CPython 3.11 running dask.utils' code.
describe("keySplit (dask.utils.key_split)", () => {
  it.each([
    // The doctests of dask.utils.key_split (2022.12)
    ["x", "x"],
    ["x-1", "x"],
    ["x-1-2-3", "x"],
    ["('x-2', 1)", "x"],
    ["('x', 1)", "x"],
    ["hello-world-1", "hello-world"],
    ["ae05086432ca935f6eba409a8ecd4896", "data"],
    ["<module.submodule.myclass object at 0xdaf372", "myclass"],
    ["x-abcdefab", "x"],
    ["_(x)", "x"],
    // Prefixes of generated keys
    ["inc-abc123", "inc"],
    ["inc-0f3a9b2c4d5e6f708192a3b4c5d6e7f8", "inc"],
    ["x-1-2", "x"],
    ["1-0", "1"],
    ["<Foo.bar object>", "bar"],
    ["('x-abc', 3)", "x"],
    ["('mean_chunk-98a32cd9f4fadbed908fffb32e0c9679', 0, 0)", "mean_chunk"],
    ["sum-aggregate-123", "sum-aggregate"],
    ["finalize-hlgfinalizecompute-deadbeef", "finalize-hlgfinalizecompute"],
    // An 8-letter word is taken for a hash when it *starts* with a-f (re.match)
    ["x-feedback", "x"],
    ["x-abcdefgh", "x"],
    ["x-Feedback", "x-Feedback"],
    ["x-abcdefg", "x-abcdefg"],
    ["x-abcdefabc", "x-abcdefabc"],
    // Unicode letters count as letters (str.isalpha)
    ["x-é-1", "x-é"],
    ["x-日本", "x-日本"],
    ["x-_y", "x"],
    ["0x-1", "0x"],
    ["a,b-c", "a,b-c"],
    // Hash only when the whole prefix is 32 lowercase hex digits
    ["ae05086432ca935f6eba409a8ecd4896-x", "ae05086432ca935f6eba409a8ecd4896-x"],
    ["AE05086432CA935F6EBA409A8ECD4896", "AE05086432CA935F6EBA409A8ECD4896"],
    // Object reprs; Python's whitespace (\x1c is, \ufeff is not)
    ["<a.b.C>", "C"],
    ["<\x1cfoo.Bar>", "Bar"],
    ["<\ufefffoo.Bar x>", "Bar"],
    // What makes the Python code raise gives "Other"
    ["", "Other"],
    ["-x", "Other"],
    ["()", "Other"],
    ["<>", "Other"],
    ["< >", "Other"],
    ["(-abc", "-abc"],
  ])("%j -> %j", (key, prefix) => {
    expect(keySplit(key)).toBe(prefix);
  });

  it("takes the shortcut for name-<32 hex> keys only where the general rules give the same prefix", () => {
    const hex = fc.oneof(
      fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 32, maxLength: 32 }),
      fc.string({ unit: fc.constantFrom(..."abcdef"), minLength: 32, maxLength: 32 }),
      fc.string({ unit: fc.constantFrom(..."0123456789abcdefABCDEF-g"), minLength: 30, maxLength: 34 }),
    );
    const name = fc.oneof(
      fc.string({ unit: fc.constantFrom(..."abcxyzABZ_09"), maxLength: 40 }),
      fc.string({ unit: fc.constantFrom(..."aZ_,.<(-1é9 fx"), maxLength: 40 }),
      fc.string({ unit: "binary", maxLength: 40 }),
    );
    let taken = 0;
    fc.assert(
      fc.property(name, fc.constantFrom("-", "-", "-", "_", ""), hex, (n, sep, h) => {
        const key = `${n}${sep}${h}`;
        const fast = hashedKeyPrefix(key);
        if (fast !== undefined) {
          taken++;
          expect(fast).toBe(keySplitGeneral(key));
        }
        expect(keySplit(key)).toBe(keySplitGeneral(key));
      }),
      { numRuns: 3000 },
    );
    expect(taken).toBeGreaterThan(20);
    // Tokenized and random keys, as the client makes them.
    expect(hashedKeyPrefix("noop-0123456789abcdef0123456789abcdef")).toBe("noop");
    expect(hashedKeyPrefix("inc-0f3a9b2c4d5e6f708192a3b4c5d6e7f8")).toBe("inc");
    // Every hex digit a letter: Dask takes it for a word of the prefix.
    expect(hashedKeyPrefix("x-abcdefabcdefabcdefabcdefabcdefab")).toBeUndefined();
    expect(keySplit("x-abcdefabcdefabcdefabcdefabcdefab")).toBe("x-abcdefabcdefabcdefabcdefabcdefab");
    // A name of 32 hex digits is "data" (a hash, to Dask).
    expect(keySplit("abcdef0123456789abcdef0123456789-0123456789abcdef0123456789abcdef")).toBe("data");
  });
});

describe("keySplitGroup (dask.utils.key_split_group)", () => {
  it.each([
    // The doctests of dask.utils.key_split_group (2022.12)
    ["('x-2', 1)", "x-2"],
    ["ae05086432ca935f6eba409a8ecd4896", "data"],
    ["<module.submodule.myclass object at 0xdaf372", "myclass"],
    ["x", "x"],
    ["x-1", "x"],
    // The group of a tuple key is its whole name
    ["('x-abc123', 3)", "x-abc123"],
    ["('mean_chunk-98a32cd9f4fadbed908fffb32e0c9679', 0, 0)", "mean_chunk-98a32cd9f4fadbed908fffb32e0c9679"],
    ['("it\'s", 1)', "it's"],
    ["('x',)", "x"],
    ["()", ""],
    // Other strings fall back to keySplit
    ["hello-world-1", "hello-world"],
    ["inc-abc123", "inc"],
    ["<a.b.C>", "C"],
    // Python raises IndexError on these; we give "Other"
    ["", "Other"],
    ["<>", "Other"],
  ])("%j -> %j", (key, group) => {
    expect(keySplitGroup(key)).toBe(group);
  });
});

describe("tupleKey renders as Python's str(tuple)", () => {
  it.each([
    [["x", 3], "('x', 3)"],
    [["x"], "('x',)"],
    [["x", 0, 12, -1], "('x', 0, 12, -1)"],
    [["x", "a", 1], "('x', 'a', 1)"],
    [["it's", 1], `("it's", 1)`],
    [[`a"b'c`, -2], `('a"b\\'c', -2)`],
    [["t\ta\nb\\"], "('t\\ta\\nb\\\\',)"],
    [["\x7f\x00é\u200b😀\ud800", 1], "('\\x7f\\x00é\\u200b😀\\ud800', 1)"],
    [["x", 0.5, 1e-5, 1.5e300, Infinity, -Infinity, 123.456, 1e-4, 2.5e-7], "('x', 0.5, 1e-05, 1.5e+300, inf, -inf, 123.456, 0.0001, 2.5e-07)"],
    [["x", 2 ** 53, 1e16, NaN], "('x', 9007199254740992.0, 1e+16, nan)"],
    [["x", 2 ** 53 - 1], "('x', 9007199254740991)"],
  ] as [[string, ...(string | number)[]], string][])("%j -> %s", ([name, ...indices], expected) => {
    expect(tupleKey(name, ...indices)).toBe(expected);
  });

  it("reads back what it renders", () => {
    const element = fc.oneof(fc.string({ unit: "binary" }), fc.integer(), fc.double({ noNaN: true }));
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.array(element, { maxLength: 4 }), (name, indices) => {
        const key = tupleKey(name, ...indices);
        const expected = [name, ...indices.map((x) => (typeof x === "number" && Object.is(x, -0) ? 0 : x))];
        const parsed = parseTupleKey(key);
        return isTupleKey(key) && parsed !== undefined && parsed.length === expected.length && parsed.every((x, i) => Object.is(x, expected[i]));
      }),
      { numRuns: 200 },
    );
  });
});

describe("parseTupleKey", () => {
  it("reads str, int and float elements", () => {
    expect(parseTupleKey("('x', 1, -2, 0.5, 1e-05, inf)")).toEqual(["x", 1, -2, 0.5, 1e-5, Infinity]);
    expect(parseTupleKey(`("it's", 'a\\'b\\n\\x41\\u00e9\\U0001f600')`)).toEqual(["it's", "a'b\nAé😀"]);
    expect(parseTupleKey("()")).toEqual([]);
    expect(parseTupleKey("('x',)")).toEqual(["x"]);
  });

  it.each(["x", "('x', 1", "('x' 1)", "(x)", "('a', None)", "('a', (1, 2))", "('a', nan)", "('a', 1) ", "('a\\q',)", "(,)", "('x',,)"])(
    "%j is not a tuple key",
    (key) => {
      expect(parseTupleKey(key)).toBeUndefined();
      expect(isTupleKey(key)).toBe(false);
    },
  );
});

describe("compareKeys (dask.order.StrComparable)", () => {
  const sorted = (keys: string[]) => [...keys].sort(compareKeys);

  it("orders tuple keys as Python tuples: ints by value", () => {
    const keys = [10, 9, 1, 100, 2, 0].map((i) => tupleKey("x", i));
    expect(sorted(keys)).toEqual([0, 1, 2, 9, 10, 100].map((i) => tupleKey("x", i)));
    expect(sorted([tupleKey("x", 1, 10), tupleKey("x", 1, 9), tupleKey("x", 1), tupleKey("x", -1, 5)])).toEqual([
      tupleKey("x", -1, 5),
      tupleKey("x", 1),
      tupleKey("x", 1, 9),
      tupleKey("x", 1, 10),
    ]);
    expect(compareKeys(tupleKey("x", 1.5), tupleKey("x", 1))).toBeGreaterThan(0);
    expect(compareKeys(tupleKey("x", 2), tupleKey("x", 1.5))).toBeGreaterThan(0);
  });

  it("orders tuple strs by their characters, a prefix first", () => {
    expect(sorted([tupleKey("sum-10", 0), tupleKey("sum-1", 0), tupleKey("sum-2", 0), tupleKey("sum", 5)])).toEqual([
      tupleKey("sum", 5),
      tupleKey("sum-1", 0),
      tupleKey("sum-10", 0),
      tupleKey("sum-2", 0),
    ]);
    // "it's" renders with double quotes; it still compares by its characters
    expect(compareKeys(tupleKey("it's"), tupleKey("it"))).toBeGreaterThan(0);
    expect(compareKeys(tupleKey("a\\b"), tupleKey("a]"))).toBeLessThan(0);
  });

  it("compares the rendered strings where Python cannot compare", () => {
    // str against int in the same position: Python raises, StrComparable compares str(key)
    expect(compareKeys(tupleKey("x", "a"), tupleKey("x", 1))).toBe(-1); // "('x', 'a')" < "('x', 1)"
    expect(compareKeys(tupleKey("x", 1), tupleKey("x", "a"))).toBe(1);
    // str against tuple
    expect(compareKeys("y", tupleKey("x", 1))).toBe(1);
    expect(compareKeys("(", tupleKey("x", 1))).toBe(-1);
    expect(compareKeys("x-10", "x-9")).toBe(-1); // plain strings: plain string order
  });

  it("is an order consistent with equality", () => {
    const key = fc.oneof(
      fc.tuple(fc.constantFrom("x", "y", "x-1"), fc.array(fc.oneof(fc.integer({ min: -20, max: 200 }), fc.constantFrom("a", "b")), { maxLength: 3 })).map(
        ([name, indices]) => tupleKey(name, ...indices),
      ),
      fc.constantFrom("x", "y", "(x)", "('x', 1"),
    );
    fc.assert(
      fc.property(key, key, (a, b) => {
        expect(Math.sign(compareKeys(a, b)) + Math.sign(compareKeys(b, a))).toBe(0);
        expect(compareKeys(a, b) === 0).toBe(a === b);
      }),
    );
  });
});
