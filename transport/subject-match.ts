/**
 * NATS subject rules and a subscription index.
 *
 * A subject is dot-separated non-empty tokens without whitespace. In a subscription
 * pattern a token that is exactly `*` matches any one token, and a last token that is
 * exactly `>` matches one or more trailing tokens. As in NATS, `*` or `>` inside a
 * longer token (`a*`, `x>y`) is an ordinary character. Publish subjects take no
 * wildcard tokens.
 */
import { BadOptionError } from "../machines/errors.js";

const DOT = 46;
const STAR = 42;
const GT = 62;

function isWhitespace(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13;
}

/** Why `subject` is not a valid subject (or pattern, when `wildcards`), or undefined if it is. */
export function subjectProblem(subject: string, wildcards: boolean): string | undefined {
  if (typeof subject !== "string" || subject.length === 0) return "empty subject";
  let tokenStart = 0;
  for (let i = 0; i <= subject.length; i++) {
    const code = i === subject.length ? DOT : subject.charCodeAt(i);
    if (isWhitespace(code)) return "whitespace in subject";
    if (code !== DOT) continue;
    const tokenLength = i - tokenStart;
    if (tokenLength === 0) return "empty token";
    if (tokenLength === 1) {
      const only = subject.charCodeAt(tokenStart);
      if (only === STAR || only === GT) {
        if (!wildcards) return "wildcard in publish subject";
        if (only === GT && i !== subject.length) return "'>' is only allowed as the last token";
      }
    }
    tokenStart = i + 1;
  }
  return undefined;
}

/** A subject messages can be published to: no wildcard tokens. */
export function isValidSubject(subject: string): boolean {
  return subjectProblem(subject, false) === undefined;
}

/** A subject subscriptions can listen on: `*` tokens anywhere, `>` only last. */
export function isValidPattern(pattern: string): boolean {
  return subjectProblem(pattern, true) === undefined;
}

export function assertValidSubject(subject: string, what = "subject"): void {
  const problem = subjectProblem(subject, false);
  if (problem !== undefined) throw new BadOptionError(what, `invalid subject ${JSON.stringify(subject)}: ${problem}`);
}

export function assertValidPattern(pattern: string, what = "subject"): void {
  const problem = subjectProblem(pattern, true);
  if (problem !== undefined) throw new BadOptionError(what, `invalid subject ${JSON.stringify(pattern)}: ${problem}`);
}

export function hasWildcard(pattern: string): boolean {
  return pattern.split(".").some((token) => token === "*" || token === ">");
}

/** Whether the valid pattern matches the valid publish subject. Walks both without splitting. */
export function subjectMatches(pattern: string, subject: string): boolean {
  let p = 0;
  let s = 0;
  while (p < pattern.length) {
    if (s > subject.length) return false;
    const pEnd = tokenEnd(pattern, p);
    const isSingleChar = pEnd - p === 1;
    if (isSingleChar && pattern.charCodeAt(p) === GT) return s < subject.length;
    const sEnd = tokenEnd(subject, s);
    if (s === subject.length) return false;
    const isStar = isSingleChar && pattern.charCodeAt(p) === STAR;
    if (!isStar && !sameToken(pattern, p, pEnd, subject, s, sEnd)) return false;
    p = pEnd + 1;
    s = sEnd + 1;
  }
  return s > subject.length;
}

function sameToken(a: string, aStart: number, aEnd: number, b: string, bStart: number, bEnd: number): boolean {
  if (aEnd - aStart !== bEnd - bStart) return false;
  for (let i = 0; i < aEnd - aStart; i++) if (a.charCodeAt(aStart + i) !== b.charCodeAt(bStart + i)) return false;
  return true;
}

function tokenEnd(text: string, start: number): number {
  const dot = text.indexOf(".", start);
  return dot === -1 ? text.length : dot;
}

class TrieNode<T> {
  readonly literal = new Map<string, TrieNode<T>>();
  star: TrieNode<T> | undefined;
  /** Items whose pattern ends at this node. */
  terminal: T[] = [];
  /** Items whose pattern continues from this node with a final `>`. */
  tail: T[] = [];

  isEmpty(): boolean {
    return this.literal.size === 0 && this.star === undefined && this.terminal.length === 0 && this.tail.length === 0;
  }
}

const EMPTY: readonly never[] = Object.freeze([]);
const MAX_CACHED_SUBJECTS = 4096;

