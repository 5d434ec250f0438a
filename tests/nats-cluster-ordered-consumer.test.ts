/**
 * A log reader's ordered consumer on a NATS cluster with a server down. nats-server 2.9 places
 * an ephemeral consumer of a replicated stream on one of the stream's peers at random, the
 * dead one included, and a creation placed there is never answered. Asking again under the
 * same name asks for that same consumer, on that same peer; so each attempt must be a new
 * consumer (a new name), placed again.
 */
import { jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { orderedLogConsumer } from "../log/jetstream-elections.js";
import { NatsServerCluster } from "./support/nats-server.js";

const STREAM = "ORDERED_PEER_DOWN";
const SUBJECT = "ordered.peer.down";

let servers: NatsServerCluster;
let nc: NatsConnection;

beforeAll(async () => {
  servers = await NatsServerCluster.start();
}, 60_000);

afterAll(async () => {
  await nc?.close().catch(() => undefined);
  await servers?.dispose();
});

describe("an ordered log consumer with a peer of the stream down", () => {
  it("is created by asking again under a new name each time, and reads the stream", async () => {
    const setup = await connect({ servers: servers.urls });
    const jsm = await jetstreamManager(setup);
    const info = await jsm.streams.add({ name: STREAM, subjects: [SUBJECT], num_replicas: 3, retention: RetentionPolicy.Limits, storage: StorageType.File });
    await setup.request(SUBJECT, new TextEncoder().encode("one"), { timeout: 5000 });
    // A peer leading neither JetStream nor the stream: no election, only a dead peer to place on.
    const leaders = [await servers.metaLeader(), (await jsm.streams.info(STREAM)).cluster?.leader];
    const victim = servers.servers.find((s) => !leaders.includes(servers.nameOf(s)))!;
    expect(info.cluster?.replicas?.map((r) => r.name)).toContain(servers.nameOf(victim));
    await setup.close();
    await victim.kill();

    nc = await connect({ servers: servers.servers.filter((s) => s !== victim).map((s) => s.url) });
    const asked: string[] = [];
    nc.subscribe(`$JS.API.CONSUMER.CREATE.${STREAM}.>`, { callback: (_, m) => void asked.push(m.subject.split(".")[5]!) });
    // Until some creation was placed on the dead peer and had to be asked again (a third of them).
    let calls = 0;
    while (calls < 30 && asked.length === calls) {
      calls++;
      const consumer = await orderedLogConsumer(nc, STREAM, SUBJECT, { attemptMs: 1000, deadlineMs: 15_000 });
      const first = await consumer.next({ expires: 5000 });
      expect(new TextDecoder().decode(first?.data)).toBe("one");
      await nc.flush();
    }
    expect(asked.length).toBeGreaterThan(calls);
    expect(new Set(asked).size).toBe(asked.length);
  }, 60_000);
});
