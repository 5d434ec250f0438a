/**
 * `natsched dashboard` on NATS: a cluster whose log is in JetStream, followed live
 * (--nats --cluster) while it runs, then opened as a recorded log (nats://host:port/<cluster>).
 * Read through the dashboard's JSON routes (the page over them is tested in Chromium by
 * tests/dashboard-log.test.ts and tests/dashboard-live.test.ts).
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { dashboardCommand } from "../cli/dashboard.js";
import { JetStreamLogSink } from "../log/jetstream-log.js";
import { NatsServer } from "./support/nats-server.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const TASKS = 30;
const CLUSTER = "dashlive";

let server: NatsServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await NatsServer.start();
  nc = await connect({ servers: server.url });
}, 60_000);

afterAll(async () => {
  await nc?.close();
  await server?.dispose();
});

interface Summary {
  records: number;
  loading?: { read: number };
  source: { kind: string; live: boolean };
  now: { workers: { name: string; done: number }[]; progress: { prefix: string; memory: number; released: number; total: number }[] };
}

/** `natsched dashboard <args>` until `stop()`: its URL, as it printed it. */
async function dashboard(args: string[]): Promise<{ url: string; stop(): Promise<number> }> {
  const out: string[] = [];
  const err: string[] = [];
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const running = dashboardCommand(args, { out: (t) => out.push(t), err: (t) => err.push(t) }, stopped);
  for (let i = 0; i < 600 && out.length === 0; i++) await Promise.race([running.then((code) => Promise.reject(new Error(`exit ${code}: ${err.join("\n")}`))), sleep(50)]);
  const url = /http:\/\/[\d.:]+\//.exec(out.join("\n"))?.[0];
  if (url === undefined) throw new Error(`no URL printed: ${out.join("\n")} ${err.join("\n")}`);
  return { url, stop: () => (stop(), running) };
}

const summary = async (url: string): Promise<Summary> => (await fetch(new URL("api/summary", url))).json() as Promise<Summary>;

describe("natsched dashboard on NATS", () => {
  it("follows a live cluster's JetStream log, then opens it as a recorded log", async () => {
    const sink = await JetStreamLogSink.open({ nc, cluster: CLUSTER });
    const cluster = await LocalCluster.start({ name: CLUSTER, workers: 2, functions: { nap: async (i: number) => (await sleep(10), i) }, log: sink, configFile: false });
    const live = await dashboard(["--nats", server.url, "--cluster", CLUSTER]);
    try {
      const client = cluster.client();
      const futures = Array.from({ length: TASKS }, (_, i) => client.submit<number>("nap", [i]));
      expect(await client.gather(futures)).toHaveLength(TASKS);
      let seen: Summary | undefined;
      for (let i = 0; i < 600; i++) {
        seen = await summary(live.url);
        // The scheduler's records and each worker's come on their own subjects: wait for all of them.
        const nap = seen.now.progress.find((p) => p.prefix === "nap");
        const done = seen.now.workers.reduce((n, w) => n + w.done, 0);
        if (nap !== undefined && nap.memory + nap.released === TASKS && done === TASKS) break;
        await sleep(50);
      }
      expect(seen!.source).toEqual(expect.objectContaining({ kind: "nats", live: true }));
      expect(seen!.now.workers.map((w) => w.name)).toEqual(["worker-0", "worker-1"]);
      expect(seen!.now.workers.reduce((n, w) => n + w.done, 0)).toBe(TASKS);
      await client.close();
    } finally {
      expect(await live.stop()).toBe(0);
      await cluster.close();
    }
    const recorded = await dashboard([`${server.url}/${CLUSTER}`]);
    try {
      // The URL comes before the log is read: the summary says so until it has been.
      let seen = await summary(recorded.url);
      for (let i = 0; i < 600 && seen.loading !== undefined; i++) {
        await sleep(50);
        seen = await summary(recorded.url);
      }
      expect(seen.loading).toBeUndefined();
      expect(seen.source).toEqual(expect.objectContaining({ kind: "log", live: false }));
      expect(seen.now.workers.reduce((n, w) => n + w.done, 0)).toBe(TASKS);
      const stream = (await (await fetch(new URL("api/stream", recorded.url))).json()) as { v: number };
      expect(stream.v).toBe(1);
    } finally {
      expect(await recorded.stop()).toBe(0);
    }
  }, 180_000);
});