/**
 * Finds the items subscribed to patterns matching a subject. Exact patterns sit in a Map
 * (one lookup per publish); wildcard patterns sit in a token trie, and the combined
 * answer per subject is cached until a subscription that could change it comes or goes.
 *
 * Arrays returned by `match` are never mutated afterwards (copy-on-write), so callers
 * may hold on to them while subscriptions change; they must not mutate them.
 */
export class SubscriptionIndex<T> {
  readonly #exact = new Map<string, readonly T[]>();
  readonly #root = new TrieNode<T>();
  readonly #cache = new Map<string, readonly T[]>();
  #wildcardCount = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Adds `item` under a pattern that must already be valid. */
  add(pattern: string, item: T): void {
    this.#size++;
    if (!hasWildcard(pattern)) {
      const current = this.#exact.get(pattern);
      this.#exact.set(pattern, current === undefined ? [item] : [...current, item]);
      this.#cache.delete(pattern);
      return;
    }
    this.#wildcardCount++;
    this.#cache.clear();
    const tokens = pattern.split(".");
    let node = this.#root;
    const last = tokens.length - 1;
    for (let i = 0; i < last; i++) node = childFor(node, tokens[i]);
    if (tokens[last] === ">") node.tail = [...node.tail, item];
    else {
      node = childFor(node, tokens[last]);
      node.terminal = [...node.terminal, item];
    }
  }

  /** Removes one registration of `item` under `pattern`; returns whether it was there. */
  remove(pattern: string, item: T): boolean {
    if (!hasWildcard(pattern)) {
      const current = this.#exact.get(pattern);
      if (current === undefined || !current.includes(item)) return false;
      const rest = withoutItem(current, item);
      if (rest.length === 0) this.#exact.delete(pattern);
      else this.#exact.set(pattern, rest);
      this.#cache.delete(pattern);
      this.#size--;
      return true;
    }
    const tokens = pattern.split(".");
    const endsWithTail = tokens[tokens.length - 1] === ">";
    const pathTokens = endsWithTail ? tokens.slice(0, -1) : tokens;
    const path: TrieNode<T>[] = [this.#root];
    for (const token of pathTokens) {
      const next = token === "*" ? path[path.length - 1].star : path[path.length - 1].literal.get(token);
      if (next === undefined) return false;
      path.push(next);
    }
    const node = path[path.length - 1];
    const list = endsWithTail ? node.tail : node.terminal;
    if (!list.includes(item)) return false;
    if (endsWithTail) node.tail = withoutItem(list, item);
    else node.terminal = withoutItem(list, item);
    this.#pruneEmpty(path, pathTokens);
    this.#wildcardCount--;
    this.#size--;
    this.#cache.clear();
    return true;
  }

  /** Items whose pattern matches the valid publish subject `subject`. */
  match(subject: string): readonly T[] {
    const exact = this.#exact.get(subject) ?? EMPTY;
    if (this.#wildcardCount === 0) return exact;
    const cached = this.#cache.get(subject);
    if (cached !== undefined) return cached;
    const found = exact.slice();
    collect(this.#root, subject.split("."), 0, found);
    if (this.#cache.size >= MAX_CACHED_SUBJECTS) this.#cache.clear();
    this.#cache.set(subject, found);
    return found;
  }

  #pruneEmpty(path: TrieNode<T>[], tokens: string[]): void {
    for (let depth = path.length - 1; depth > 0 && path[depth].isEmpty(); depth--) {
      const parent = path[depth - 1];
      const token = tokens[depth - 1];
      if (token === "*") parent.star = undefined;
      else parent.literal.delete(token);
    }
  }
}

function childFor<T>(node: TrieNode<T>, token: string): TrieNode<T> {
  if (token === "*") return (node.star ??= new TrieNode<T>());
  let child = node.literal.get(token);
  if (child === undefined) {
    child = new TrieNode<T>();
    node.literal.set(token, child);
  }
  return child;
}

function collect<T>(node: TrieNode<T>, tokens: string[], index: number, found: T[]): void {
  if (index === tokens.length) {
    for (const item of node.terminal) found.push(item);
    return;
  }
  for (const item of node.tail) found.push(item);
  const literal = node.literal.get(tokens[index]);
  if (literal !== undefined) collect(literal, tokens, index + 1, found);
  if (node.star !== undefined) collect(node.star, tokens, index + 1, found);
}

function withoutItem<T>(list: readonly T[], item: T): T[] {
  const at = list.indexOf(item);
  return [...list.slice(0, at), ...list.slice(at + 1)];
}
