/**
 * A scheduler that restarts without its state announces the new run three times in about
 * 5 s (docs/nats.md). A client whose connection is down all that time hears none of them:
 * when its connection comes back it asks which run the scheduler serves, and if it is not
 * the one it knew it brings its futures over (resubmits them) as an announcement would have.
 * Back to the same run it leaves things as they are.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";
import { TcpProxy } from "./support/tcp-proxy.js";

const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;
const POLICY = { NATSCHED_SCHEDULER__WORKER_TTL: "5" };

const servers: NatsServer[] = [];
const proxies: TcpProxy[] = [];
const processes: NatschedProcess[] = [];
const clients: Client[] = [];

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all(servers.map((s) => s.dispose()));
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A cluster without JetStream (a restarted scheduler starts a new run); the client connects through a proxy. */
async function cluster(name: string) {
  const server = await NatsServer.start({ jetstream: false });
  servers.push(server);
  const proxy = await TcpProxy.start(server.port);
  proxies.push(proxy);
  const spawn = (label: string, args: string[]) => {
    const p = NatschedProcess.spawn(label, [...args, "--nats", server.url, "--cluster", name], POLICY);
    processes.push(p);
    return p;
  };
  const scheduler = () => spawn(`${name}-scheduler`, ["scheduler", "--no-log"]);
  const first = scheduler();
  await first.waitFor(/natsched scheduler: cluster/, 30_000);
  await spawn(`${name}-w1`, ["worker", "--name", "w1", "--nthreads", "2", "--functions", FUNCTIONS]).waitFor(/registered/, 30_000);
  const client = await connectClient({ servers: proxy.url, cluster: name });
  clients.push(client);
  return { proxy, first, scheduler, client };
}

describe("a client whose connection was down while the scheduler restarted", () => {
  it("finds out about the new run when it is back, and its futures complete on it", async () => {
    const { proxy, first, scheduler, client } = await cluster("away");
    const done = client.submit<number>("inc", [1], { key: "away-done" });
    expect(await done.result({ timeout: 10_000 })).toBe(2);
    const pending = Array.from({ length: 3 }, (_, i) => client.submit<number>("slowInc", [i, 5000], { pure: false }));
    // Longer than the client transport keeps its messages to send again after a reconnect (2 s):
    // the new scheduler must not get the submission that way.
    await sleep(2_600);

    await proxy.cut();
    expect(await first.stop("SIGKILL")).toBe(-1);
    const second = scheduler();
    await second.waitFor(/natsched scheduler: cluster away/, 30_000);
    await sleep(5_500); // the new run's three announcements (at start, 1 s and 4 s) all missed
    expect(pending.some((f) => f.done())).toBe(false);

    await proxy.restore();
    expect(await client.gather(pending, { timeout: 30_000 })).toEqual([1, 2, 3]);
    // A result of the old run is gone with it: computed again on the new one.
    expect(await done.result({ timeout: 10_000 })).toBe(2);
    expect((await client.workers()).map((w) => w.name)).toEqual(["w1"]);
  }, 90_000);

  it("back to the same run, keeps its futures and learns what finished while it was away", async () => {
    const { proxy, client } = await cluster("blip");
    const slow = client.submit<number>("slowInc", [41, 3500], { pure: false });
    const failing = client.submit("fail", [client.submit<number>("slowInc", [0, 3500], { pure: false })], { pure: false });
    const after = client.submit<number>("slowInc", [1, 8000], { pure: false });
    await sleep(2_600);
    await proxy.cut();
    await sleep(2_000); // slow and failing finish meanwhile: their reports to the client are lost
    expect(slow.done() || failing.done()).toBe(false);
    await proxy.restore();
    expect(await slow.result({ timeout: 20_000 })).toBe(42);
    await expect(failing.result({ timeout: 20_000 })).rejects.toMatchObject({ code: "TASK_FAILED" });
    // Still running when the connection came back: its report comes as usual.
    expect(await after.result({ timeout: 20_000 })).toBe(2);
  }, 60_000);
});
