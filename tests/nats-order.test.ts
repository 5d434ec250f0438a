/**
 * Per-sender order on a real NATS connection: what the sender puts on the wire
 * (Natsched-Seq, Natsched-Prev), and a subscriber putting messages that arrive out of order
 * (as a re-send after a reconnect can) back in order, or giving up on a gap after maxWaitMs.
 */
import { headers, type Msg as NatsMsg } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProtocolError } from "../machines/errors.js";
import { NatsTransport } from "../transport/nats.js";
import { PREV_HEADER, SEQ_HEADER } from "../transport/nats-inbound.js";
import { NatsServer } from "./support/nats-server.js";

let server: NatsServer;
const open: NatsTransport[] = [];

beforeAll(async () => {
  server = await NatsServer.start();
});

afterAll(async () => {
  await Promise.all(open.map((t) => t.close()));
  await server?.dispose();
});

async function connect(opts: Parameters<typeof NatsTransport.connect>[0] = {}): Promise<NatsTransport> {
  const t = await NatsTransport.connect({ servers: server.url, ...opts });
  open.push(t);
  return t;
}

async function until(done: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Publish `data` on `subject` as sender `sender`'s message n, following its message `prev`. */
function raw(t: NatsTransport, subject: string, sender: string, n: number, prev: number, data: unknown): void {
  const h = headers();
  h.set(SEQ_HEADER, `${sender}.${n}`);
  if (prev > 0) h.set(PREV_HEADER, String(prev));
  t.nc.publish(subject, JSON.stringify(data), { headers: h });
}

describe("per-sender order over NATS", () => {
  it("tags each message with its sender's previous message on the same subject", async () => {
    const a = await connect();
    const wire: { subject: string; seq: string; prev: string }[] = [];
    const watcher = await connect();
    watcher.nc.subscribe("o1.>", { callback: (_e, m: NatsMsg) => void wire.push({ subject: m.subject, seq: m.headers?.get(SEQ_HEADER) ?? "", prev: m.headers?.get(PREV_HEADER) ?? "" }) });
    await watcher.flush();
    for (const subject of ["o1.x", "o1.y", "o1.x", "o1.x", "o1.y"]) a.publish(subject, 1);
    await a.flush();
    await until(() => wire.length === 5);
    const n = wire.map((w) => Number(w.seq.slice(w.seq.lastIndexOf(".") + 1)));
    expect(wire.map((w) => w.prev)).toEqual(["", "", String(n[0]), String(n[2]), String(n[1])]);
  });

  it("holds messages that overtook a missing one and delivers them in order when it comes", async () => {
    const errors: unknown[] = [];
    const b = await connect({ onError: (e) => errors.push(e) });
    const got: number[] = [];
    b.subscribe("o2.s", (msg) => void got.push(msg.data as number));
    await b.flush();
    raw(b, "o2.s", "snd", 1, 0, 1);
    raw(b, "o2.s", "snd", 4, 2, 3);
    raw(b, "o2.s", "snd", 5, 4, 4);
    raw(b, "o2.s", "snd", 5, 4, 4);
    await b.flush();
    await until(() => got.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(got).toEqual([1]);
    raw(b, "o2.s", "snd", 2, 1, 2);
    await b.flush();
    await until(() => got.length === 4);
    expect(got).toEqual([1, 2, 3, 4]);
    expect(errors).toEqual([]);
  });

  it("delivers anyway after maxWaitMs when the missing message never comes, and reports the gap", async () => {
    const errors: unknown[] = [];
    const b = await connect({ onError: (e) => errors.push(e), order: { maxWaitMs: 200 } });
    const got: number[] = [];
    b.subscribe("o3.s", (msg) => void got.push(msg.data as number));
    await b.flush();
    raw(b, "o3.s", "snd", 1, 0, 1);
    raw(b, "o3.s", "snd", 3, 2, 3);
    await b.flush();
    await until(() => got.length === 2, 2000);
    expect(got).toEqual([1, 3]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(ProtocolError);
    expect((errors[0] as Error).message).toMatch(/waited 200 ms for missing message\(s\) snd\.2 on o3\.s/);
  });

  it("with order: false, delivers in arrival order", async () => {
    const b = await connect({ order: false });
    const got: number[] = [];
    b.subscribe("o4.s", (msg) => void got.push(msg.data as number));
    await b.flush();
    raw(b, "o4.s", "snd", 1, 0, 1);
    raw(b, "o4.s", "snd", 3, 2, 3);
    raw(b, "o4.s", "snd", 2, 1, 2);
    await b.flush();
    await until(() => got.length === 3);
    expect(got).toEqual([1, 3, 2]);
  });
});
