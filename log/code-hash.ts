import { createHash } from "node:crypto";

/** Names listed one by one in a header; past this, one combined hash (a header stays small). */
export const MAX_LISTED_FUNCTIONS = 1000;

/** A short hash of code: the first 16 hex digits of its sha-256. */
export function codeHash(code: string | Uint8Array): string {
  return createHash("sha256").update(code).digest("hex").slice(0, 16);
}

/**
 * The header's `functions` (name -> hash, names sorted) when there are at most
 * MAX_LISTED_FUNCTIONS, else its `functionsDigest` (their count and one hash of all the pairs).
 */
export function functionsMeta(hashes: Readonly<Record<string, string>>): { functions: Record<string, string> } | { functionsDigest: { count: number; combined: string } } {
  const names = Object.keys(hashes).sort();
  if (names.length <= MAX_LISTED_FUNCTIONS) {
    const functions: Record<string, string> = {};
    for (const name of names) functions[name] = hashes[name]!;
    return { functions };
  }
  return { functionsDigest: { count: names.length, combined: combinedHash(hashes) } };
}

/** One hash of name -> hash pairs, independent of their order. */
export function combinedHash(hashes: Readonly<Record<string, string>>): string {
  return codeHash(Object.keys(hashes).sort().map((name) => `${name}\t${hashes[name]}\n`).join(""));
}
