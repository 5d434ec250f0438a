/** The pieces behind fragments and re-sends, without a server. */
import { describe, expect, it, vi } from "vitest";
import { DedupFilter } from "../transport/nats-dedup.js";
import { parseFragmentHeader, Reassembler, splitFragments } from "../transport/nats-fragments.js";
import { ResendBuffer, type SentMessage } from "../transport/nats-resend.js";

function message(n: number, at: number, size = 10): SentMessage {
  return { subject: "s", reply: undefined, bytes: new Uint8Array(size), binary: false, tag: `x.${n}`, fragment: "", at };
}

describe("DedupFilter", () => {
  it("passes each tag once, per sender, and untagged messages always", () => {
    const f = new DedupFilter();
    expect(f.accept("a.1")).toBe(true);
    expect(f.accept("a.2")).toBe(true);
    expect(f.accept("a.1")).toBe(false);
    expect(f.accept("b.1")).toBe(true);
    expect(f.accept(undefined)).toBe(true);
    expect(f.accept("")).toBe(true);
    expect(f.accept("garbage")).toBe(true);
  });

  it("forgets the oldest tags past its window, treating them as seen", () => {
    const f = new DedupFilter();
    for (let n = 1; n <= 25_000; n++) expect(f.accept(`s.${n}`)).toBe(true);
    expect(f.accept("s.1")).toBe(false);
    expect(f.accept("s.24999")).toBe(false);
    expect(f.accept("s.25001")).toBe(true);
  });
});

describe("fragments", () => {
  it("split and reassemble in any order, ignoring duplicates", () => {
    const bytes = new Uint8Array(1000).map((_, i) => i % 256);
    const parts = splitFragments(bytes, 300);
    expect(parts.map((p) => p.length)).toEqual([300, 300, 300, 100]);
    const r = new Reassembler(10_000, 1000, () => undefined);
    expect(r.add({ id: "m", index: 2, count: 4 }, parts[2]!)).toBeUndefined();
    expect(r.add({ id: "m", index: 0, count: 4 }, parts[0]!)).toBeUndefined();
    expect(r.add({ id: "m", index: 0, count: 4 }, parts[0]!)).toBeUndefined();
    expect(r.add({ id: "m", index: 3, count: 4 }, parts[3]!)).toBeUndefined();
    const whole = r.add({ id: "m", index: 1, count: 4 }, parts[1]!);
    expect(Buffer.compare(whole!, bytes)).toBe(0);
  });

  it("drops an oversized or incomplete message and says why", () => {
    vi.useFakeTimers();
    try {
      const drops: string[] = [];
      const r = new Reassembler(500, 1000, (why) => drops.push(why));
      r.add({ id: "big", index: 0, count: 3 }, new Uint8Array(300));
      r.add({ id: "big", index: 1, count: 3 }, new Uint8Array(300));
      r.add({ id: "slow", index: 0, count: 2 }, new Uint8Array(10));
      vi.advanceTimersByTime(1001);
      expect(drops).toEqual([expect.stringMatching(/big exceeds 500 bytes/), expect.stringMatching(/slow incomplete/)]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("parses only well-formed headers", () => {
    expect(parseFragmentHeader("abc.1/2/5")).toEqual({ id: "abc.1", index: 2, count: 5 });
    for (const bad of ["", "a/1", "a/5/5", "a/-1/2", "/0/1", "a/x/2"]) expect(parseFragmentHeader(bad)).toBeUndefined();
  });
});

describe("ResendBuffer", () => {
  it("re-sends the messages of the last retainMs before a disconnect and all during it, after each delay", () => {
    vi.useFakeTimers();
    try {
      let now = 0;
      const resent: string[] = [];
      const buffer = new ResendBuffer({ retainMs: 100, delaysMs: [50, 200] }, (m) => resent.push(m.tag), () => now);
      buffer.record(message(1, (now = 0)));
      buffer.record(message(2, (now = 150)));
      buffer.record(message(3, (now = 180)));
      buffer.disconnected();
      buffer.record(message(4, (now = 400)));
      expect(buffer.recovering).toBe(true);
      buffer.reconnected();
      vi.advanceTimersByTime(50);
      expect(resent).toEqual(["x.2", "x.3", "x.4"]);
      now = 10_000;
      vi.advanceTimersByTime(150);
      expect(resent).toEqual(["x.2", "x.3", "x.4", "x.2", "x.3", "x.4"]);
      expect(buffer.recovering).toBe(false);
      buffer.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps at most maxBytes, dropping the oldest", async () => {
    const resent: string[] = [];
    const buffer = new ResendBuffer({ retainMs: 1e9, delaysMs: [0], maxBytes: 25 }, (m) => resent.push(m.tag), () => 0);
    for (let n = 1; n <= 5; n++) buffer.record(message(n, 0));
    buffer.disconnected();
    buffer.reconnected();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(resent).toEqual(["x.4", "x.5"]);
    buffer.close();
  });
});
