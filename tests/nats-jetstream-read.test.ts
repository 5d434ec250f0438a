/**
 * Reading a JetStream log never stalls: a log of many small messages that ends on large ones
 * (full messages near max_payload, a record split in parts) reads back whole, at once. On
 * nats-server 2.9, a reader bounded by bytes got its refills refused (409 "message size
 * exceeds maxbytes") and waited for the consumer's heartbeat to time out, 30-45 s per stall;
 * the test timeouts below make such a stall fail the test instead of slowing it down.
 * A nats-server of its own with the default max_payload (1 MB).
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JetStreamLogSink } from "../log/jetstream-log.js";
import { openJetStreamLog, pullMessages } from "../log/jetstream-reader.js";
import type { LogRecord } from "../log/types.js";
import { NatsServer } from "./support/nats-server.js";

let server: NatsServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await NatsServer.start();
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await nc?.close();
  await server?.dispose();
});

function transition(actor: string, seq: number): LogRecord {
  return { actor, seq, t: 1000 + seq / 100, kind: "transition", machine: "task", id: `key-${seq}`, event: "ASSIGN", from: "waiting", to: "processing.assigned" };
}

/**
 * A log as a long run leaves it: hundreds of small messages (a few records per turn), then
 * messages filled to max_payload, then one record too large for a message, in parts.
 */
async function writeLog(cluster: string): Promise<LogRecord[]> {
  const sink = await JetStreamLogSink.open({ nc, cluster });
  const written: LogRecord[] = [];
  const append = (record: LogRecord) => {
    sink.append(record);
    written.push(record);
  };
  let seq = 0;
  for (let message = 0; message < 400; message++) {
    for (let i = 0; i < 3; i++) append(transition("scheduler", seq++));
    append(transition("worker.w1", message));
    await sink.flush();
  }
  for (let i = 0; i < 20_000; i++) append(transition("scheduler", seq++));
  await sink.flush();
  append({ actor: "scheduler", seq: seq++, t: 2000, kind: "input", event: { op: "update-graph", client: "c", tasks: [], wants: ["x".repeat(2_500_000)] } });
  await sink.close();
  return written;
}

describe("the JetStream reader", () => {
  it("asks for messages, never bytes, and no more than fit the server's buffer for a client at max_payload each", () => {
    expect(pullMessages(1024 * 1024)).toBe(32);
    expect(pullMessages(64 * 1024 * 1024)).toBe(1);
    expect(pullMessages(64 * 1024)).toBe(512);
    expect(pullMessages(undefined)).toBe(32);
  });

  it("reads a log that ends on large messages (full ones, a record in parts) to its end without stalling", { timeout: 20_000 }, async () => {
    const written = await writeLog("stall");
    const reader = await openJetStreamLog({ nc, cluster: "stall" });
    const all = await reader.readAll();
    expect(all.problems).toEqual([]);
    expect(all.records).toHaveLength(written.length);
    const of = (records: LogRecord[], actor: string) => records.filter((r) => r.actor === actor);
    expect(of(all.records, "scheduler")).toEqual(of(written, "scheduler"));
    expect(of(all.records, "worker.w1")).toEqual(of(written, "worker.w1"));
    // One actor's subject (what a resuming scheduler reads), twice: each pass reads to the end.
    for (let pass = 0; pass < 2; pass++) {
      const scheduler = await reader.readAll({ actor: "scheduler" });
      expect(scheduler.problems).toEqual([]);
      expect(scheduler.records).toEqual(of(written, "scheduler"));
    }
  });
});
