/**
 * `compareKeys` over a fixed list of keys by index, for `order`, which compares keys
 * millions of times on big graphs (all tasks of a uniform tree tie on every metric).
 *
 * Each key's shape is read once: whether it is a tuple key, where its first element
 * ends if that is a str without escapes (the name, as in `('sum-3', 12, 0)`), and where
 * its trailing run of plain ints starts. Two keys that first differ inside the name or
 * inside that run of ints, as nearly all pairs of Dask keys do, are then settled from
 * the first differing character; the rest go through `compareTupleKeys`.
 */
import { compareInsideString, compareStrings, compareTupleKeys } from "./key-order.js";
import {
  DOUBLE_QUOTE,
  SINGLE_QUOTE,
  elementEnd,
  firstElementStart,
  isClose,
  nextElementStart,
} from "./tuple-key-scan.js";

const OPEN = 40;

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** A non-negative int as Python prints it: digits, no leading zero. */
function isPlainInt(text: string, start: number, end: number): boolean {
  if (text.charCodeAt(start) === 48 && end - start > 1) return false;
  for (let at = start; at < end; at++) if (!isDigit(text.charCodeAt(at))) return false;
  return true;
}

function firstDifference(a: string, b: string): number {
  const limit = Math.min(a.length, b.length);
  let p = 0;
  while (p < limit && a.charCodeAt(p) === b.charCodeAt(p)) p++;
  return p;
}

function digitsEnd(text: string, at: number): number {
  while (isDigit(text.charCodeAt(at))) at++;
  return at;
}

/**
 * Both texts are in their trailing runs of plain ints at `p`, their first difference.
 * Compares the ints that contain `p`; undefined if there are none or they are equal.
 */
function compareIntsAt(a: string, b: string, p: number): number | undefined {
  let start = p;
  while (isDigit(a.charCodeAt(start - 1))) start--;
  const endA = digitsEnd(a, start);
  const endB = digitsEnd(b, start);
  if (endA === start || endB === start || (p >= endA && p >= endB)) return undefined;
  // Without leading zeros, the longer int is the larger one.
  if (endA !== endB) return endA < endB ? -1 : 1;
  return a.charCodeAt(p) < b.charCodeAt(p) ? -1 : 1;
}

const UNREAD = 0;
const NOT_TUPLE = 1;
const TUPLE = 2;

export class IndexedKeyComparator {
  private readonly shape: Uint8Array;
  /** End of the first element if it is a str without escapes, else 0. */
  private readonly nameEnd: Int32Array;
  /** Where the trailing plain-int elements begin (end of the last other element). */
  private readonly intsStart: Int32Array;

  constructor(private readonly keys: readonly string[]) {
    const n = keys.length;
    this.shape = new Uint8Array(n);
    this.nameEnd = new Int32Array(n);
    this.intsStart = new Int32Array(n);
  }

  compare(i: number, j: number): number {
    const a = this.keys[i]!;
    const b = this.keys[j]!;
    if (a.charCodeAt(0) !== OPEN || b.charCodeAt(0) !== OPEN || !this.isTuple(i) || !this.isTuple(j)) {
      return compareStrings(a, b);
    }
    if (a === b) return 0;
    const p = firstDifference(a, b);
    let quick: number | undefined;
    if (p > 1 && p < this.nameEnd[i]!) quick = compareInsideString(a, b, 1, p);
    else if (p >= this.intsStart[i]! && p >= this.intsStart[j]!) quick = compareIntsAt(a, b, p);
    return quick ?? compareTupleKeys(a, b);
  }

  private isTuple(index: number): boolean {
    if (this.shape[index] === UNREAD) this.readShape(index);
    return this.shape[index] === TUPLE;
  }

  /** Checks the key is a tuple key (as `isTupleKey`) while noting its shape. */
  private readShape(index: number): void {
    const key = this.keys[index]!;
    this.shape[index] = NOT_TUPLE;
    const first = firstElementStart(key);
    let nameEnd = 0;
    let intsStart = first;
    let at = first;
    while (!isClose(key, at)) {
      const end = elementEnd(key, at);
      if (end < 0) return;
      const code = key.charCodeAt(at);
      if (at === first && (code === SINGLE_QUOTE || code === DOUBLE_QUOTE)) {
        const backslash = key.indexOf("\\", at);
        if (backslash < 0 || backslash >= end) nameEnd = end;
      }
      if (!isPlainInt(key, at, end)) intsStart = end;
      at = nextElementStart(key, end);
      if (at < 0) return;
    }
    if (at !== key.length - 1) return;
    this.shape[index] = TUPLE;
    this.nameEnd[index] = nameEnd;
    this.intsStart[index] = intsStart;
  }
}
