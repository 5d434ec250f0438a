import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClosedError, NatschedError, PayloadTooLargeError, ProtocolError, TimeoutError } from "../machines/errors.js";
import { NatsTransport } from "../transport/nats.js";
import type { Msg, Transport } from "../transport/types.js";
import { NatsServer } from "./support/nats-server.js";

let server: NatsServer;
const open: Transport[] = [];

beforeAll(async () => {
  server = await NatsServer.start({ config: "max_payload: 65536\n" });
});

afterAll(async () => {
  await Promise.all(open.map((t) => t.close()));
  await server?.dispose();
});

async function connect(opts: Parameters<typeof NatsTransport.connect>[0] = {}): Promise<NatsTransport> {
  const t = await NatsTransport.connect({ servers: server.url, reconnectTimeWait: 100, ...opts });
  open.push(t);
  return t;
}

/** Resolves once `n` messages have arrived (or fails after 2 s). */
function collect(n: number) {
  const got: Msg[] = [];
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`got ${got.length} of ${n}`)), 2000));
  return {
    got,
    handler: (msg: Msg) => {
      got.push(msg);
      if (got.length === n) done();
    },
    wait: () => Promise.race([all, timeout]),
  };
}

describe("NatsTransport", () => {
  it("delivers to exact, * and > subscribers across connections, with subject, data and reply", async () => {
    const a = await connect();
    const b = await connect();
    const exact = collect(1);
    const star = collect(2);
    const tail = collect(3);
    b.subscribe("t1.x", exact.handler);
    b.subscribe("t1.*", star.handler);
    b.subscribe("t1.>", tail.handler);
    await b.flush();
    a.publish("t1.x", { n: 1, s: "é", list: [null, true] }, "reply.here");
    a.publish("t1.y", 2);
    a.publish("t1.y.z", "three");
    await Promise.all([exact.wait(), star.wait(), tail.wait()]);
    expect(exact.got).toEqual([{ subject: "t1.x", data: { n: 1, s: "é", list: [null, true] }, reply: "reply.here" }]);
    expect(star.got.map((m) => m.data)).toEqual([{ n: 1, s: "é", list: [null, true] }, 2]);
    expect(tail.got.map((m) => m.subject)).toEqual(["t1.x", "t1.y", "t1.y.z"]);
  });

  it("carries a Uint8Array as raw bytes and undefined as an empty body", async () => {
    const a = await connect();
    const got = collect(2);
    a.subscribe("t2.bytes", got.handler);
    await a.flush();
    a.publish("t2.bytes", new Uint8Array([0, 1, 2, 255]));
    a.publish("t2.bytes", undefined);
    await got.wait();
    expect(got.got[0]!.data).toBeInstanceOf(Uint8Array);
    expect([...(got.got[0]!.data as Uint8Array)]).toEqual([0, 1, 2, 255]);
    expect(got.got[1]!.data).toBeUndefined();
  });

  it("gives each message of a queue group to one member", async () => {
    const a = await connect();
    const members = [await connect(), await connect(), await connect()];
    const counts = [0, 0, 0];
    const all = collect(30);
    members.forEach((m, i) =>
      m.subscribe(
        "t3.work",
        (msg) => {
          counts[i]!++;
          all.handler(msg);
        },
        { queue: "workers" },
      ),
    );
    await Promise.all(members.map((m) => m.flush()));
    for (let i = 0; i < 30; i++) a.publish("t3.work", i);
    await all.wait();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(counts.reduce((x, y) => x + y)).toBe(30);
    expect(all.got.map((m) => m.data).sort((x, y) => (x as number) - (y as number))).toEqual([...Array(30).keys()]);
  });

  it("answers a request with the first reply", async () => {
    const a = await connect();
    const b = await connect();
    b.subscribe("t4.add", (msg) => {
      const { x, y } = msg.data as { x: number; y: number };
      b.publish(msg.reply!, { sum: x + y });
    });
    await b.flush();
    await expect(a.request("t4.add", { x: 2, y: 3 })).resolves.toEqual({ sum: 5 });
    const many = await Promise.all([...Array(50).keys()].map((i) => a.request("t4.add", { x: i, y: 1 })));
    expect(many.map((r) => (r as { sum: number }).sum)).toEqual([...Array(50).keys()].map((i) => i + 1));
  });

  it("rejects a request nobody answers with TimeoutError, and one nobody listens to with PROTOCOL no responders", async () => {
    const a = await connect();
    const b = await connect();
    b.subscribe("t5.silent", () => undefined);
    await b.flush();
    const timedOut = await a.request("t5.silent", {}, { timeout: 100 }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(TimeoutError);
    const nobody = await a.request("t5.nobody", {}, { timeout: 2000 }).catch((e: unknown) => e);
    expect(nobody).toBeInstanceOf(ProtocolError);
    expect((nobody as NatschedError).code).toBe("PROTOCOL");
    expect((nobody as Error).message).toMatch(/no responders/);
  });

  it("sends a message above max_payload as fragments that arrive whole, requests and replies alike", async () => {
    const a = await connect();
    const b = await connect();
    expect(a.wire.maxPayload).toBe(65536);
    const text = "x".repeat(200_000);
    const bytes = new Uint8Array(150_000).map((_, i) => i % 251);
    const got = collect(2);
    b.subscribe("t6.big", got.handler);
    b.subscribe("t6.echo", (msg) => b.publish(msg.reply!, { echoed: msg.data }));
    await b.flush();
    a.publish("t6.big", { text });
    a.publish("t6.big", bytes);
    await got.wait();
    expect(got.got[0]!.data).toEqual({ text });
    expect(Buffer.compare(got.got[1]!.data as Uint8Array, bytes)).toBe(0);
    await expect(a.request("t6.echo", { text })).resolves.toEqual({ echoed: { text } });
  });

  it("refuses a payload above maxMessageBytes (0: above max_payload) with PayloadTooLargeError", async () => {
    const strict = await connect({ maxMessageBytes: 0 });
    expect(() => strict.publish("t6.big", new Uint8Array(70_000))).toThrow(PayloadTooLargeError);
    expect(() => strict.publish("t6.big", { s: "x".repeat(70_000) })).toThrow(PayloadTooLargeError);
    await expect(strict.request("t6.big", new Uint8Array(70_000))).rejects.toBeInstanceOf(PayloadTooLargeError);
    const capped = await connect({ maxMessageBytes: 100_000 });
    expect(() => capped.publish("t6.big", new Uint8Array(100_001))).toThrow(PayloadTooLargeError);
    expect(() => capped.publish("t6.big", new Uint8Array(99_000))).not.toThrow();
  });

  it("drops a message that is not JSON and tells onError, without calling the handler", async () => {
    const errors: unknown[] = [];
    const a = await connect({ onError: (e) => errors.push(e) });
    const got: Msg[] = [];
    a.subscribe("t7.in", (msg) => void got.push(msg));
    await a.flush();
    a.nc.publish("t7.in", "not json {");
    a.nc.publish("t7.in", '{"ok":true}');
    await a.flush();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(got.map((m) => m.data)).toEqual([{ ok: true }]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(ProtocolError);
  });

  it("reports a throwing handler and keeps delivering", async () => {
    const errors: unknown[] = [];
    const a = await connect({ onError: (e) => errors.push(e) });
    const got = collect(2);
    a.subscribe("t8.x", (msg) => {
      got.handler(msg);
      if (msg.data === 1) throw new Error("boom");
    });
    await a.flush();
    a.publish("t8.x", 1);
    a.publish("t8.x", 2);
    await got.wait();
    expect((errors[0] as Error).message).toBe("boom");
  });

  it("stops delivering after unsubscribe, and after close rejects everything with ClosedError", async () => {
    const a = await connect();
    const b = await connect();
    const got: Msg[] = [];
    const sub = b.subscribe("t9.x", (msg) => void got.push(msg));
    b.subscribe("t9.slow", () => undefined);
    await b.flush();
    sub.unsubscribe();
    await b.flush();
    a.publish("t9.x", 1);
    await a.flush();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(got).toEqual([]);
    const pending = a.request("t9.slow", {}, { timeout: 5000 }).catch((e: unknown) => e);
    await a.close();
    expect(await pending).toBeInstanceOf(ClosedError);
    expect(a.closed).toBe(true);
    expect(() => a.publish("t9.x", 1)).toThrow(ClosedError);
    expect(() => a.subscribe("t9.x", () => undefined)).toThrow(ClosedError);
    await expect(a.request("t9.x", 1)).rejects.toBeInstanceOf(ClosedError);
    await expect(a.close()).resolves.toBeUndefined();
  });

  it("delivers everything published across a server restart exactly once", async () => {
    const a = await connect({ resend: { delaysMs: [400, 1200] } });
    const b = await connect({ resend: { delaysMs: [400, 1200] } });
    const seen: number[] = [];
    b.subscribe("t10.seq", (msg) => void seen.push(msg.data as number));
    await b.flush();
    let n = 0;
    const timer = setInterval(() => a.publish("t10.seq", n++), 5);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await server.restart();
    await new Promise((resolve) => setTimeout(resolve, 300));
    clearInterval(timer);
    const deadline = Date.now() + 5000;
    while (seen.length < n && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort((x, y) => x - y)).toEqual([...Array(n).keys()]);
    // ...and in the order sent: a re-sent message does not land after newer ones.
    expect(seen).toEqual([...Array(n).keys()]);
  });
});
