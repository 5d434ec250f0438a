/**
 * MurmurHash3, x86 128-bit variant (Austin Appleby's public-domain algorithm).
 *
 * Chosen for tokens because it is a documented, widely ported 128-bit hash built only
 * from 32-bit multiplies and rotations, which JavaScript does exactly and fast with
 * `Math.imul` (a 64-bit design would need BigInt). It is not cryptographic: tokens
 * name pure computations, nobody gains by forging them.
 */

const C1 = 0x239b961b;
const C2 = 0xab0e9789;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93;

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

function mixK(k: number, multiplier: number, rotation: number, next: number): number {
  return Math.imul(rotl(Math.imul(k, multiplier), rotation), next);
}

function littleEndianWord(bytes: Uint8Array, at: number): number {
  return bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24);
}

/** Tail bytes `from`..`from+3` (those below `length`) as a little-endian word. */
function tailWord(bytes: Uint8Array, from: number, length: number): number {
  let k = 0;
  for (let i = Math.min(length, from + 4) - 1; i >= from; i--) k = (k << 8) | bytes[i]!;
  return k;
}

function toHex(word: number): string {
  return (word >>> 0).toString(16).padStart(8, "0");
}

/** The 128-bit hash as 32 lowercase hex digits: h1, h2, h3, h4, each big-endian. */
export function murmur3x86_128(bytes: Uint8Array, seed = 0): string {
  const length = bytes.length;
  let h1 = seed | 0;
  let h2 = seed | 0;
  let h3 = seed | 0;
  let h4 = seed | 0;
  const blockEnd = length - (length % 16);

  for (let at = 0; at < blockEnd; at += 16) {
    h1 ^= mixK(littleEndianWord(bytes, at), C1, 15, C2);
    h1 = (Math.imul(rotl(h1, 19) + h2, 5) + 0x561ccd1b) | 0;
    h2 ^= mixK(littleEndianWord(bytes, at + 4), C2, 16, C3);
    h2 = (Math.imul(rotl(h2, 17) + h3, 5) + 0x0bcaa747) | 0;
    h3 ^= mixK(littleEndianWord(bytes, at + 8), C3, 17, C4);
    h3 = (Math.imul(rotl(h3, 15) + h4, 5) + 0x96cd1c35) | 0;
    h4 ^= mixK(littleEndianWord(bytes, at + 12), C4, 18, C1);
    h4 = (Math.imul(rotl(h4, 13) + h1, 5) + 0x32ac3b17) | 0;
  }

  const tail = length - blockEnd;
  if (tail > 12) h4 ^= mixK(tailWord(bytes, blockEnd + 12, length), C4, 18, C1);
  if (tail > 8) h3 ^= mixK(tailWord(bytes, blockEnd + 8, length), C3, 17, C4);
  if (tail > 4) h2 ^= mixK(tailWord(bytes, blockEnd + 4, length), C2, 16, C3);
  if (tail > 0) h1 ^= mixK(tailWord(bytes, blockEnd, length), C1, 15, C2);

  // The reference mixes in the length as a 32-bit value.
  h1 ^= length;
  h2 ^= length;
  h3 ^= length;
  h4 ^= length;
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  h1 = fmix32(h1);
  h2 = fmix32(h2);
  h3 = fmix32(h3);
  h4 = fmix32(h4);
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  return toHex(h1) + toHex(h2) + toHex(h3) + toHex(h4);
}
