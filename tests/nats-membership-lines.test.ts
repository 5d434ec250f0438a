/**
 * `natsched scheduler` says who joins and leaves, with the reason: read from the output of a
 * real scheduler process while worker processes register, retire on SIGTERM and die on
 * SIGKILL, and clients join, leave, and go silent until they are released.
 */
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "members";
const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;

let server: NatsServer;
const processes: NatschedProcess[] = [];

function spawn(label: string, args: string[], env: Record<string, string> = {}): NatschedProcess {
  const p = NatschedProcess.spawn(label, [...args, "--nats", server.url, "--cluster", CLUSTER], env);
  processes.push(p);
  return p;
}

beforeAll(async () => {
  server = await NatsServer.start({ jetstream: false });
}, 30_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await server?.dispose();
});

describe("the scheduler's lines about workers and clients", () => {
  it("names each worker and client that joins or leaves, and why", async () => {
    const scheduler = spawn("scheduler", ["scheduler", "--no-log"], { NATSCHED_SCHEDULER__CLIENT_RELEASE_GRACE: "1.5" });
    await scheduler.waitFor(/natsched scheduler: cluster members/);
    const worker = (name: string, threads: number) => spawn(name, ["worker", "--name", name, "--nthreads", String(threads), "--host", `host-${name}`, "--functions", FUNCTIONS]);
    const [, w2, w3] = [worker("w1", 2), worker("w2", 1), worker("w3", 1)];
    await Promise.all(processes.slice(1).map((p) => p.waitFor(/registered/)));
    await scheduler.waitFor(/worker w3 joined/);
    expect(scheduler.log).toMatch(/^natsched scheduler: worker w1 joined: 2 thread\(s\) on host host-w1$/m);
    expect(scheduler.log).toMatch(/^natsched scheduler: worker w2 joined: 1 thread\(s\) on host host-w2$/m);

    const client = await connectClient({ servers: server.url, cluster: CLUSTER });
    await scheduler.waitFor(new RegExp(`client ${client.id} joined`));
    // A client that joins and then says nothing more: released after clientReleaseGrace.
    const silent = await connect({ servers: server.url });
    silent.publish(`natsched.${CLUSTER}.scheduler`, JSON.stringify({ v: 1, from: "silent-1", ops: [{ op: "client-join", client: "silent-1" }] }));
    await silent.flush();

    expect(await w2!.stop("SIGTERM")).toBe(0);
    expect(await w3!.stop("SIGKILL")).toBe(-1);
    await client.close();
    await scheduler.waitFor(/worker w3 lost/, 15_000);
    await scheduler.waitFor(/client silent-1 left/, 15_000);
    await silent.close();

    const lines = scheduler.log.split("\n").filter((line) => / (worker|client) \S+ (joined|retiring|left|lost)/.test(line));
    expect(lines.indexOf(`natsched scheduler: client ${client.id} joined`)).toBeGreaterThanOrEqual(0);
    expect(lines).toContain(`natsched scheduler: client ${client.id} left`);
    expect(lines).toContain("natsched scheduler: client silent-1 joined");
    expect(lines).toContainEqual(expect.stringMatching(/^natsched scheduler: client silent-1 left: no message for [\d.]+s \(clientReleaseGrace 1\.5s\)$/));
    expect(lines).toContain("natsched scheduler: worker w2 retiring: SIGTERM");
    expect(lines).toContain("natsched scheduler: worker w2 left (unregistered): SIGTERM");
    expect(lines).toContainEqual(expect.stringMatching(/^natsched scheduler: worker w3 lost: connection gone: no message for [\d.]+s and nobody serving its subject for [\d.]+s$/));
    // w1 stays: nothing about it but its joining.
    expect(lines.filter((line) => line.includes(" w1 "))).toEqual(["natsched scheduler: worker w1 joined: 2 thread(s) on host host-w1"]);
    // The start line comes first, whatever joined while the scheduler was starting.
    expect(scheduler.log.indexOf("natsched scheduler: cluster members")).toBe(0);
  }, 40_000);
});
