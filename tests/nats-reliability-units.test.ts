/** The pieces behind fragments and re-sends, without a server. */
import { describe, expect, it, vi } from "vitest";
import { DedupFilter } from "../transport/nats-dedup.js";
import { parseFragmentHeader, Reassembler, splitFragments } from "../transport/nats-fragments.js";
import { headers, type Msg as NatsMsg } from "@nats-io/transport-node";
import { Inbound, PREV_HEADER, SEQ_HEADER, type WholeMessage } from "../transport/nats-inbound.js";
import { SenderOrder } from "../transport/nats-order.js";
import { ResendBuffer, type SentMessage } from "../transport/nats-resend.js";

function message(n: number, at: number, size = 10): SentMessage {
  return { subject: "s", reply: undefined, bytes: new Uint8Array(size), binary: false, tag: `x.${n}`, prev: n - 1, fragment: "", at };
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

  it("refuses at once a message of more fragments than it may have bytes, sizing nothing by the header", () => {
    const drops: { why: string; reply: string | undefined }[] = [];
    const r = new Reassembler(500, 60_000, (why, reply) => drops.push({ why, reply }));
    expect(r.add({ id: "huge", index: 0, count: 2 ** 40 }, new Uint8Array(10), "_INBOX.1", "s")).toBeUndefined();
    expect(drops).toEqual([{ why: expect.stringMatching(/huge of 1099511627776 fragments exceeds 500 bytes/), reply: "_INBOX.1" }]);
    // Its later fragments are ignored, not started over; one of another request is answered.
    expect(r.add({ id: "huge", index: 1, count: 2 ** 40 }, new Uint8Array(10), "_INBOX.1")).toBeUndefined();
    expect(drops).toHaveLength(1);
    expect(r.add({ id: "huge", index: 0, count: 2 ** 40 }, new Uint8Array(10), "_INBOX.2")).toBeUndefined();
    expect(drops[1]).toEqual({ why: "fragment of message huge, which was dropped", reply: "_INBOX.2" });
  });

  it("holds at most its limit over every message being put together", () => {
    const drops: string[] = [];
    const r = new Reassembler(500, 60_000, (why) => drops.push(why));
    for (let i = 0; i < 3; i++) r.add({ id: `m${i}`, index: 0, count: 2 }, new Uint8Array(200), undefined, "s");
    expect(drops).toEqual([expect.stringMatching(/messages being put together on s exceed 500 bytes/)]);
    // What is dropped frees its share: a complete message still goes through.
    const whole = r.add({ id: "m0", index: 1, count: 2 }, new Uint8Array(50));
    expect(whole?.length).toBe(250);
    r.clear();
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

describe("SenderOrder", () => {
  function order(opts: { maxWaitMs?: number; maxHeld?: number } = {}) {
    const delivered: string[] = [];
    const gaps: string[] = [];
    const o = new SenderOrder<string>(opts, (item) => delivered.push(item), (why) => gaps.push(why));
    const offer = (sender: string, subject: string, n: number, prev: number) => o.offer(sender, subject, n, prev, `${sender}${n}`, (item) => item);
    return { o, delivered, gaps, offer };
  }

  it("holds a message that overtook a missing earlier one until the gap fills, then delivers in order", () => {
    const { o, delivered, gaps, offer } = order();
    offer("a", "s", 1, 0);
    offer("a", "s", 4, 3);
    offer("a", "s", 7, 4);
    expect(delivered).toEqual(["a1"]);
    expect(o.holding).toBe(2);
    offer("a", "s", 3, 1);
    expect(delivered).toEqual(["a1", "a3", "a4", "a7"]);
    expect(o.holding).toBe(0);
    expect(gaps).toEqual([]);
    o.close();
  });

  it("orders each (sender, subject) on its own: one stream's gap does not hold another's", () => {
    const { o, delivered, offer } = order();
    offer("a", "s", 1, 0);
    offer("a", "t", 2, 0);
    offer("b", "s", 1, 0);
    offer("a", "s", 5, 3);
    offer("a", "t", 4, 2);
    offer("b", "s", 2, 1);
    expect(delivered).toEqual(["a1", "a2", "b1", "a4", "b2"]);
    offer("a", "s", 3, 1);
    expect(delivered).toEqual(["a1", "a2", "b1", "a4", "b2", "a3", "a5"]);
    o.close();
  });

  it("takes the first message of a sender as its start, and delivers a message with no predecessor at once", () => {
    const { o, delivered, gaps, offer } = order();
    offer("a", "s", 40, 37);
    offer("a", "s", 41, 40);
    offer("b", "s", 9, 0);
    expect(delivered).toEqual(["a40", "a41", "b9"]);
    expect(gaps).toEqual([]);
    o.close();
  });

  it("delivers a late message (after later ones) rather than losing it, and reports it", () => {
    const { o, delivered, gaps, offer } = order();
    offer("a", "s", 2, 1);
    offer("a", "s", 1, 0);
    expect(delivered).toEqual(["a2", "a1"]);
    expect(gaps).toEqual([expect.stringMatching(/a\.1 on s arrived after later ones/)]);
    o.close();
  });

  it("gives up on a gap after maxWaitMs: delivers what waited, in order, and reports the missing message", () => {
    vi.useFakeTimers();
    try {
      const { o, delivered, gaps, offer } = order({ maxWaitMs: 1000 });
      offer("a", "s", 1, 0);
      offer("a", "s", 6, 5);
      offer("a", "s", 3, 2);
      offer("a", "s", 4, 3);
      vi.advanceTimersByTime(999);
      expect(delivered).toEqual(["a1"]);
      vi.advanceTimersByTime(1);
      expect(delivered).toEqual(["a1", "a3", "a4", "a6"]);
      expect(gaps).toHaveLength(1);
      expect(gaps[0]).toMatch(/waited 1000 ms for missing message\(s\) a\.2, a\.5 on s; delivered 3 later/);
      offer("a", "s", 7, 6);
      expect(delivered.at(-1)).toBe("a7");
      o.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("waits maxWaitMs again after a gap fills while another remains", () => {
    vi.useFakeTimers();
    try {
      const { o, delivered, offer } = order({ maxWaitMs: 1000 });
      offer("a", "s", 1, 0);
      offer("a", "s", 3, 2);
      offer("a", "s", 5, 4);
      vi.advanceTimersByTime(800);
      offer("a", "s", 2, 1);
      expect(delivered).toEqual(["a1", "a2", "a3"]);
      vi.advanceTimersByTime(800);
      expect(delivered).toEqual(["a1", "a2", "a3"]);
      offer("a", "s", 4, 3);
      expect(delivered).toEqual(["a1", "a2", "a3", "a4", "a5"]);
      o.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("delivers anyway once more than maxHeld messages wait", () => {
    const { o, delivered, gaps, offer } = order({ maxHeld: 3 });
    offer("a", "s", 1, 0);
    for (let n = 3; n <= 6; n++) offer("a", "s", n, n - 1);
    expect(delivered).toEqual(["a1", "a3", "a4", "a5", "a6"]);
    expect(gaps).toEqual([expect.stringMatching(/more than 3 messages waited for missing message\(s\) a\.2/)]);
    expect(o.holding).toBe(0);
    o.close();
  });

  it("keeps a copy of what it holds, and drops held messages on close", () => {
    const delivered: Uint8Array[] = [];
    const o = new SenderOrder<Uint8Array>({}, (item) => delivered.push(item), () => undefined);
    const buffer = new Uint8Array([1, 2, 3]);
    o.offer("a", "s", 1, 0, buffer, (b) => Buffer.from(b));
    o.offer("a", "s", 3, 2, buffer, (b) => Buffer.from(b));
    buffer[0] = 9;
    o.offer("a", "s", 2, 1, buffer, (b) => Buffer.from(b));
    expect(delivered.map((b) => [...b])).toEqual([[9, 2, 3], [9, 2, 3], [1, 2, 3]]);
    o.offer("a", "s", 5, 4, buffer, (b) => b);
    o.close();
    expect(o.holding).toBe(0);
    expect(delivered).toHaveLength(3);
  });
});

describe("Inbound", () => {
  function natsMsg(subject: string, body: string, h: Record<string, string>): NatsMsg {
    const hdrs = headers();
    for (const [k, v] of Object.entries(h)) hdrs.set(k, v);
    return { subject, reply: "", data: new TextEncoder().encode(body), headers: hdrs } as unknown as NatsMsg;
  }

  it("drops copies, restores per-sender order, and reassembles fragments that were re-sent out of order", () => {
    const got: WholeMessage[] = [];
    const drops: string[] = [];
    const inbound = new Inbound({ dedup: true, order: {}, maxMessageBytes: 1000, fragmentTimeoutMs: 1000, onDrop: (why) => drops.push(why) }, (w) => got.push(w));
    const text = (w: WholeMessage) => new TextDecoder().decode(w.body);
    inbound.push(natsMsg("s", "m1", { [SEQ_HEADER]: "a.1" }));
    inbound.push(natsMsg("s", "m4", { [SEQ_HEADER]: "a.4", [PREV_HEADER]: "3" }));
    inbound.push(natsMsg("s", "lo", { [SEQ_HEADER]: "a.3", [PREV_HEADER]: "2", "Natsched-Frag": "f/1/2" }));
    expect(got.map(text)).toEqual(["m1"]);
    inbound.push(natsMsg("s", "m1", { [SEQ_HEADER]: "a.1" }));
    inbound.push(natsMsg("s", "hel", { [SEQ_HEADER]: "a.2", [PREV_HEADER]: "1", "Natsched-Frag": "f/0/2" }));
    inbound.push(natsMsg("s", "hel", { [SEQ_HEADER]: "a.2", [PREV_HEADER]: "1", "Natsched-Frag": "f/0/2" }));
    expect(got.map(text)).toEqual(["m1", "hello", "m4"]);
    expect(drops).toEqual([]);
    inbound.close();
  });

  it("hands a request it gives up on (a bad fragment header, fragments too large) to its handler with the problem, on its own subject", () => {
    const got: WholeMessage[] = [];
    const drops: string[] = [];
    const inbound = new Inbound({ dedup: false, order: false, maxMessageBytes: 8, fragmentTimeoutMs: 1000, onDrop: (why) => drops.push(why) }, (w) => got.push(w));
    const request = (subject: string, body: string, h: Record<string, string>) => ({ ...natsMsg(subject, body, h), reply: `_INBOX.${subject}` }) as unknown as NatsMsg;
    inbound.push(request("q.bad", "x", { "Natsched-Frag": "nonsense" }));
    inbound.push(request("q.ok", "ab", { "Natsched-Frag": "f/0/2" }));
    inbound.push(request("q.ok", "cd", { "Natsched-Frag": "f/1/2" }));
    inbound.push(request("q.big", "12345", { "Natsched-Frag": "g/0/2" }));
    inbound.push(request("q.big", "67890", { "Natsched-Frag": "g/1/2" }));
    // A later fragment of the message given up does not start it over.
    inbound.push(request("q.big", "12345", { "Natsched-Frag": "g/0/2" }));
    // A published message (no reply subject) is only reported.
    inbound.push(natsMsg("p.bad", "x", { "Natsched-Frag": "nonsense" }));
    expect(got.map((w) => [w.subject, w.reply, w.body.length, w.problem])).toEqual([
      ["q.bad", "_INBOX.q.bad", 0, expect.stringMatching(/bad Natsched-Frag header "nonsense"/)],
      ["q.ok", "_INBOX.q.ok", 4, undefined],
      ["q.big", "_INBOX.q.big", 0, "message g exceeds 8 bytes"],
    ]);
    expect(drops).toHaveLength(3);
    inbound.close();
  });
});
