import { afterEach, describe, expect, it, vi } from "vitest";
import { ClosedError, PayloadTooLargeError, ProtocolError, TimeoutError } from "../machines/errors.js";
import { MemoryBus, type Msg } from "../transport/index.js";

function collector() {
  const got: Msg[] = [];
  return { got, handler: (msg: Msg) => void got.push(msg) };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("MemoryBus matching", () => {
  it("delivers to exact, `*` and `>` subscribers whose pattern matches", async () => {
    const bus = new MemoryBus();
    const conn = bus.connect();
    const seen: string[] = [];
    for (const pattern of ["a.b", "a.*", "a.>", "*.b", ">", "a.b.*", "b.>"]) {
      conn.subscribe(pattern, (msg) => seen.push(`${pattern} <- ${msg.subject}`));
    }
    conn.publish("a.b", 1);
    conn.publish("a.b.c", 2);
    conn.publish("a", 3);
    await conn.flush();
    expect(seen.sort()).toEqual(
      [
        "a.b <- a.b",
        "a.* <- a.b",
        "a.> <- a.b",
        "*.b <- a.b",
        "> <- a.b",
        "a.> <- a.b.c",
        "> <- a.b.c",
        "a.b.* <- a.b.c",
        "> <- a",
      ].sort(),
    );
  });

  it("passes subject, data and reply to the handler", async () => {
    const bus = new MemoryBus();
    const conn = bus.connect();
    const { got, handler } = collector();
    conn.subscribe("x.y", handler);
    conn.publish("x.y", { n: 1 }, "reply.here");
    await conn.flush();
    expect(got).toEqual([{ subject: "x.y", data: { n: 1 }, reply: "reply.here" }]);
  });

  it.each(["", "a..b", ".a", "a.", "a b", "a.*", "a.>", "*"])("rejects publishing to %j", (subject) => {
    const conn = new MemoryBus().connect();
    expect(() => conn.publish(subject, 1)).toThrow(expect.objectContaining({ code: "BAD_OPTION" }));
  });

  it("rejects an invalid reply subject", () => {
    const conn = new MemoryBus().connect();
    expect(() => conn.publish("a", 1, "r.*")).toThrow(expect.objectContaining({ code: "BAD_OPTION", option: "reply" }));
  });

  it.each(["", "a.>.b", ">.a", "a..b", "a b"])("rejects subscribing to %j", (pattern) => {
    const conn = new MemoryBus().connect();
    expect(() => conn.subscribe(pattern, () => {})).toThrow(expect.objectContaining({ code: "BAD_OPTION" }));
  });

  it.each(["", "a b"])("rejects queue group name %j", (queue) => {
    const conn = new MemoryBus().connect();
    expect(() => conn.subscribe("a", () => {}, { queue })).toThrow(expect.objectContaining({ code: "BAD_OPTION", option: "queue" }));
  });
});

describe("MemoryBus delivery", () => {
  it("never delivers inside publish", async () => {
    const bus = new MemoryBus();
    const conn = bus.connect();
    const events: string[] = [];
    conn.subscribe("ping", (msg) => {
      events.push(`handle ${String(msg.data)}`);
      if (msg.data === 1) {
        conn.publish("ping", 2);
        events.push("published 2");
      }
    });
    conn.publish("ping", 1);
    events.push("published 1");
    await conn.flush();
    expect(events).toEqual(["published 1", "handle 1", "published 2", "handle 2"]);
  });

  it("keeps per publisher→subscriber order, with interleaved publishers", async () => {
    const bus = new MemoryBus();
    const p1 = bus.connect("p1");
    const p2 = bus.connect("p2");
    const s1 = bus.connect("s1");
    const s2 = bus.connect("s2");
    const gotExact: string[] = [];
    const gotWildcard: string[] = [];
    s1.subscribe("ord.x", (m) => gotExact.push(m.data as string));
    s2.subscribe("ord.>", (m) => gotWildcard.push(m.data as string));
    const expected: string[] = [];
    for (let i = 0; i < 10_000; i++) {
      const publisher = i % 3 === 0 ? p2 : p1;
      const tag = `${publisher.name}:${i}`;
      publisher.publish("ord.x", tag);
      expected.push(tag);
    }
    await p1.flush();
    expect(gotExact).toEqual(expected);
    expect(gotWildcard).toEqual(expected);
  });

  it("delivers each message to one member per queue group and to every plain subscriber", async () => {
    const bus = new MemoryBus();
    const counts = new Map<string, number[]>();
    const record = (who: string) => (msg: Msg) => {
      counts.set(who, [...(counts.get(who) ?? []), msg.data as number]);
    };
    for (const member of ["w1", "w2", "w3"]) bus.connect(member).subscribe("jobs", record(member), { queue: "workers" });
    bus.connect("a1").subscribe("jobs", record("a1"), { queue: "auditors" });
    bus.connect("a2").subscribe("jobs", record("a2"), { queue: "auditors" });
    bus.connect("plain").subscribe("jobs", record("plain"));
    const publisher = bus.connect("pub");
    for (let i = 0; i < 9; i++) publisher.publish("jobs", i);
    await publisher.flush();

    const workers = ["w1", "w2", "w3"].flatMap((w) => counts.get(w) ?? []);
    const auditors = ["a1", "a2"].flatMap((a) => counts.get(a) ?? []);
    expect(workers.sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(auditors.sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(counts.get("w1")).toEqual([0, 3, 6]);
    expect(counts.get("w2")).toEqual([1, 4, 7]);
    expect(counts.get("w3")).toEqual([2, 5, 8]);
    expect(counts.get("a1")).toEqual([0, 2, 4, 6, 8]);
    expect(counts.get("a2")).toEqual([1, 3, 5, 7]);
    expect(counts.get("plain")).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(bus.stats()).toEqual({ published: 9, delivered: 27, dropped: 0 });
  });

  it("shares a queue group's load across members subscribed on different patterns", async () => {
    const bus = new MemoryBus();
    const byMember: Record<string, number> = { exact: 0, wildcard: 0 };
    bus.connect().subscribe("q.a", () => byMember.exact++, { queue: "g" });
    bus.connect().subscribe("q.*", () => byMember.wildcard++, { queue: "g" });
    const pub = bus.connect();
    for (let i = 0; i < 10; i++) pub.publish("q.a", i);
    await pub.flush();
    expect(byMember).toEqual({ exact: 5, wildcard: 5 });
  });

  it("skips subscriptions that went away before delivery and not the ones that stay", async () => {
    const bus = new MemoryBus();
    const conn = bus.connect();
    const gone = collector();
    const stays = collector();
    const sub = conn.subscribe("s", gone.handler);
    conn.subscribe("s", stays.handler);
    conn.publish("s", 1);
    sub.unsubscribe();
    sub.unsubscribe();
    conn.publish("s", 2);
    await conn.flush();
    expect(gone.got).toEqual([]);
    expect(stays.got.map((m) => m.data)).toEqual([1, 2]);
  });

  it("does not deliver a message to a subscription made after it was published", async () => {
    const conn = new MemoryBus().connect();
    const late = collector();
    conn.subscribe("s", () => {});
    conn.publish("s", 1);
    conn.subscribe("s", late.handler);
    await conn.flush();
    expect(late.got).toEqual([]);
  });

  it("keeps timers running while handlers publish to each other without end", async () => {
    const bus = new MemoryBus();
    const a = bus.connect();
    const b = bus.connect();
    let stop = false;
    let volleys = 0;
    a.subscribe("ping", () => void (stop || (volleys++, a.publish("pong", null))));
    b.subscribe("pong", () => void (stop || b.publish("ping", null)));
    a.publish("ping", null);
    // If delivery never yielded, none of these timers would fire and the test would hang.
    let timersFired = 0;
    while (volleys <= 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      timersFired++;
    }
    stop = true;
    await a.flush();
    expect(timersFired).toBeGreaterThan(0);
    expect(volleys).toBeGreaterThan(10_000);
  });

  it("keeps timers running while handlers publish to each other from microtasks, as actors' outboxes do", async () => {
    const bus = new MemoryBus();
    const a = bus.connect();
    const b = bus.connect();
    const LIMIT = 200_000;
    let volleys = 0;
    // Each publish happens in a microtask after the handler, so every drain ends with an
    // empty queue and the next one is started by a microtask again.
    a.subscribe("ping", () => queueMicrotask(() => void (volleys < LIMIT && (volleys++, a.publish("pong", null)))));
    b.subscribe("pong", () => queueMicrotask(() => void (volleys < LIMIT && b.publish("ping", null))));
    let volleysAtFirstTick: number | undefined;
    const ticker = setInterval(() => (volleysAtFirstTick ??= volleys), 1);
    a.publish("ping", null);
    while (volleysAtFirstTick === undefined) await new Promise((resolve) => setTimeout(resolve, 1));
    clearInterval(ticker);
    volleys = LIMIT;
    await a.flush();
    // The timer fired while the volleys were still going, not only after they ended.
    expect(volleysAtFirstTick).toBeLessThan(LIMIT);
  });

  it("counts published, delivered and dropped messages", async () => {
    const bus = new MemoryBus();
    const conn = bus.connect();
    conn.subscribe("one", () => {});
    conn.subscribe("two", () => {});
    conn.subscribe("two", () => {});
    const leaving = conn.subscribe("leaving", () => {});
    conn.publish("one", 1);
    conn.publish("two", 2);
    conn.publish("nobody", 3);
    conn.publish("leaving", 4);
    leaving.unsubscribe();
    await conn.flush();
    expect(bus.stats()).toEqual({ published: 4, delivered: 3, dropped: 2 });
  });
});

describe("MemoryBus handler errors", () => {
  it("reports a throwing handler to onError and still delivers to the others", async () => {
    const errors: [unknown, Msg][] = [];
    const bus = new MemoryBus({ onError: (error, msg) => errors.push([error, msg]) });
    const conn = bus.connect();
    const boom = new Error("boom");
    const ok = collector();
    conn.subscribe("e", () => {
      throw boom;
    });
    conn.subscribe("e", ok.handler);
    conn.publish("e", 1);
    conn.publish("e", 2);
    await conn.flush();
    expect(ok.got.map((m) => m.data)).toEqual([1, 2]);
    expect(errors).toEqual([
      [boom, { subject: "e", data: 1, reply: undefined }],
      [boom, { subject: "e", data: 2, reply: undefined }],
    ]);
  });

  it("reports a rejected promise from an async handler", async () => {
    const errors: unknown[] = [];
    const bus = new MemoryBus({ onError: (error) => errors.push(error) });
    const conn = bus.connect();
    const failure = new Error("later");
    conn.subscribe("e", async () => {
      throw failure;
    });
    conn.publish("e", 1);
    await conn.flush();
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors).toEqual([failure]);
  });

  it("defaults to console.error", async () => {
    const spy = vi.spyOn(console, "error").mockImplementation(() => {});
    const conn = new MemoryBus().connect();
    const boom = new Error("boom");
    conn.subscribe("e", () => {
      throw boom;
    });
    conn.publish("e", 1);
    await conn.flush();
    expect(spy).toHaveBeenCalledTimes(1);
    expect(spy).toHaveBeenCalledWith("natsched: handler for e failed:", boom);
  });

  it("survives an onError hook that throws", async () => {
    const spy = vi.spyOn(console, "error").mockImplementation(() => {});
    const bus = new MemoryBus({
      onError: () => {
        throw new Error("hook");
      },
    });
    const conn = bus.connect();
    const ok = collector();
    conn.subscribe("e", () => {
      throw new Error("boom");
    });
    conn.subscribe("e", ok.handler);
    conn.publish("e", 1);
    await conn.flush();
    expect(ok.got).toHaveLength(1);
    expect(spy).toHaveBeenCalledTimes(1);
  });
});

describe("MemoryBus request/reply", () => {
  it("resolves with the first reply and replies to an _INBOX subject", async () => {
    const bus = new MemoryBus();
    const server = bus.connect("server");
    const client = bus.connect("client");
    const replySubjects: string[] = [];
    server.subscribe("math.double", (msg) => {
      replySubjects.push(msg.reply!);
      server.publish(msg.reply!, (msg.data as number) * 2);
    });
    server.subscribe("math.double", (msg) => server.publish(msg.reply!, "second"));
    await expect(client.request("math.double", 21)).resolves.toBe(42);
    expect(replySubjects).toHaveLength(1);
    expect(replySubjects[0]).toMatch(/^_INBOX\.[0-9a-z]+$/);
    await client.flush();
    // The second reply finds the inbox already gone.
    expect(bus.stats()).toEqual({ published: 3, delivered: 3, dropped: 1 });
  });

  it("uses a fresh inbox per request, so concurrent requests get their own answers", async () => {
    const bus = new MemoryBus();
    const server = bus.connect();
    server.subscribe("echo", (msg) => server.publish(msg.reply!, msg.data));
    const client = bus.connect();
    const answers = await Promise.all([1, 2, 3].map((n) => client.request("echo", n)));
    expect(answers).toEqual([1, 2, 3]);
  });

  it("rejects with TimeoutError when nobody answers in time", async () => {
    const bus = new MemoryBus();
    bus.connect().subscribe("slow", () => {});
    const client = bus.connect();
    const started = Date.now();
    const error = await client.request("slow", null, { timeout: 30 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ code: "TIMEOUT", message: "timed out: request on slow after 30 ms" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
  });

  it("rejects at once with a PROTOCOL 'no responders' error when nothing matches", async () => {
    const client = new MemoryBus().connect();
    const error = await client.request("nobody.home", null, { timeout: 60_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ code: "PROTOCOL", message: "no responders for request on nobody.home" });
  });

  it("rejects an invalid timeout", async () => {
    const client = new MemoryBus().connect();
    await expect(client.request("a", null, { timeout: 0 })).rejects.toMatchObject({ code: "BAD_OPTION", option: "timeout" });
  });

  it("rejects instead of throwing when the request cannot be published, and leaves no inbox behind", async () => {
    const bus = new MemoryBus({ maxPayload: 10 });
    bus.connect().subscribe("big", () => {});
    const client = bus.connect();
    await expect(client.request("big", "x".repeat(20))).rejects.toBeInstanceOf(PayloadTooLargeError);
    await expect(client.request("a..b", null)).rejects.toMatchObject({ code: "BAD_OPTION" });
    client.publish("_INBOX.1", null);
    client.publish("_INBOX.2", null);
    await client.flush();
    expect(bus.stats()).toEqual({ published: 2, delivered: 0, dropped: 2 });
  });
});

describe("MemoryTransport close", () => {
  it("rejects pending requests, drops subscriptions and refuses further use", async () => {
    const bus = new MemoryBus();
    const server = bus.connect("server");
    server.subscribe("never", () => {});
    const conn = bus.connect("c1");
    const received = collector();
    conn.subscribe("news", received.handler);
    const pending = conn.request("never", null);
    const other = bus.connect("other");
    other.publish("news", "queued before close");

    await conn.close();

    expect(conn.closed).toBe(true);
    await expect(pending).rejects.toBeInstanceOf(ClosedError);
    await expect(pending).rejects.toMatchObject({ code: "CLOSED", message: "transport c1 is closed" });
    other.publish("news", "after close");
    await other.flush();
    expect(received.got).toEqual([]);
    expect(() => conn.publish("news", 1)).toThrow(ClosedError);
    expect(() => conn.subscribe("news", () => {})).toThrow(ClosedError);
    await expect(conn.request("never", null)).rejects.toBeInstanceOf(ClosedError);
    await expect(conn.flush()).rejects.toBeInstanceOf(ClosedError);
    await expect(conn.close()).resolves.toBeUndefined();
  });

  it("still delivers what the connection published before closing", async () => {
    const bus = new MemoryBus();
    const listener = collector();
    bus.connect().subscribe("last.words", listener.handler);
    const conn = bus.connect();
    conn.publish("last.words", "bye");
    await conn.close();
    await bus.connect().flush();
    expect(listener.got.map((m) => m.data)).toEqual(["bye"]);
  });

  it("leaves other connections working", async () => {
    const bus = new MemoryBus();
    const a = bus.connect();
    const b = bus.connect();
    const got = collector();
    b.subscribe("x", got.handler);
    a.subscribe("x", () => {});
    await a.close();
    b.publish("x", 1);
    await b.flush();
    expect(got.got.map((m) => m.data)).toEqual([1]);
    expect(b.closed).toBe(false);
  });
});

describe("MemoryTransport flush", () => {
  it("resolves at once when nothing is pending", async () => {
    await expect(new MemoryBus().connect().flush()).resolves.toBeUndefined();
  });

  it("resolves after every message published so far reached its handlers, across batches", async () => {
    const bus = new MemoryBus();
    const conn = bus.connect();
    let count = 0;
    conn.subscribe("many", () => count++);
    for (let i = 0; i < 20_000; i++) conn.publish("many", i);
    expect(count).toBe(0);
    await conn.flush();
    expect(count).toBe(20_000);
  });

  it("covers messages published by other connections too", async () => {
    const bus = new MemoryBus();
    const got = collector();
    bus.connect().subscribe("x", got.handler);
    bus.connect().publish("x", 1);
    await bus.connect().flush();
    expect(got.got).toHaveLength(1);
  });
});

describe("MemoryBus maxPayload", () => {
  it("accepts a payload at the limit and rejects one byte more, counting UTF-8 bytes", async () => {
    const bus = new MemoryBus({ maxPayload: 12 });
    const conn = bus.connect();
    const got = collector();
    conn.subscribe("p", got.handler);
    conn.publish("p", "x".repeat(10)); // JSON "xxxxxxxxxx" = 12 bytes
    expect(() => conn.publish("p", "x".repeat(11))).toThrow(PayloadTooLargeError);
    expect(() => conn.publish("p", "é".repeat(6))).toThrow(
      expect.objectContaining({ code: "PAYLOAD_TOO_LARGE", size: 14, limit: 12, message: "payload on p of 14 bytes exceeds the limit of 12 bytes" }),
    );
    conn.publish("p", "é".repeat(5)); // 2 quotes + 10 bytes
    await conn.flush();
    expect(got.got.map((m) => m.data)).toEqual(["x".repeat(10), "é".repeat(5)]);
    expect(bus.stats().published).toBe(2);
  });

  it("rejects payloads that cannot be JSON-encoded when a limit is set", () => {
    const conn = new MemoryBus({ maxPayload: 100 }).connect();
    expect(() => conn.publish("p", { n: 1n })).toThrow(expect.objectContaining({ code: "PROTOCOL" }));
  });

  it.each([0, -1, 1.5, Number.NaN])("rejects maxPayload %j", (maxPayload) => {
    expect(() => new MemoryBus({ maxPayload })).toThrow(expect.objectContaining({ code: "BAD_OPTION", option: "maxPayload" }));
  });
});

describe("MemoryBus copy option", () => {
  it("gives receivers a structured clone, isolated from later sender mutation", async () => {
    const bus = new MemoryBus({ copy: true });
    const conn = bus.connect();
    const first = collector();
    const second = collector();
    conn.subscribe("c", first.handler);
    conn.subscribe("c", second.handler);
    const payload = { list: [1, 2], nested: { at: new Date(0) } };
    conn.publish("c", payload);
    payload.list.push(3);
    await conn.flush();
    expect(first.got[0].data).toEqual({ list: [1, 2], nested: { at: new Date(0) } });
    expect(first.got[0].data).not.toBe(payload);
    // One copy per publish, shared by that message's subscribers.
    expect(second.got[0].data).toBe(first.got[0].data);
  });

  it("passes the same reference when off", async () => {
    const conn = new MemoryBus().connect();
    const got = collector();
    conn.subscribe("c", got.handler);
    const payload = { a: 1 };
    conn.publish("c", payload);
    await conn.flush();
    expect(got.got[0].data).toBe(payload);
  });

  it("rejects payloads that cannot be cloned", () => {
    const conn = new MemoryBus({ copy: true }).connect();
    expect(() => conn.publish("c", { f: () => 1 })).toThrow(expect.objectContaining({ code: "PROTOCOL" }));
  });
});
