/**
 * natsched writes and reads its NATS headers itself (transport/nats-headers.ts), without
 * nats.js's MsgHdrs: the bytes must be the ones nats.js writes, what is read must be what
 * `msg.headers.get(...)` says, and the fast path must really be taken on nats.js's messages.
 */
import { headers, type Msg as NatsMsg } from "@nats-io/transport-node";
import { MsgHdrsImpl } from "@nats-io/nats-core/internal";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsTransport } from "../transport/nats.js";
import { encodeHeaders, parseHeaderBlock, PREV_HEADER, readHeaders, SEQ_HEADER } from "../transport/nats-headers.js";
import { NatsServer } from "./support/nats-server.js";

const ENC = "Natsched-Encoding";
const FRAG = "Natsched-Frag";

/** nats.js's own reading of natsched's headers. */
function viaNatsJs(h: { get(k: string): string; code: number } | undefined) {
  if (h === undefined) return undefined;
  return { seq: h.get(SEQ_HEADER), prev: h.get(PREV_HEADER), binary: h.get(ENC) === "bytes", fragment: h.get(FRAG), status: h.code };
}

/** A MsgHdrs's encoding (not in the public type, but what nats-core's publish writes). */
function bytesOf(h: unknown): string {
  return Buffer.from((h as { encode(): Uint8Array }).encode()).toString();
}

describe("encodeHeaders", () => {
  it("writes the bytes nats.js's MsgHdrs encodes", () => {
    const cases: [boolean, string, number, string][] = [
      [false, "Kx1b2c3d4e5f6g7h8i9j0k.1", 0, ""],
      [false, "Kx1b2c3d4e5f6g7h8i9j0k.42", 41, ""],
      [true, "abc.7", 3, ""],
      [true, "", 0, ""],
      [false, "abc.9", 8, "abc.1/0/3"],
      [true, "abc.10", 9, "abc.2/2/3"],
    ];
    for (const [binary, tag, prev, fragment] of cases) {
      const h = headers();
      if (binary) h.set(ENC, "bytes");
      if (tag !== "") h.set(SEQ_HEADER, tag);
      if (prev !== 0) h.set(PREV_HEADER, String(prev));
      if (fragment !== "") h.set(FRAG, fragment);
      expect(bytesOf(encodeHeaders(binary, tag, prev, fragment))).toBe(bytesOf(h));
    }
  });
});

describe("parseHeaderBlock", () => {
  it("reads what MsgHdrsImpl.decode + get read: exact keys, first value, trimmed", () => {
    const blocks = [
      "NATS/1.0\r\nNatsched-Seq: a.1\r\n\r\n",
      "NATS/1.0\r\nNatsched-Seq: a.2\r\nNatsched-Prev: 1\r\n\r\n",
      "NATS/1.0\r\nNatsched-Encoding: bytes\r\nNatsched-Seq: a.3\r\nNatsched-Prev: 2\r\nNatsched-Frag: a.1/0/2\r\n\r\n",
      "NATS/1.0 503\r\n\r\n",
      "NATS/1.0 503 No Responders\r\nNatsched-Seq: x.5\r\n\r\n",
      "NATS/1.0\r\nnatsched-seq: lower.1\r\nNATSCHED-PREV: 4\r\n\r\n",
      "NATS/1.0\r\nNatsched-Seq:   spaced.9  \r\nNatsched-Seq: second.10\r\nNatsched-Prev:\r\n\r\n",
      "NATS/1.0\r\nOther: v\r\nNatsched-Encoding: json\r\nBroken line\r\nNatsched-Frag: f/1/2\r\n\r\n",
      "NATS/1.0\r\nX-Natsched-Seq: no.1\r\n\r\n",
      "NATS/1.0\r\n\r\n",
      "NATS/1.0 404 No Messages\r\n\r\n",
      "NATS/1.0  408  Request Timeout\r\nNatsched-Seq: t.1\r\n\r\n",
      "NATS/1.0 abc\r\n\r\n",
    ];
    for (const block of blocks) {
      const ours = parseHeaderBlock(block);
      expect(ours, block).toEqual(viaNatsJs(MsgHdrsImpl.decode(new TextEncoder().encode(block))));
    }
  });
});

describe("readHeaders on a real connection", () => {
  let server: NatsServer;
  let t: NatsTransport;

  beforeAll(async () => {
    server = await NatsServer.start();
    t = await NatsTransport.connect({ servers: server.url });
  });

  afterAll(async () => {
    await t?.close();
    await server?.dispose();
  });

  it("reads natsched's and foreign header blocks as nats.js does, from the raw bytes", async () => {
    const got: NatsMsg[] = [];
    const sub = t.nc.subscribe("hdr.>", { callback: (_e, m) => void got.push(m) });
    const sent: { subject: string; h?: ReturnType<typeof headers> }[] = [];
    const foreign = headers();
    foreign.set("Other", "välue ünïcode");
    foreign.set(SEQ_HEADER, "f.3");
    const ours = headers();
    ours.set(SEQ_HEADER, "o.2");
    ours.set(PREV_HEADER, "1");
    ours.set(ENC, "bytes");
    sent.push({ subject: "hdr.none" }, { subject: "hdr.foreign", h: foreign }, { subject: "hdr.ours", h: ours }, { subject: "hdr.empty", h: headers() });
    for (const s of sent) t.nc.publish(s.subject, "{}", s.h ? { headers: s.h } : {});
    t.nc.publish("hdr.encoded", "{}", { headers: encodeHeaders(false, "e.5", 4, "e.1/0/1") });
    await t.nc.flush();
    await new Promise((resolve) => setTimeout(resolve, 50));
    sub.unsubscribe();
    expect(got.map((m) => m.subject)).toEqual(["hdr.none", "hdr.foreign", "hdr.ours", "hdr.empty", "hdr.encoded"]);
    // The fast path reads nats-core's internals: noticed here if a nats.js upgrade renames them.
    const internals = got[2] as unknown as { _rdata?: unknown; _msg?: { hdr?: unknown } };
    expect(internals._rdata).toBeInstanceOf(Uint8Array);
    expect(typeof internals._msg?.hdr).toBe("number");
    for (const m of got) expect(readHeaders(m), m.subject).toEqual(viaNatsJs(m.headers));
    expect(readHeaders(got[4]!)).toEqual({ seq: "e.5", prev: "4", binary: false, fragment: "e.1/0/1", status: 0 });
    expect(new TextDecoder().decode(got[2]!.data)).toBe("{}");
  });

  it("reads a no-responders status as nats.js does", async () => {
    let status: number | undefined;
    let viaJs: number | undefined;
    const inbox = `_INBOX.hdrtest`;
    const sub = t.nc.subscribe(inbox, {
      callback: (_e, m) => {
        status = readHeaders(m)?.status;
        viaJs = m.headers?.code;
      },
    });
    t.nc.publish("nobody.listens.here", "{}", { reply: inbox });
    await t.nc.flush();
    await new Promise((resolve) => setTimeout(resolve, 100));
    sub.unsubscribe();
    expect(viaJs).toBe(503);
    expect(status).toBe(503);
  });
});
