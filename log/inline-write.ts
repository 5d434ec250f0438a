/**
 * The log writer thread's program (log/log-format-thread.ts) run on the actors' own thread,
 * for a batch small enough that writing it here costs less than waking the thread for it: a
 * frame of a few KiB is a checksum and a write call, where the thread's hop is two context
 * switches, a message and a turn of its event loop (docs/log-format.md, "Writing").
 */
import { writeSync } from "node:fs";
import zlib from "node:zlib";
import { captureDecoderProgram } from "./capture-decoder.js";
import { CAPTURE_TAGS } from "./capture-tags.js";
import { logWriterProgram, type BatchWriter, type LogWriterProgram } from "./log-format-thread.js";

let program: LogWriterProgram | undefined;

/** A writer of batches for a log of format version `v`, for this thread. */
export function inlineWriter(v: number): BatchWriter {
  program ??= logWriterProgram(captureDecoderProgram(CAPTURE_TAGS), zlib);
  return program.writer(v);
}

/** Writes one captured batch to `fd` now, as the thread would (throws what the write throws). */
export function writeBatchHere(fd: number, writer: BatchWriter, nums: Float64Array, chars: Uint16Array, n: number, c: number, records: number): void {
  writer.write(nums, chars, n, c, records, (bytes, start, end) => {
    while (start < end) start += writeSync(fd, bytes, start, end - start);
  });
}
