/**
 * Deterministic tokens for pure tasks, as Dask's `tokenize`: `inc-${tokenize("inc", args)}`
 * names the same computation the same way in every run, process and machine.
 *
 * The token is MurmurHash3 x86_128 (see murmur3.ts) of the canonical encoding of the
 * parts (see token-encoding.ts): 32 lowercase hex digits, 128 bits, so accidental
 * collisions are negligible. The parts are hashed as a list: `tokenize("a", "b")`
 * differs from `tokenize(["a", "b"])` and from `tokenize("ab")`.
 */
import { murmur3x86_128 } from "./murmur3.js";
import { encodeTokenParts } from "./token-encoding.js";

export function tokenize(...parts: unknown[]): string {
  return murmur3x86_128(encodeTokenParts(parts));
}
