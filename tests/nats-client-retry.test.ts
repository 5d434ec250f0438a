/**
 * A client that submits while the scheduler process is down (killed, about to be started
 * again from its JetStream log) does not fail with "no responders": it asks again with
 * backoff until its request timeout, and the future resolves once the new scheduler serves.
 * With no scheduler at all it fails with TimeoutError after that timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { TimeoutError } from "../machines/errors.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "retry";
const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;

let server: NatsServer;
const processes: NatschedProcess[] = [];
const clients: Client[] = [];

function spawn(label: string, args: string[]): NatschedProcess {
  const p = NatschedProcess.spawn(label, [...args, "--nats", server.url, "--cluster", CLUSTER, "--log", "jetstream"], { NATSCHED_SCHEDULER__WORKER_TTL: "5" });
  processes.push(p);
  return p;
}

beforeAll(async () => {
  server = await NatsServer.start();
  await spawn("scheduler", ["scheduler"]).waitFor(/natsched scheduler: cluster/);
  await spawn("w1", ["worker", "--name", "w1", "--nthreads", "2", "--functions", FUNCTIONS]).waitFor(/registered/);
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await server?.dispose();
});

describe("a client while the scheduler process restarts", () => {
  it("submits during the downtime, and the future resolves once the scheduler is back", async () => {
    const client = await connectClient({ servers: server.url, cluster: CLUSTER, requestTimeout: 30_000 });
    clients.push(client);
    expect(await client.submit<number>("inc", [1]).result({ timeout: 10_000 })).toBe(2);

    expect(await processes[0]!.stop("SIGKILL")).toBe(-1);
    const during = client.submit<number>("inc", [41], { pure: false });
    const settled = during.result().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const second = spawn("scheduler-2", ["scheduler"]);
    await second.waitFor(/resumed from its log/);
    expect(await settled).toEqual({ value: 42 });
  }, 40_000);

  it("fails with TimeoutError after its request timeout when no scheduler comes", async () => {
    await Promise.all(processes.filter((p) => p.label.startsWith("scheduler")).map((p) => p.stop("SIGKILL")));
    const started = Date.now();
    const error = await connectClient({ servers: server.url, cluster: CLUSTER, requestTimeout: 800 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as Error).message).toMatch(/no scheduler of cluster "retry" answered within 800 ms/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
  }, 20_000);
});
