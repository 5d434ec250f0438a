import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GraphError } from "../machines/errors.js";
import { tokenize } from "../machines/graph/index.js";
import { murmur3x86_128 } from "../machines/graph/murmur3.js";

const utf8 = (text: string) => new TextEncoder().encode(text);
/** The reference C code writes h1..h4 little-endian; we print each word big-endian. */
const asReferenceBytes = (hex: string) => hex.replace(/[0-9a-f]{8}/g, (word) => word.match(/../g)!.reverse().join(""));

describe("murmur3x86_128", () => {
  it("matches published MurmurHash3_x86_128 vectors (seed 2538058380)", () => {
    expect(asReferenceBytes(murmur3x86_128(utf8(""), 2538058380))).toBe("a1d5bef71c6a575b1c6a575b1c6a575b");
    expect(asReferenceBytes(murmur3x86_128(utf8("The quick brown fox jumps over the lazy dog"), 2538058380))).toBe(
      "5ed5d48a7161b84c9c3aa78e3e79b6cd",
    );
    expect(asReferenceBytes(murmur3x86_128(utf8("The quick brown fox jumps over the lazy cog"), 2538058380))).toBe(
      "0e8829ccf91081107c6f5ebf3433e188",
    );
  });

  it("hashes the empty input with seed 0 to zero", () => {
    expect(murmur3x86_128(new Uint8Array(0))).toBe("0".repeat(32));
  });
});

