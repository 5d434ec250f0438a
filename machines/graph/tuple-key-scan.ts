/**
 * Reading rendered Dask tuple keys such as `('x-abc', 3, 0.5)` back into elements.
 *
 * A tuple key is `(`, elements separated by `,` (a trailing one allowed), `)`, with
 * spaces around elements. An element is a Python str literal as `repr` writes it
 * (single or double quotes; escapes \\ \' \" \n \r \t \xHH \uHHHH \UHHHHHHHH) or a
 * number (int or float repr, `inf`, `-inf`). Anything else (None, nested tuples, `nan`)
 * makes the key an ordinary string. The scanning functions allocate nothing, since key
 * comparison runs them millions of times.
 */

export type TupleElement = string | number;

const OPEN = 40;
const CLOSE = 41;
const SPACE = 32;
const COMMA = 44;
const MINUS = 45;
const DOT = 46;
const BACKSLASH = 92;
export const SINGLE_QUOTE = 39;
export const DOUBLE_QUOTE = 34;

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = { "\\": "\\", "'": "'", '"': '"', n: "\n", r: "\r", t: "\t" };
const HEX_ESCAPE_DIGITS: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

function isHexDigit(code: number): boolean {
  return isDigit(code) || (code >= 97 && code <= 102) || (code >= 65 && code <= 70);
}

function digitsEnd(text: string, at: number): number {
  while (isDigit(text.charCodeAt(at))) at++;
  return at;
}

export function skipSpaces(text: string, at: number): number {
  while (text.charCodeAt(at) === SPACE) at++;
  return at;
}

/** Length of the escape whose letter is at `at` (after the backslash), or -1. */
function escapeLength(text: string, at: number): number {
  const letter = text[at] ?? "";
  if (SIMPLE_ESCAPES[letter] !== undefined) return 1;
  const digits = HEX_ESCAPE_DIGITS[letter];
  if (digits === undefined) return -1;
  for (let i = 1; i <= digits; i++) if (!isHexDigit(text.charCodeAt(at + i))) return -1;
  if (digits === 8 && parseInt(text.slice(at + 1, at + 9), 16) > 0x10ffff) return -1;
  return 1 + digits;
}

function stringEnd(text: string, start: number): number {
  const quote = text.charCodeAt(start);
  let at = start + 1;
  while (at < text.length) {
    const code = text.charCodeAt(at);
    if (code === quote) return at + 1;
    if (code !== BACKSLASH) {
      at++;
      continue;
    }
    const length = escapeLength(text, at + 1);
    if (length < 0) return -1;
    at += 1 + length;
  }
  return -1;
}

function numberEnd(text: string, start: number): number {
  let at = text.charCodeAt(start) === MINUS ? start + 1 : start;
  if (text.startsWith("inf", at)) return at + 3;
  const intEnd = digitsEnd(text, at);
  if (intEnd === at) return -1;
  at = intEnd;
  if (text.charCodeAt(at) === DOT) at = digitsEnd(text, at + 1);
  if (text[at] === "e") {
    const sign = text[at + 1] === "+" || text[at + 1] === "-" ? 1 : 0;
    const exponentEnd = digitsEnd(text, at + 1 + sign);
    if (exponentEnd === at + 1 + sign) return -1;
    at = exponentEnd;
  }
  return at;
}

/** End (exclusive) of the element starting at `start`, or -1 if none starts there. */
export function elementEnd(text: string, start: number): number {
  const code = text.charCodeAt(start);
  return code === SINGLE_QUOTE || code === DOUBLE_QUOTE ? stringEnd(text, start) : numberEnd(text, start);
}

/** Start of the element after the one ending at `end`, the index of `)` if none, or -1. */
export function nextElementStart(text: string, end: number): number {
  const at = skipSpaces(text, end);
  const code = text.charCodeAt(at);
  if (code === CLOSE) return at;
  return code === COMMA ? skipSpaces(text, at + 1) : -1;
}

export function isClose(text: string, at: number): boolean {
  return text.charCodeAt(at) === CLOSE;
}

/** Start of the first element (or of the closing `)`). */
export function firstElementStart(text: string): number {
  return skipSpaces(text, 1);
}

export function isTupleKey(text: string): boolean {
  if (text.charCodeAt(0) !== OPEN) return false;
  let at = firstElementStart(text);
  while (!isClose(text, at)) {
    const end = elementEnd(text, at);
    if (end < 0) return false;
    at = nextElementStart(text, end);
    if (at < 0) return false;
  }
  return at === text.length - 1;
}

export function decodeNumber(text: string, start: number, end: number): number {
  const negative = text.charCodeAt(start) === MINUS;
  const digitsStart = negative ? start + 1 : start;
  if (text.startsWith("inf", digitsStart)) return negative ? -Infinity : Infinity;
  // Short ints add up exactly digit by digit, without allocating a substring.
  if (end - digitsStart <= 15 && digitsEnd(text, digitsStart) === end) {
    let value = 0;
    for (let at = digitsStart; at < end; at++) value = value * 10 + text.charCodeAt(at) - 48;
    return negative ? -value : value;
  }
  return Number(text.slice(start, end));
}

function decodeString(text: string, start: number, end: number): string {
  const body = text.slice(start + 1, end - 1);
  if (!body.includes("\\")) return body;
  let out = "";
  for (let at = 0; at < body.length; at++) {
    if (body[at] !== "\\") {
      out += body[at];
      continue;
    }
    const letter = body[at + 1]!;
    const simple = SIMPLE_ESCAPES[letter];
    if (simple !== undefined) {
      out += simple;
      at += 1;
      continue;
    }
    const digits = HEX_ESCAPE_DIGITS[letter]!;
    out += String.fromCodePoint(parseInt(body.slice(at + 2, at + 2 + digits), 16));
    at += 1 + digits;
  }
  return out;
}

/** The elements of a rendered Dask tuple key, or undefined if `key` is not one. */
export function parseTupleKey(key: string): TupleElement[] | undefined {
  if (!isTupleKey(key)) return undefined;
  const elements: TupleElement[] = [];
  for (let at = firstElementStart(key); !isClose(key, at); ) {
    const end = elementEnd(key, at);
    const code = key.charCodeAt(at);
    elements.push(code === SINGLE_QUOTE || code === DOUBLE_QUOTE ? decodeString(key, at, end) : decodeNumber(key, at, end));
    at = nextElementStart(key, end);
  }
  return elements;
}
