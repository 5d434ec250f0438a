/** The data plane across a wire: values serialized with v8, blobs above max_payload pulled in chunks. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchData, putData } from "../actors/data-plane/fetch.js";
import { DataServer } from "../actors/data-plane/server.js";
import { ProtocolError } from "../machines/errors.js";
import { MemoryBus } from "../transport/memory.js";
import { NatsTransport } from "../transport/nats.js";
import type { Transport } from "../transport/types.js";
import { NatsServer } from "./support/nats-server.js";

let server: NatsServer;
let holder: NatsTransport;
let requester: NatsTransport;
const store = new Map<string, unknown>();
let dataServer: DataServer;

function serve(transport: Transport, subject: string, values: Map<string, unknown>): DataServer {
  const ds = new DataServer({
    transport,
    transferTimeout: 5000,
    lookup: (key) => (values.has(key) ? { value: values.get(key), nbytes: 100 } : undefined),
    accept: (entries) => {
      for (const [k, v] of entries) values.set(k, v);
      return Object.fromEntries(entries.map(([k]) => [k, 1]));
    },
  });
  transport.subscribe(subject, (msg) => ds.handle(msg));
  return ds;
}

beforeAll(async () => {
  server = await NatsServer.start({ config: "max_payload: 65536\n" });
  holder = await NatsTransport.connect({ servers: server.url });
  requester = await NatsTransport.connect({ servers: server.url });
  dataServer = serve(holder, "natsched.d.data.h", store);
  await holder.flush();
});

afterAll(async () => {
  dataServer?.close();
  await holder?.close();
  await requester?.close();
  await server?.dispose();
});

describe("data plane over NATS", () => {
  it("keeps typed arrays, Maps, Sets, Dates, BigInts and undefined", async () => {
    const value = {
      f64: new Float64Array([1.5, -2, Infinity]),
      u8: new Uint8Array([1, 2, 3]),
      map: new Map<unknown, unknown>([[1, "one"], ["k", { nested: true }]]),
      set: new Set(["a", "b"]),
      when: new Date(0),
      big: 12345678901234567890n,
      nothing: undefined,
      nan: NaN,
    };
    store.set("rich", value);
    const reply = await fetchData(requester, "natsched.d.data.h", ["rich", "absent"], "test", 5000);
    expect(reply.nbytes[0]).toBeGreaterThan(0);
    expect(reply.nbytes[1]).toBe(-1);
    expect(reply.values[0]).toEqual(value);
    expect((reply.values[0] as typeof value).f64).toBeInstanceOf(Float64Array);
  });

  it("pulls a value far above max_payload in chunks, intact", async () => {
    const big = new Float64Array(1_000_000).map((_, i) => i * 3);
    store.set("big", big);
    const reply = await fetchData(requester, "natsched.d.data.h", ["big"], "test", 5000);
    const got = reply.values[0] as Float64Array;
    expect(got).toBeInstanceOf(Float64Array);
    expect(Buffer.compare(Buffer.from(got.buffer, got.byteOffset, got.byteLength), Buffer.from(big.buffer))).toBe(0);
  });

  it("answers a request without encoding (a foreign client) with JSON", async () => {
    store.set("arr", new Int32Array([7, 8, 9]));
    const raw = (await requester.request("natsched.d.data.h", { op: "get-data", keys: ["arr"], who: "foreign" })) as Uint8Array;
    expect(JSON.parse(Buffer.from(raw).toString("utf8"))).toEqual({ data: { arr: [7, 8, 9] }, nbytes: { arr: 100 }, missing: [] });
  });

  it("answers layout list by position, a key it lacks as null with size -1", async () => {
    store.set("p1", "one");
    store.set("p2", [2]);
    const raw = (await requester.request("natsched.d.data.h", { op: "get-data", keys: ["p2", "gone", "p1"], who: "foreign", layout: "list" })) as Uint8Array;
    const reply = JSON.parse(Buffer.from(raw).toString("utf8"));
    expect(reply).toEqual({ values: [[2], null, "one"], nbytes: [reply.nbytes[0], -1, reply.nbytes[2]], missing: ["gone"] });
    expect(reply.nbytes[0]).toBeGreaterThan(0);
    expect(reply.nbytes[2]).toBeGreaterThan(0);
  });

  it("takes a reply keyed by key from a worker that does not know layout list", async () => {
    const bus = new MemoryBus();
    const old = bus.connect();
    const asker = bus.connect();
    // What an older worker answers whatever the layout asked for.
    old.subscribe("natsched.o.data.h", (msg) => old.publish(msg.reply!, { data: { a: 1, b: { x: 2 } }, nbytes: { a: 8 }, missing: ["c"] }));
    const reply = await fetchData(asker, "natsched.o.data.h", ["b", "c", "a"], "test", 1000);
    expect(reply.values).toEqual([{ x: 2 }, null, 1]);
    expect(reply.nbytes[0]).toBeGreaterThan(0); // no size given: measured here
    expect(reply.nbytes.slice(1)).toEqual([-1, 8]);
  });

  it("refuses a list reply whose length does not match the keys asked", async () => {
    const bus = new MemoryBus();
    const liar = bus.connect();
    const asker = bus.connect();
    liar.subscribe("natsched.l.data.h", (msg) => liar.publish(msg.reply!, { values: [1], nbytes: [8], missing: [] }));
    const error = await fetchData(asker, "natsched.l.data.h", ["a", "b"], "test", 1000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toMatch(/1 values and 1 sizes for 2 keys/);
  });

  it("puts a large value that the server pulls from the sender", async () => {
    const payload = new Uint8Array(300_000).map((_, i) => i % 199);
    const reply = await putData(requester, "natsched.d.data.h", { scattered: payload, small: 1 }, "test", { timeout: 5000, sourcePrefix: "natsched.d.client.test.data" });
    expect(reply).toEqual({ ok: true, nbytes: { scattered: 1, small: 1 } });
    expect(Buffer.compare(store.get("scattered") as Uint8Array, payload)).toBe(0);
    const small = await putData(requester, "natsched.d.data.h", { tiny: new Map([["x", 1]]) }, "test", { timeout: 5000, sourcePrefix: "natsched.d.client.test.data" });
    expect(small.ok).toBe(true);
    expect(store.get("tiny")).toEqual(new Map([["x", 1]]));
  });

  it("reports an unknown transfer chunk as an error", async () => {
    const error = await fetchData(requester, "natsched.d.data.h", [], "test", 5000).then(
      () => requester.request("natsched.d.data.h", { op: "get-chunk", id: "nope", index: 0 }),
    );
    expect(error).toEqual({ error: "no chunk 0 of transfer nope" });
    const bad = await fetchData(requester, "natsched.d.nobody", ["k"], "test", 500).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ProtocolError);
  });

  it("passes values by reference on the in-process bus", async () => {
    const bus = new MemoryBus();
    const a = bus.connect();
    const b = bus.connect();
    const value = { same: "object" };
    serve(a, "natsched.m.data.h", new Map([["v", value]]));
    const reply = await fetchData(b, "natsched.m.data.h", ["v"], "test", 1000);
    expect(reply.values[0]).toBe(value);
  });
});
