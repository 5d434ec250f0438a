/**
 * The log writer thread's program (log/log-format-thread.ts) run on the actors' own thread,
 * for a batch small enough that writing it here costs less than waking the thread for it: a
 * frame of a few KiB is a checksum and a write call, where the thread's hop is two context
 * switches, a message and a turn of its event loop (docs/log-format.md, "Writing").
 */
import { writeSync, writevSync } from "node:fs";
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

/**
 * Writes one captured batch to `fd` now, as the thread would (throws what the write throws). A
 * frame's pieces (head, doubles, code units, padding) stay as they are until the writer's next
 * batch, so they go in one writev; a version-1 writer reuses its buffer, so its lines go as given.
 */
export function writeBatchHere(fd: number, writer: BatchWriter, v: number, nums: Float64Array, chars: Uint16Array, n: number, c: number, records: number): void {
  if (v === 1) {
    writer.write(nums, chars, n, c, records, (bytes, start, end) => writeAll(fd, bytes, start, end));
    return;
  }
  const pieces: Uint8Array[] = [];
  writer.write(nums, chars, n, c, records, (bytes, start, end) => {
    pieces.push(bytes.subarray(start, end));
  });
  let done = writevSync(fd, pieces);
  // A short write: the rest piece by piece.
  for (const piece of pieces) {
    if (done >= piece.length) {
      done -= piece.length;
      continue;
    }
    writeAll(fd, piece, done, piece.length);
    done = 0;
  }
}

function writeAll(fd: number, bytes: Uint8Array, start: number, end: number): void {
  while (start < end) start += writeSync(fd, bytes, start, end - start);
}
