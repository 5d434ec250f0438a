/**
 * Frames of a version-2 log file (docs/log-format.md): after the header line, the file is
 * a run of frames, each one batch of records as the capture laid it out
 * (log/capture-tags.ts), whole and checked.
 *
 *   head (24 bytes, little-endian u32s): magic "nsF2", n, c, records, body CRC-32, head CRC-32
 *   body: n doubles (8 bytes each, little-endian), c UTF-16LE code units, zero bytes up to a
 *         multiple of 8
 *
 * The body CRC covers the n*8 + c*2 bytes (not the padding); the head CRC covers the head's
 * first 20 bytes, so that a damaged length is told from a torn frame and the reader can
 * look for the next frame instead of trusting it. The log writer thread writes heads
 * (log/log-format-thread.ts, from its own source text); this module reads them. The header line is padded with spaces to
 * a multiple of 8 bytes, so that in a file read whole every frame's doubles are aligned.
 */
import { crc32 } from "node:zlib";

export const FRAME_MAGIC = 0x3246736e; // "nsF2" as bytes 6e 73 46 32
export const FRAME_HEAD_BYTES = 24;
export const FRAME_MAGIC_BYTES = Buffer.from("nsF2", "latin1");

export interface FrameHead {
  n: number;
  c: number;
  records: number;
  bodyCrc: number;
  /** Bytes of the body, padding included. */
  bodyBytes: number;
}

/** Body bytes (padding included) of a frame of n doubles and c code units. */
export function frameBodyBytes(n: number, c: number): number {
  return (n * 8 + c * 2 + 7) & ~7;
}

/** The head at `at`, or undefined if those 24 bytes are not a frame head. */
export function decodeFrameHead(bytes: Buffer, at: number): FrameHead | undefined {
  if (at + FRAME_HEAD_BYTES > bytes.length || bytes.readUInt32LE(at) !== FRAME_MAGIC) return undefined;
  if (crc32(bytes.subarray(at, at + 20)) !== bytes.readUInt32LE(at + 20)) return undefined;
  const n = bytes.readUInt32LE(at + 4);
  const c = bytes.readUInt32LE(at + 8);
  return { n, c, records: bytes.readUInt32LE(at + 12), bodyCrc: bytes.readUInt32LE(at + 16), bodyBytes: frameBodyBytes(n, c) };
}

/** The CRC-32 of a frame body's doubles and code units. */
export function frameBodyCrc(body: Buffer, head: FrameHead): number {
  return crc32(body.subarray(0, head.n * 8 + head.c * 2));
}