describe("tokenize", () => {
  it("gives 32 lowercase hex digits", () => {
    expect(tokenize("inc", [1])).toMatch(/^[0-9a-f]{32}$/);
  });

  it("is stable: the same tokens in every run and process", () => {
    expect(tokenize()).toBe("d51ce1feb93c93b3b93c93b3b93c93b3");
    expect(tokenize("inc", [1])).toBe("ffb967ee06f32d51764d1ca3d10f5db6");
    expect(tokenize({ b: [1, "x", null, true], a: { z: -0, y: NaN } })).toBe("6fefb5bcc6f6a1bb488480b0f47cb477");
    expect(tokenize(new Uint8Array([1, 2, 3]))).toBe("71e8b48e7c9d838808e28560c98ebbfb");
  });

  it("ignores the property order of objects, at any depth", () => {
    expect(tokenize({ a: 1, b: 2 })).toBe(tokenize({ b: 2, a: 1 }));
    expect(tokenize([{ x: { p: 1, q: [{ m: 1, n: 2 }] }, y: 2 }])).toBe(tokenize([{ y: 2, x: { q: [{ n: 2, m: 1 }], p: 1 } }]));
    expect(tokenize(Object.assign(Object.create(null), { b: 1, a: 2 }))).toBe(tokenize({ a: 2, b: 1 }));
  });

  it("tells types apart", () => {
    const values: unknown[] = [1, "1", 1n, [1], { 1: 1 }, true, "true", null, "null", undefined, [], {}, "", 0, false, [[]], [null], [undefined], new Uint8Array([1]), new Int8Array([1])];
    const tokens = values.map((value) => tokenize(value));
    expect(new Set(tokens).size).toBe(values.length);
  });

  it("treats numbers as Object.is does: -0 is not 0, NaN is NaN", () => {
    expect(tokenize(-0)).not.toBe(tokenize(0));
    expect(tokenize(NaN)).toBe(tokenize(Number("x")));
    expect(tokenize(Infinity)).not.toBe(tokenize(-Infinity));
    expect(tokenize(0.1 + 0.2)).not.toBe(tokenize(0.3));
  });

  it("keeps parts, elements and strings apart", () => {
    expect(tokenize("a", "b")).not.toBe(tokenize(["a", "b"]));
    expect(tokenize("a", "b")).not.toBe(tokenize("ab"));
    expect(tokenize(["ab", "c"])).not.toBe(tokenize(["a", "bc"]));
    expect(tokenize(["a"], ["b"])).not.toBe(tokenize(["a", "b"]));
    expect(tokenize({ a: undefined })).not.toBe(tokenize({}));
    expect(tokenize([undefined])).not.toBe(tokenize([]));
    expect(tokenize({ ab: "c" })).not.toBe(tokenize({ a: "bc" }));
  });

  it("reads a hole in an array as undefined", () => {
    expect(tokenize([1, , 3])).toBe(tokenize([1, undefined, 3]));
  });

  it("tells a lone surrogate from the replacement character", () => {
    expect(tokenize("\ud800")).not.toBe(tokenize("\ufffd"));
    expect(tokenize("\ud83d\ude00")).not.toBe(tokenize("\ud83d"));
    expect(tokenize("é")).not.toBe(tokenize("e\u0301"));
  });

  it("hashes binary data by type and content, not by buffer", () => {
    const buffer = new Uint8Array([9, 1, 2, 3, 9]).buffer;
    expect(tokenize(new Uint8Array(buffer, 1, 3))).toBe(tokenize(new Uint8Array([1, 2, 3])));
    expect(tokenize(new Uint8Array([1, 2, 3]))).not.toBe(tokenize(new Uint8Array([1, 2, 4])));
    expect(tokenize(new Uint8Array([1, 2, 3]))).not.toBe(tokenize(new Uint8ClampedArray([1, 2, 3])));
    expect(tokenize(new Uint8Array([1, 2, 3]))).not.toBe(tokenize([1, 2, 3]));
    expect(tokenize(new Float64Array([1.5, -0]))).toBe(tokenize(new Float64Array([1.5, -0])));
    expect(tokenize(new Float64Array([1.5]))).not.toBe(tokenize(new Float32Array([1.5])));
    expect(tokenize(new Uint8Array([1, 2]).buffer)).not.toBe(tokenize(new Uint8Array([1, 2])));
  });

  it("has no collisions among thousands of distinct values", () => {
    const values: unknown[] = [];
    for (let i = 0; i < 1000; i++) {
      values.push(i, String(i), [i], { k: i }, i + 0.5, -i - 1, `x-${i}`, ["inc", i], { [String(i)]: null });
    }
    const tokens = new Set(values.map((value) => tokenize(value)));
    expect(tokens.size).toBe(values.length);
  });

  it("gives structurally equal values equal tokens and different ones different tokens", () => {
    const json = fc.jsonValue();
    fc.assert(
      fc.property(json, json, (a, b) => {
        expect(tokenize(a)).toBe(tokenize(structuredClone(a)));
        // JSON text is a faithful picture of these values except for -0, which JSON writes as 0.
        if (JSON.stringify(sortKeys(a)) !== JSON.stringify(sortKeys(b)) || hasNegativeZero(a) || hasNegativeZero(b)) return;
        expect(tokenize(a)).toBe(tokenize(b));
      }),
    );
    fc.assert(
      fc.property(json, json, (a, b) => {
        fc.pre(JSON.stringify(sortKeys(a)) !== JSON.stringify(sortKeys(b)));
        expect(tokenize(a)).not.toBe(tokenize(b));
      }),
    );
  });

  it("handles values nested deeper than the call stack", () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(tokenize(deep)).toMatch(/^[0-9a-f]{32}$/);
  });

  it.each([
    ["a function", () => 1],
    ["a symbol", Symbol("s")],
    ["a Map", new Map()],
    ["a Date", new Date(0)],
    ["a class instance", new (class Point {})()],
  ])("refuses %s", (_, value) => {
    expect(() => tokenize({ value })).toThrow(GraphError);
  });

  it("refuses a value that contains itself, but not one that repeats a value", () => {
    const cyclic: unknown[] = [1];
    cyclic.push(cyclic);
    expect(() => tokenize(cyclic)).toThrow(/contains itself/);
    const shared = { a: 1 };
    expect(tokenize([shared, shared])).toBe(tokenize([{ a: 1 }, { a: 1 }]));
  });
});

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]));
  }
  return value;
}

function hasNegativeZero(value: unknown): boolean {
  if (Object.is(value, -0)) return true;
  if (value !== null && typeof value === "object") return Object.values(value).some(hasNegativeZero);
  return false;
}
