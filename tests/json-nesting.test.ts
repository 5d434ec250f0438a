/**
 * The nesting depth of a JSON text read from its bytes (transport/json-nesting.ts), against
 * the depth of the parsed value; and a body nesting past the limit refused on decode, before
 * anything recursive meets it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ProtocolError } from "../machines/errors.js";
import { MAX_JSON_NESTING, nestsDeeperThan } from "../transport/json-nesting.js";
import { decodePayload } from "../transport/nats-codec.js";

function depth(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depth));
  if (typeof value === "object" && value !== null) return 1 + Math.max(0, ...Object.values(value).map(depth));
  return 0;
}

describe("nestsDeeperThan", () => {
  it("agrees with the depth of the parsed value, brackets, quotes and escapes in strings included", () => {
    const text = fc.string({ unit: fc.constantFrom("[", "]", "{", "}", '"', "\\", "a", "é", "\u0000") });
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: "small" }, text, fc.integer(), fc.array(tie("node"), { maxLength: 3 }), fc.dictionary(text, tie("node"), { maxKeys: 3 })),
    })).node;
    fc.assert(
      fc.property(value, fc.nat({ max: 8 }), (v, max) => {
        expect(nestsDeeperThan(Buffer.from(JSON.stringify(v)), max)).toBe(depth(v) > max);
      }),
      { numRuns: 3000, seed: 4 },
    );
  });

  it("refuses on decode a body nesting deeper than the limit, and takes one at the limit", () => {
    const nested = (n: number) => Buffer.from(`${"[".repeat(n)}${"]".repeat(n)}`);
    expect(() => decodePayload("s", nested(100_000), false)).toThrow(ProtocolError);
    expect(() => decodePayload("s", nested(MAX_JSON_NESTING + 1), false)).toThrow(/nests arrays and objects deeper than 512 levels/);
    expect(depth(decodePayload("s", nested(MAX_JSON_NESTING), false))).toBe(MAX_JSON_NESTING);
    // What the limit protects: a value that deep cannot be written as JSON again.
    expect(() => JSON.stringify(JSON.parse(nested(100_000).toString()))).toThrow(RangeError);
  });
});
