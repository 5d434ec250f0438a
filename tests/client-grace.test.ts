/**
 * Clients that go away without releasing their futures, on the embedded cluster: the
 * scheduler releases what a client wanted once it has not heard from it for
 * clientReleaseGrace; a client that keeps heartbeating, or whose link comes back within
 * the grace, keeps its futures. The release is a recorded input, so the log replays.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "../actors/client.js";
import { LocalCluster } from "../actors/local-cluster.js";
import { NatschedError } from "../machines/errors.js";
import { MemoryLogSink } from "../log/memory-log.js";
import { replay } from "../replay/replay.js";
import { LinkTransport } from "./support/link-transport.js";

const GRACE = 0.6;
const config = { heartbeatInterval: 0.05, clientReleaseGrace: GRACE };
const functions = { inc: (x: number) => x + 1 };
const clusters: LocalCluster[] = [];

afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});

async function start(log: MemoryLogSink | false = false): Promise<LocalCluster> {
  const cluster = await LocalCluster.start({ workers: 1, functions, config, configFile: false, log });
  clusters.push(cluster);
  return cluster;
}

/** A client on a link the test can cut, as a network would. */
function linkedClient(cluster: LocalCluster): { client: Client; link: LinkTransport } {
  const link = new LinkTransport(cluster.bus.connect("linked-client"));
  const client = new Client({ cluster: cluster.name, transport: link, heartbeatInterval: config.heartbeatInterval }).attach();
  return { client, link };
}

async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe("clients that disappear", () => {
  it("forgets the keys of a client closed without releasing, after the grace, and the log replays", async () => {
    const log = new MemoryLogSink();
    const cluster = await start(log);
    const core = cluster.scheduler.core;
    const transport = cluster.bus.connect("vanishing-client");
    const client = new Client({ cluster: cluster.name, transport, heartbeatInterval: config.heartbeatInterval }).attach();
    const future = client.submit<number>("inc", [1]);
    expect(await future.result()).toBe(2);
    expect(core.tasks.get(future.key)?.state).toBe("memory");

    await transport.close(); // gone without release-keys or client-leave
    const gone = Date.now();
    await until(() => !core.clients.has(client.id), "the client to be released");
    expect((Date.now() - gone) / 1000).toBeGreaterThanOrEqual(GRACE - config.heartbeatInterval - 0.02);
    expect(core.tasks.has(future.key)).toBe(false);
    expect(cluster.workers.get("worker-0")!.core.tasks.has(future.key)).toBe(false);

    const leave = log.records.find((r) => r.kind === "input" && r.event.op === "client-leave");
    expect(leave).toMatchObject({ actor: "scheduler", event: { client: client.id, reason: expect.stringMatching(/no message for [\d.]+s \(clientReleaseGrace 0.6s\)/) } });
    await cluster.close();
    const result = await replay(log.records);
    expect(result.problems).toEqual([]);
    expect(result.actors["scheduler"]!.divergence).toBeUndefined();
    expect(result.ok).toBe(true);
  });

  it("keeps the futures of a client that stays quiet but keeps heartbeating", async () => {
    const cluster = await start();
    const client = cluster.client();
    const future = client.submit<number>("inc", [41]);
    expect(await future.result()).toBe(42);
    await sleep(GRACE * 3 * 1000);
    expect(cluster.scheduler.core.clients.has(client.id)).toBe(true);
    expect(cluster.scheduler.core.tasks.get(future.key)?.state).toBe("memory");
    expect(await future.result()).toBe(42);
  });

  it("keeps the futures of a client whose link comes back within the grace", async () => {
    const cluster = await start();
    const { client, link } = linkedClient(cluster);
    const future = client.submit<number>("inc", [5]);
    expect(await future.result()).toBe(6);
    link.down();
    await sleep(GRACE * 0.25 * 1000);
    link.up();
    await sleep(GRACE * 2 * 1000);
    expect(cluster.scheduler.core.clients.has(client.id)).toBe(true);
    expect(cluster.scheduler.core.tasks.get(future.key)?.state).toBe("memory");
    expect(await future.result()).toBe(6);
  });

  it("tells a client that comes back after the grace that its futures were released", async () => {
    const cluster = await start();
    const { client, link } = linkedClient(cluster);
    const future = client.submit<number>("inc", [7]);
    expect(await future.result()).toBe(8);
    link.down();
    await until(() => !cluster.scheduler.core.clients.has(client.id), "the client to be released");
    expect(cluster.scheduler.core.tasks.has(future.key)).toBe(false);
    link.up();
    await until(() => future.status === "cancelled", "the client to hear about it");
    const error = await future.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NatschedError);
    expect((error as NatschedError).code).toBe("CANCELLED");
    expect((error as Error).message).toMatch(/released by the scheduler: no message for/);
    // Still a working client: new work is accepted and tracked again.
    expect(await client.submit<number>("inc", [8]).result()).toBe(9);
    expect(cluster.scheduler.core.clients.has(client.id)).toBe(true);
  });

  it("records a clean leave once, with no release after it", async () => {
    const log = new MemoryLogSink();
    const cluster = await start(log);
    const client = cluster.client();
    expect(await client.submit<number>("inc", [1]).result()).toBe(2);
    await client.close();
    await sleep(GRACE * 2 * 1000);
    const leaves = log.records.filter((r) => r.kind === "input" && r.event.op === "client-leave");
    expect(leaves).toHaveLength(1);
    expect(leaves[0]).toMatchObject({ event: { client: client.id } });
    expect((leaves[0] as { event: { reason?: string } }).event.reason).toBeUndefined();
  });

  it("rejects a heartbeat interval that is not a positive number", async () => {
    const cluster = await start();
    expect(() => new Client({ cluster: cluster.name, transport: cluster.bus.connect("x"), heartbeatInterval: 0 })).toThrow(/heartbeatInterval/);
  });
});
