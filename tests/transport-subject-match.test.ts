import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assertValidPattern,
  isValidPattern,
  isValidSubject,
  subjectMatches,
  SubscriptionIndex,
} from "../transport/subject-match.js";

// Reference implementations: the rules written as plainly as possible.
function referenceMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return i === p.length - 1 && s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== "*" && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}

function referenceValidPattern(pattern: string): boolean {
  if (pattern === "" || /[ \t\r\n]/.test(pattern)) return false;
  const tokens = pattern.split(".");
  return tokens.every((t, i) => t !== "" && (t !== ">" || i === tokens.length - 1));
}

function referenceValidSubject(subject: string): boolean {
  return referenceValidPattern(subject) && subject.split(".").every((t) => t !== "*" && t !== ">");
}

// Few distinct tokens so that random patterns and subjects often match. `a*` and `x>`
// are literal tokens (wildcards only count as whole tokens).
const token = fc.constantFrom("a", "b", "c", "a*", "x>");
const subjectArb = fc.array(token, { minLength: 1, maxLength: 5 }).map((t) => t.join("."));
const patternArb = fc
  .tuple(fc.array(fc.oneof(token, fc.constant("*")), { minLength: 0, maxLength: 5 }), fc.boolean())
  .filter(([tokens, tail]) => tokens.length > 0 || tail)
  .map(([tokens, tail]) => [...tokens, ...(tail ? [">"] : [])].join("."));

describe("subject validation", () => {
  it.each(["a", "a.b.c", "natsched.c1.worker.w-1", "a*.b", "x>y", "_INBOX.1z"])("accepts publish subject %j", (s) => {
    expect(isValidSubject(s)).toBe(true);
  });

  it.each(["", ".", "a.", ".a", "a..b", "a b", "a\tb", "a.*", "*", ">", "a.>"])("rejects publish subject %j", (s) => {
    expect(isValidSubject(s)).toBe(false);
  });

  it.each(["*", ">", "a.*", "a.>", "*.*.>", "a.*.c"])("accepts pattern %j", (p) => {
    expect(isValidPattern(p)).toBe(true);
  });

  it.each(["", "a.>.b", ">.a", "a..*", "a.*.", "a .b"])("rejects pattern %j", (p) => {
    expect(isValidPattern(p)).toBe(false);
  });

  it("throws a BAD_OPTION error naming the problem", () => {
    expect(() => assertValidPattern("a.>.b")).toThrow(
      expect.objectContaining({ code: "BAD_OPTION", message: `option subject: invalid subject "a.>.b": '>' is only allowed as the last token` }),
    );
  });

  it("agrees with the reference on arbitrary strings", () => {
    const text = fc.array(fc.constantFrom("a", "b", ".", "*", ">", " ", "\t"), { maxLength: 8 }).map((c) => c.join(""));
    fc.assert(
      fc.property(text, (s) => {
        expect(isValidPattern(s)).toBe(referenceValidPattern(s));
        expect(isValidSubject(s)).toBe(referenceValidSubject(s));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("subjectMatches", () => {
  it.each([
    ["a.b", "a.b", true],
    ["a.b", "a.c", false],
    ["a.*", "a.b", true],
    ["a.*", "a.b.c", false],
    ["a.*", "a", false],
    ["a.>", "a.b", true],
    ["a.>", "a.b.c", true],
    ["a.>", "a", false],
    [">", "a", true],
    ["*.b.>", "x.b.y.z", true],
    ["a*", "ab", false],
    ["a*", "a*", true],
  ])("%j vs %j -> %j", (pattern, subject, expected) => {
    expect(subjectMatches(pattern, subject)).toBe(expected);
  });

  it("agrees with the reference", () => {
    fc.assert(
      fc.property(patternArb, subjectArb, (pattern, subject) => {
        expect(subjectMatches(pattern, subject)).toBe(referenceMatches(pattern, subject));
      }),
      { numRuns: 5000 },
    );
  });
});

describe("SubscriptionIndex", () => {
  type Op = { kind: "add"; pattern: string } | { kind: "remove"; pick: number } | { kind: "match"; subject: string };
  const exactPattern = subjectArb;
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant("add" as const), pattern: fc.oneof(patternArb, exactPattern) }),
    fc.record({ kind: fc.constant("remove" as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant("match" as const), subject: subjectArb }),
  );

  it("matches exactly what a linear scan with the reference matcher finds, across adds and removes", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const index = new SubscriptionIndex<number>();
        const model: { pattern: string; id: number }[] = [];
        let nextId = 0;
        for (const o of ops) {
          if (o.kind === "add") {
            const id = nextId++;
            index.add(o.pattern, id);
            model.push({ pattern: o.pattern, id });
          } else if (o.kind === "remove") {
            if (model.length === 0) {
              expect(index.remove("a", -1)).toBe(false);
              continue;
            }
            const [gone] = model.splice(o.pick % model.length, 1);
            expect(index.remove(gone.pattern, gone.id)).toBe(true);
            expect(index.remove(gone.pattern, gone.id)).toBe(false);
          } else {
            const expected = model.filter((m) => referenceMatches(m.pattern, o.subject)).map((m) => m.id);
            expect([...index.match(o.subject)].sort((x, y) => x - y)).toEqual(expected);
          }
          expect(index.size).toBe(model.length);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("never mutates an array it has returned", () => {
    const index = new SubscriptionIndex<string>();
    index.add("a.b", "exact");
    index.add("a.*", "star");
    const before = index.match("a.b");
    index.add("a.b", "exact2");
    index.remove("a.*", "star");
    expect(before).toEqual(["exact", "star"]);
    expect(index.match("a.b")).toEqual(["exact", "exact2"]);
  });

  it("forgets a cached answer when an exact subscription on that subject comes or goes", () => {
    const index = new SubscriptionIndex<string>();
    index.add("a.>", "wild");
    expect(index.match("a.b")).toEqual(["wild"]);
    index.add("a.b", "exact");
    expect(index.match("a.b")).toEqual(["exact", "wild"]);
    index.remove("a.b", "exact");
    expect(index.match("a.b")).toEqual(["wild"]);
  });

  it("prunes the trie so removed wildcard patterns stop matching", () => {
    const index = new SubscriptionIndex<string>();
    index.add("a.*.c", "x");
    index.add("a.>", "y");
    expect(index.match("a.b.c")).toEqual(["y", "x"]);
    expect(index.remove("a.*.c", "x")).toBe(true);
    expect(index.match("a.b.c")).toEqual(["y"]);
    expect(index.remove("a.>", "y")).toBe(true);
    expect(index.match("a.b.c")).toEqual([]);
    expect(index.size).toBe(0);
  });
});
