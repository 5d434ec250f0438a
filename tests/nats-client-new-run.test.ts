/**
 * A client's request that the server handed to a scheduler process just as it died gets no
 * answer and no "no responders": that try would wait out its whole request timeout. When the
 * next scheduler announces a new run (it has no log to resume from), the client sends again
 * what it has no answer for, and the future resolves on the new run. The dead process's
 * subscription is played by a plain NATS connection that takes the client's requests and
 * answers none, then goes away. docs/nats.md, "Restarting the scheduler".
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "newrun";
const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;

let server: NatsServer;
const processes: NatschedProcess[] = [];
const clients: Client[] = [];
const connections: NatsConnection[] = [];

function spawn(label: string, args: string[]): NatschedProcess {
  const p = NatschedProcess.spawn(label, [...args, "--nats", server.url, "--cluster", CLUSTER]);
  processes.push(p);
  return p;
}

async function until(what: string, done: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  server = await NatsServer.start();
  await spawn("scheduler", ["scheduler", "--no-log"]).waitFor(/natsched scheduler: cluster/);
  await spawn("w1", ["worker", "--name", "w1", "--nthreads", "2", "--functions", FUNCTIONS]).waitFor(/registered/);
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await Promise.all(connections.map((nc) => nc.close().catch(() => undefined)));
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await server?.dispose();
});

describe("a request the dead scheduler took", () => {
  it("is sent again when the next scheduler announces a new run, and its future resolves there", async () => {
    // A timeout far beyond the test's: only the re-send can settle the future in time.
    const client = await connectClient({ servers: server.url, cluster: CLUSTER, requestTimeout: 300_000 });
    clients.push(client);
    expect(await client.submit<number>("inc", [1]).result({ timeout: 10_000 })).toBe(2);

    expect(await processes[0]!.stop("SIGKILL")).toBe(-1);
    const blackHole = await connect({ servers: server.url });
    connections.push(blackHole);
    const swallowed: string[] = [];
    blackHole.subscribe(`natsched.${CLUSTER}.scheduler.client.>`, {
      callback: (_error, msg) => {
        swallowed.push(msg.subject);
      },
    });
    await blackHole.flush();

    const during = client.submit<number>("inc", [41], { pure: false });
    const settled = during.result().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await until("the submission to reach the dead scheduler's subscription", () => swallowed.length > 0);
    await blackHole.close();

    const second = spawn("scheduler-2", ["scheduler", "--no-log"]);
    await second.waitFor(/natsched scheduler: cluster/);
    expect(await settled).toEqual({ value: 42 });
    // Its result is held for the client on the new run: gather fetches it from the worker.
    expect(await client.gather([during])).toEqual([42]);
  }, 60_000);
});
