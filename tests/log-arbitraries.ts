/** For the event log's property tests: fast-check values a record may carry, and the capture-and-write path. */
import * as zlib from "node:zlib";
import fc from "fast-check";
import { captureDecoderProgram } from "../log/capture-decoder.js";
import { CAPTURE_TAGS } from "../log/capture-tags.js";
import { LogCapture } from "../log/log-capture.js";
import { logWriterProgram } from "../log/log-format-thread.js";
import type { LogRecord } from "../log/types.js";

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

/**
 * Captures the records into batches of the given size (transitions and inputs at even
 * places through the recorder's field-wise calls when they have its layout, the rest as
 * records), writes each batch as the writer thread does for a log of format `version`, and
 * returns the bytes.
 */
export function writeCaptured(records: LogRecord[], batch: { nums: number; chars: number }, version: 1 | 2): Buffer {
  const writer = logWriterProgram(captureDecoderProgram(CAPTURE_TAGS), zlib).writer(version);
  const capture = new LogCapture(new Float64Array(batch.nums), new Uint16Array(batch.chars));
  const out: Buffer[] = [];
  const seal = (): void => {
    writer.write(capture.nums, capture.chars, capture.n, capture.c, capture.records, (bytes, start, end) => out.push(Buffer.from(bytes.subarray(start, end))));
    capture.replace(new Float64Array(batch.nums), new Uint16Array(batch.chars));
  };
  records.forEach((r, i) => {
    const recorderLayout = ["actor", "seq", "t", "kind", "machine", "id", "event", "from", "to", "why"].slice(0, Object.keys(r).length).join();
    const asInput = r.kind === "input" && i % 2 === 0 && Object.keys(r).join() === "actor,seq,t,kind,event" && Object.is((r.event as { t?: unknown }).t, r.t);
    const take = (): boolean =>
      r.kind === "transition" && i % 2 === 0 && Object.keys(r).join() === recorderLayout
        ? capture.transition(r.actor, r.seq, r.t, r.machine, r.id, r.event, r.from, r.to, r.why)
        : asInput
          ? capture.input(r.actor, r.seq, r.event as never)
          : capture.record(r);
    if (take()) return;
    seal();
    while (!take()) capture.grow(2);
  });
  seal();
  return Buffer.concat(out);
}
