/**
 * The key order Dask breaks ties with (`dask.order.StrComparable`): Python's `<` on the
 * keys themselves, falling back to comparing `str(key)` when Python refuses to compare.
 *
 * Keys here are strings, Dask tuple keys in their rendered form `('x', 10)` (see
 * tuple-key-scan.ts). Two tuple keys compare as Python tuples would, element by element
 * with numbers compared as numbers, so `('x', 9)` comes before `('x', 10)` where plain
 * string order would not. Where an element pair mixes str and number Python raises,
 * and Dask (and we) compare the rendered strings instead. Any other pair of keys
 * compares as plain strings. Strings compare by UTF-16 code unit, which differs from
 * Python's code point order only between astral characters and U+E000..U+FFFF.
 */
import {
  DOUBLE_QUOTE,
  SINGLE_QUOTE,
  type TupleElement,
  decodeNumber,
  elementEnd,
  firstElementStart,
  isClose,
  isTupleKey,
  nextElementStart,
  parseTupleKey,
} from "./tuple-key-scan.js";

const BACKSLASH = 92;
const MINUS = 45;

export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Python tuple comparison; undefined where Python would raise (str against number). */
function compareElements(a: readonly TupleElement[], b: readonly TupleElement[]): number | undefined {
  const common = Math.min(a.length, b.length);
  for (let i = 0; i < common; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (typeof x !== typeof y) return undefined;
    return x < y ? -1 : 1;
  }
  return Math.sign(a.length - b.length);
}

/** Inside a str element whose literal starts at `start`, the texts first differ at `p`. */
export function compareInsideString(a: string, b: string, start: number, p: number): number | undefined {
  for (let at = start + 1; at < p; at++) if (a.charCodeAt(at) === BACKSLASH) return undefined;
  const x = a.charCodeAt(p);
  const y = b.charCodeAt(p);
  if (x === BACKSLASH || y === BACKSLASH) return undefined;
  const quote = a.charCodeAt(start);
  if (x === quote) return -1; // a's str ends first: a prefix sorts first
  if (y === quote) return 1;
  return x < y ? -1 : 1;
}

function startsNumber(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  return (code >= 48 && code <= 57) || code === MINUS || text.startsWith("inf", at);
}

/** Both texts have a number element starting at `start`; undefined if the numbers are equal. */
function compareNumbersAt(a: string, b: string, start: number): number | undefined {
  const x = decodeNumber(a, start, elementEnd(a, start));
  const y = decodeNumber(b, start, elementEnd(b, start));
  return x < y ? -1 : x > y ? 1 : undefined;
}

/**
 * Compares two distinct, well-formed tuple keys without parsing them: their texts agree
 * up to the first differing position, so they agree on every element before it and
 * only the element there decides. Undefined for the rare cases this cannot settle
 * (escapes, equal numbers spelled differently, differences in structure or type).
 */
function compareTupleTexts(a: string, b: string): number | undefined {
  const limit = Math.min(a.length, b.length);
  let p = 0;
  while (p < limit && a.charCodeAt(p) === b.charCodeAt(p)) p++;
  for (let at = firstElementStart(a); !isClose(a, at); ) {
    if (p < at) return undefined;
    if (p === at) return startsNumber(a, at) && startsNumber(b, at) ? compareNumbersAt(a, b, at) : undefined;
    const end = elementEnd(a, at);
    const code = a.charCodeAt(at);
    if (code === SINGLE_QUOTE || code === DOUBLE_QUOTE) {
      if (p < end) return compareInsideString(a, b, at, p);
    } else if (p <= end) {
      return compareNumbersAt(a, b, at);
    }
    at = nextElementStart(a, end);
  }
  return undefined;
}

/** `compareKeys` for two keys already known to be tuple keys. */
export function compareTupleKeys(a: string, b: string): number {
  if (a === b) return 0;
  const quick = compareTupleTexts(a, b);
  if (quick !== undefined) return quick;
  return compareElements(parseTupleKey(a)!, parseTupleKey(b)!) ?? compareStrings(a, b);
}

/** Negative, zero or positive as `a` sorts before, with or after `b` in Dask's tie-break order. */
export function compareKeys(a: string, b: string): number {
  if (isTupleKey(a) && isTupleKey(b)) return compareTupleKeys(a, b);
  return compareStrings(a, b);
}
