/**
 * Clients wait for a scheduler that is resuming from its log instead of timing out: it
 * announces itself on `natsched.<c>.announce.resuming` every second until it serves
 * (actors/resuming.ts), and a client's request to the scheduler waits past its
 * `requestTimeout` while it does (up to `resumeWait`). The resume is made slow here with a
 * hook; the clients' request timeout is 1 s.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { resumingSubject } from "../actors/resuming.js";
import { TimeoutError } from "../machines/errors.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const CLUSTER = "resume-wait";
const RESUME_MS = 3000;
let server: NatsServer;
let nc: NatsConnection;
const processes: NatschedProcess[] = [];

beforeAll(async () => {
  server = await NatsServer.start();
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await nc?.close();
  await server?.dispose();
});

describe("a client of a scheduler that is resuming", () => {
  it("waits for it past its request timeout while it says it is resuming, and gets its answer", async () => {
    const spawn = (label: string, args: string[]) => {
      const p = NatschedProcess.spawn(label, [...args, "--nats", server.url, "--cluster", CLUSTER, "--log", "jetstream"], { NATSCHED_SCHEDULER__WORKER_TTL: "10" });
      processes.push(p);
      return p;
    };
    const first = spawn("scheduler", ["scheduler"]);
    await first.waitFor(/natsched scheduler: cluster/);
    const worker = spawn("w1", ["worker", "--name", "w1", "--functions", `${REPO_ROOT}/tests/support/cluster-tasks.ts`]);
    await worker.waitFor(/registered/);
    const client = await connectClient({ servers: server.url, cluster: CLUSTER, requestTimeout: 1000 });
    expect(await client.submit<number>("inc", [1]).result({ timeout: 10_000 })).toBe(2);
    expect(await first.stop("SIGKILL")).toBe(-1);

    const announced: number[] = [];
    const heard = new Promise<void>((resolve) => {
      nc.subscribe(resumingSubject(CLUSTER), {
        callback: (_err, msg) => {
          if ((msg.json() as { op: string }).op === "scheduler-resuming") announced.push(Date.now());
          resolve();
        },
      });
    });
    await nc.flush();
    const second = SchedulerProcess.start({
      nats: { servers: server.url },
      cluster: CLUSTER,
      log: { jetstream: true },
      configFile: false,
      service: false,
      beforeResume: () => new Promise((resolve) => setTimeout(resolve, RESUME_MS)),
    });
    try {
      await heard;
      const asked = Date.now();
      // A client that waits as long as the scheduler says it is resuming, one that does not (resumeWait 0), and a request of the client from before.
      const [waiting, impatient, submitted] = await Promise.allSettled([
        connectClient({ servers: server.url, cluster: CLUSTER, requestTimeout: 1000 }),
        connectClient({ servers: server.url, cluster: CLUSTER, requestTimeout: 1000, resumeWait: 0 }),
        client.submit<number>("inc", [41]).result({ timeout: 20_000 }),
      ]);
      expect(impatient.status).toBe("rejected");
      expect((impatient as PromiseRejectedResult).reason).toBeInstanceOf(TimeoutError);
      if (waiting.status === "rejected") throw waiting.reason;
      expect(submitted).toEqual({ status: "fulfilled", value: 42 });
      // It took longer than the request timeout: the announcements kept the requests waiting.
      expect(Date.now() - asked).toBeGreaterThan(1000);
      expect(announced.length).toBeGreaterThanOrEqual(2);
      const other = (waiting as PromiseFulfilledResult<Awaited<ReturnType<typeof connectClient>>>).value;
      expect(await other.submit<number>("inc", [9]).result({ timeout: 10_000 })).toBe(10);
      await other.close();
    } finally {
      await client.close();
      await (await second).close();
    }
  }, 60_000);
});
