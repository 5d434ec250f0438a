/**
 * What is sent to a process whose connection is down is lost (core NATS keeps nothing; the
 * transport's re-send covers the sender's connection dropping, not the receiver's). A
 * worker whose connection comes back says so, and the scheduler resyncs it as it would
 * after its own restart: the compute-tasks it never got are sent again; one it removed
 * meanwhile registers again. A scheduler whose
 * connection comes back resyncs every worker: the results they reported meanwhile come in.
 * Work stealing is off here, so that nothing else could move the tasks to another worker.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { Client, Future } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";
import { TcpProxy } from "./support/tcp-proxy.js";

const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;
const POLICY = { NATSCHED_SCHEDULER__WORK_STEALING: "false" };

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const submitThree = (client: Client): Future<number>[] => Array.from({ length: 3 }, (_, i) => client.submit<number>("inc", [i], { pure: false }));

/** Asks the scheduler for its workers until it has none (it removed w1), at most 20 s. */
async function untilNoWorkers(client: Client): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const workers = await client.workers();
    if (workers.length === 0) return;
    if (Date.now() > deadline) expect(workers).toEqual([]);
    await sleep(100);
  }
}

/** The three tasks complete, and w1 is the cluster's worker again. */
async function completeOnW1(client: Client, futures: Future<number>[]): Promise<void> {
  expect(await client.gather(futures, { timeout: 20_000 })).toEqual([1, 2, 3]);
  expect((await client.workers()).map((w) => w.name)).toEqual(["w1"]);
}

/** A cluster of one scheduler and one worker, `cut` of them connected through a proxy the test can cut; the client connects directly. */
async function cluster(name: string, cut: "worker" | "scheduler" | "neither", policy: Record<string, string> = POLICY) {
  const server = await NatsServer.start({ jetstream: false });
  cleanup.push(() => server.dispose());
  const proxy = await TcpProxy.start(server.port);
  cleanup.push(() => proxy.close());
  const via = (who: "worker" | "scheduler") => (who === cut ? proxy.url : server.url);
  const scheduler = NatschedProcess.spawn("scheduler", ["scheduler", "--no-log", "--nats", via("scheduler"), "--cluster", name], policy);
  cleanup.push(() => scheduler.stop("SIGKILL"));
  await scheduler.waitFor(/natsched scheduler: cluster/, 30_000);
  const worker = NatschedProcess.spawn("w1", ["worker", "--name", "w1", "--nthreads", "1", "--functions", FUNCTIONS, "--nats", via("worker"), "--cluster", name], policy);
  cleanup.push(() => worker.stop("SIGKILL"));
  await worker.waitFor(/registered/, 30_000);
  const client: Client = await connectClient({ servers: server.url, cluster: name });
  cleanup.push(() => client.close());
  return { proxy, client, worker };
}

describe("a worker whose connection was down while the scheduler gave it work", () => {
  it("is sent that work again when it is back, and the futures complete", async () => {
    const { proxy, client } = await cluster("wback", "worker");
    expect(await client.submit<number>("inc", [1]).result({ timeout: 10_000 })).toBe(2);

    await proxy.cut();
    // Assigned to w1 while its connection is down (within the ~4 s before a silent worker is lost).
    const futures = submitThree(client);
    await sleep(1_500);
    expect(futures.some((f) => f.done())).toBe(false);
    await proxy.restore();
    await completeOnW1(client, futures);
  }, 60_000);
});

describe("a worker whose connection was down long enough for the scheduler to remove it", () => {
  it("registers again when it is back, and takes work again", async () => {
    const { proxy, client } = await cluster("wgone", "worker");
    expect(await client.submit<number>("inc", [1]).result({ timeout: 10_000 })).toBe(2);
    await proxy.cut();
    await untilNoWorkers(client); // a silent worker with no connection is lost after about 4 s
    const futures = submitThree(client);
    await proxy.restore();
    await completeOnW1(client, futures);
  }, 60_000);
});

describe("a worker removed while its connection stayed up (its process stopped past workerTtl)", () => {
  it("is told it is missing when its heartbeats resume, registers again, and takes work again", async () => {
    const { client, worker } = await cluster("wstall", "neither", { ...POLICY, NATSCHED_SCHEDULER__WORKER_TTL: "2" });
    expect(await client.submit<number>("inc", [1]).result({ timeout: 10_000 })).toBe(2);
    // Past the new run's announcements (at start, 1 s and 4 s later), which would make it register again anyway.
    await sleep(4_500);
    process.kill(worker.pid, "SIGSTOP");
    try {
      await untilNoWorkers(client); // silent past the 2 s workerTtl; its connection stays open, so no reconnect will tell it
    } finally {
      process.kill(worker.pid, "SIGCONT");
    }
    await completeOnW1(client, submitThree(client));
  }, 60_000);
});

describe("a scheduler whose connection was down while a worker finished a task", () => {
  it("asks the workers when it is back, and the future completes", async () => {
    const { proxy, client } = await cluster("sback", "scheduler");
    const slow = client.submit<number>("slowInc", [41, 3000], { pure: false });
    await sleep(2_600); // longer than the scheduler's transport keeps its messages to send again
    await proxy.cut();
    await sleep(1_500); // the task finishes meanwhile: its task-finished reaches nobody
    expect(slow.done()).toBe(false);
    await proxy.restore();
    expect(await slow.result({ timeout: 20_000 })).toBe(42);
    expect(await client.submit<number>("inc", [1], { pure: false }).result({ timeout: 10_000 })).toBe(2);
  }, 60_000);
});
