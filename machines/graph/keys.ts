/**
 * Dask's key conventions. A key is a string; Dask's tuple keys such as `("x-abc", 3)`
 * travel in their Python `str` form, `('x-abc', 3)` (see `tupleKey`).
 *
 * `keySplit` is the task *prefix* (`inc-0f3a...` -> `inc`), the name Dask uses for
 * per-prefix statistics such as task durations. `keySplitGroup` is the task *group*
 * (`('x-abc123', 3)` -> `x-abc123`), the unit Dask's scheduler groups tasks by.
 * Both follow `dask.utils.key_split` / `key_split_group` (dask 2022.12), except that
 * inputs which make the Python code raise give "Other" here.
 */
import { pyNumberRepr, pyStrRepr } from "./python-repr.js";

const STARTS_WITH_LETTER = /^\p{L}/u;
// Python's str.isalpha(): non-empty and every character a Unicode letter.
const ONLY_LETTERS = /^\p{L}+$/u;
// `re.match("[a-f]+", word)` only looks at the start of the word.
const STARTS_WITH_HEX_LETTER = /^[a-f]/;
const HEX_32 = /^[a-f0-9]{32}$/;
// What Python's argumentless str.split() separates on.
const PY_WHITESPACE_RUN = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/u;

/** Python's `text.strip(chars)`: drop any of `chars` from both ends. */
function pyStrip(text: string, chars: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && chars.includes(text[start]!)) start++;
  while (end > start && chars.includes(text[end - 1]!)) end--;
  return text.slice(start, end);
}

function codePointLength(text: string): number {
  let length = 0;
  for (const _ of text) length++;
  return length;
}

/** `<module.submodule.myclass object at 0x...>` -> `myclass`; undefined when nothing is left. */
function objectReprName(text: string): string | undefined {
  const firstWord = pyStrip(text, "<>")
    .split(PY_WHITESPACE_RUN)
    .find((word) => word !== "");
  if (firstWord === undefined) return undefined;
  return firstWord.slice(firstWord.lastIndexOf(".") + 1);
}

/**
 * The task prefix of a key, as `dask.utils.key_split`:
 * `x-1-2` -> `x`, `hello-world-1` -> `hello-world`, `x-abcdefab` -> `x` (a word of 8
 * letters starting a-f is taken for a hash), `('x-2', 1)` -> `x`, `1-0` -> `1`,
 * a 32-hex-digit key -> `data`, `<a.b.Foo object at 0x1>` -> `Foo`, else `Other`.
 */
export function keySplit(key: string): string {
  if (typeof key !== "string") return "Other";
  return hashedKeyPrefix(key) ?? keySplitGeneral(key);
}

/**
 * The prefix of the commonest key, `name-<32 hex digits>` (a tokenized or random key), without
 * splitting or regular expressions; undefined for any other key. `name` is ASCII, starts with
 * a letter and holds no "-"; the hex part holds a digit (all letters, Dask would take it as a
 * word of the prefix). For such keys it agrees with `keySplitGeneral` (tests/graph-keys.test.ts).
 */
export function hashedKeyPrefix(key: string): string | undefined {
  const dash = key.length - 33;
  if (dash < 1 || dash === 32 || key.charCodeAt(dash) !== 0x2d) return undefined;
  const c0 = key.charCodeAt(0) | 0x20;
  if (c0 < 0x61 || c0 > 0x7a) return undefined;
  for (let i = 1; i < dash; i++) {
    const c = key.charCodeAt(i);
    if (c === 0x2d || c > 0x7f) return undefined;
  }
  let digit = false;
  for (let i = dash + 1; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) digit = true;
    else if (c < 0x61 || c > 0x66) return undefined;
  }
  return digit ? key.slice(0, dash) : undefined;
}

/** `keySplit` for any key. */
export function keySplitGeneral(key: string): string {
  const words = key.split("-");
  const first = words[0]!;
  if (first === "") return "Other";
  let result = STARTS_WITH_LETTER.test(first) ? first : pyStrip(first.split(",")[0]!, "_'()\"");
  for (const word of words.slice(1)) {
    const looksLikeHash = STARTS_WITH_HEX_LETTER.test(word) && codePointLength(word) === 8;
    if (!ONLY_LETTERS.test(word) || looksLikeHash) break;
    result += `-${word}`;
  }
  if (HEX_32.test(result)) return "data";
  if (result === "") return "Other";
  if (result[0] === "<") return objectReprName(result) ?? "Other";
  return result;
}

/**
 * The task group of a key, as `dask.utils.key_split_group`: the first element of a
 * rendered tuple key (`('x-abc123', 3)` -> `x-abc123`), `data` for a 32-hex-digit key,
 * the class name of an object repr, else `keySplit(key)`.
 */
export function keySplitGroup(key: string): string {
  if (typeof key !== "string" || key === "") return "Other";
  const prefix = hashedKeyPrefix(key);
  if (prefix !== undefined) return prefix;
  if (key[0] === "(") return pyStrip(key.split(",", 1)[0]!, "()\"'");
  if (HEX_32.test(key)) return "data";
  if (key[0] === "<") return objectReprName(key) ?? "Other";
  return keySplitGeneral(key);
}

/** The key Dask writes as the tuple `(name, ...indices)`: `tupleKey("x", 3)` -> `('x', 3)`. */
export function tupleKey(name: string, ...indices: (number | string)[]): string {
  const parts = [pyStrRepr(name)];
  for (const index of indices) parts.push(typeof index === "string" ? pyStrRepr(index) : pyNumberRepr(index));
  // A one-element tuple keeps its trailing comma in Python: ('x',)
  return parts.length === 1 ? `(${parts[0]},)` : `(${parts.join(", ")})`;
}
