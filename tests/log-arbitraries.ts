/** fast-check values for the event log's property tests: what a record may carry. */
import fc from "fast-check";

/**
 * Strings with everything JSON escapes or encodes specially (quotes, controls, non-ASCII,
 * astral and lone surrogates), a task key long enough to be numbered in a batch, and "toJSON".
 */
export const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.constantFrom("", '"', "\\", "\n\t\r\b\f", "\u0000\u001f\u007f", "é€", "\u{1F600}", "\ud800", "x\udc00y", "\udbff\udfff", "task-key-0123456789", "toJSON"),
);

/** Numbers JSON writes in every way (integers, exponents, -0, NaN and the infinities as null). */
export const number = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -0, 9, 10, 99, 100, 101, 999_999_999, 1e9, 2 ** 31 - 1, 1e21, 5e-324, 2 ** 31, -(2 ** 31), 2 ** 53, NaN, Infinity, -Infinity, 0.1 + 0.2));

/** Object keys: any text, and the keys events have (integer-like ones come first in an object). */
export const key = fc.oneof(text, fc.constantFrom("op", "key", "t", "0", "7"));

/** Any value a record may hold, undefined (which JSON drops or writes as null) included. */
export const json = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    number,
    text,
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(key, tie("value"), { maxKeys: 4 }),
  ),
})).value;

export const object = fc.dictionary(key, json, { maxKeys: 5 });
