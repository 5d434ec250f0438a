/**
 * The literal command, `natsched scheduler --nats nats://... --cluster prod` (no
 * --log), keeps its log in JetStream when the server has it, so a SIGKILLed scheduler
 * started again with the same command resumes and the futures resolve. Without JetStream it
 * warns and logs to a temp file; a scheduler killed then and started again begins a new run,
 * and the client does not hang: it resubmits what it submitted (pending and finished futures
 * alike: the old run's data is gone) and fails what it cannot bring back (data it scattered,
 * and what depends on it) with SchedulerRestartedError.
 */
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { SchedulerRestartedError } from "../machines/errors.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;
const POLICY = { NATSCHED_SCHEDULER__WORKER_TTL: "5" };

const servers: NatsServer[] = [];
const processes: NatschedProcess[] = [];
const clients: Client[] = [];

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await Promise.all(servers.map((s) => s.dispose()));
  // The temp-file logs the schedulers without JetStream named (kept by design: the process says where).
  for (const p of processes) for (const path of p.log.match(/\/\S*natsched-[\w-]+-\d+\.natlog/g) ?? []) rmSync(path, { force: true });
});

async function cluster(jetstream: boolean, name: string) {
  const server = await NatsServer.start({ jetstream });
  servers.push(server);
  const spawn = (label: string, args: string[]) => {
    const p = NatschedProcess.spawn(label, [...args, "--nats", server.url, "--cluster", name], POLICY);
    processes.push(p);
    return p;
  };
  // The command, as is: no --log.
  const scheduler = () => spawn(`${name}-scheduler`, ["scheduler"]);
  const first = scheduler();
  await first.waitFor(/natsched scheduler: cluster/, 30_000);
  await Promise.all(["w1", "w2"].map((w) => spawn(`${name}-${w}`, ["worker", "--name", w, "--nthreads", "2", "--functions", FUNCTIONS]).waitFor(/registered/, 30_000)));
  const client = await connectClient({ servers: server.url, cluster: name });
  clients.push(client);
  return { server, first, scheduler, client };
}

const settle = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe("the issue's scheduler command without --log", () => {
  it("logs to JetStream when the server has it, and a SIGKILLed scheduler started again resumes", async () => {
    const { first, scheduler, client, server } = await cluster(true, "prod");
    expect(first.log).toContain(`event log nats://127.0.0.1:${server.port}/prod`);
    expect(first.log).not.toMatch(/warning/);
    const slow = Array.from({ length: 6 }, (_, i) => client.submit<number>("slowInc", [i, 400], { pure: false }));
    const total = client.submit<number>("add", slow);
    await slow[0]!.wait({ timeout: 10_000 });
    expect(await first.stop("SIGKILL")).toBe(-1);
    const second = scheduler();
    await second.waitFor(/resumed from its log: \d+ inputs re-run/, 30_000);
    expect(await client.gather(slow, { timeout: 30_000 })).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await total.result({ timeout: 30_000 })).toBe(21);
  }, 90_000);

  it("without JetStream warns and logs to a temp file; killed and started again, a new run: the client resubmits, or fails scattered data with SchedulerRestartedError", async () => {
    const { first, scheduler, client } = await cluster(false, "lab");
    expect(first.log).toMatch(/natsched scheduler: warning: no JetStream on .*: the event log goes to the file .*natsched-lab-\d+\.natlog/);
    expect(first.log).toMatch(/event log \/.*natsched-lab-\d+\.natlog/);

    // Before the kill: finished results, scattered data and a task on it, a chain whose
    // middle the client released, and tasks still running.
    const done = client.submit<number>("inc", [1], { key: "done-1" });
    expect(await done.result({ timeout: 10_000 })).toBe(2);
    const [data] = await client.scatter([10]);
    const onData = client.submit<number>("inc", [data]);
    expect(await onData.result({ timeout: 10_000 })).toBe(11);
    const base = client.submit<number>("slowInc", [100, 1500], { pure: false });
    const top = client.submit<number>("inc", [base], { key: "top-1" });
    base.release();
    const pending = Array.from({ length: 6 }, (_, i) => client.submit<number>("slowInc", [i, 1500], { pure: false }));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(pending.some((f) => f.done())).toBe(false);

    expect(await first.stop("SIGKILL")).toBe(-1);
    // Futures still pending wait through the restart.
    const outcomes = { pending: settle(client.gather(pending, { timeout: 30_000 })), top: settle(top.result({ timeout: 30_000 })) };
    await new Promise((resolve) => setTimeout(resolve, 500));
    const restarted = Date.now();
    const second = scheduler();
    await second.waitFor(/natsched scheduler: cluster lab/, 30_000);

    expect(await outcomes.pending).toEqual({ value: [1, 2, 3, 4, 5, 6] });
    expect(await outcomes.top).toEqual({ value: 102 });
    // A result finished in the old run: computed again (or taken from the worker that still held it).
    expect(await settle(done.result({ timeout: 10_000 }))).toEqual({ value: 2 });
    expect(done.status).toBe("finished");
    for (const future of [data!, onData]) {
      expect(future.status).toBe("error");
      const error = ((await settle(future.result({ timeout: 10_000 }))) as { error: unknown }).error;
      expect(error).toBeInstanceOf(SchedulerRestartedError);
      expect((error as SchedulerRestartedError).code).toBe("SCHEDULER_RESTARTED");
      expect((error as SchedulerRestartedError).lostKey).toBe(data!.key);
      expect((error as Error).message).toContain(`the scheduler of cluster "lab" restarted without its state`);
      expect((error as Error).message).toContain(future.key);
    }
    // Well within a request timeout: nothing waited for one.
    expect(Date.now() - restarted).toBeLessThan(20_000);

    // The new run serves as usual.
    const [again] = await client.scatter([20]);
    expect(await client.submit<number>("inc", [again]).result({ timeout: 10_000 })).toBe(21);
    expect((await client.workers()).map((w) => w.name).sort()).toEqual(["w1", "w2"]);
  }, 120_000);
});

describe("SchedulerProcess's default log", () => {
  it("is a temp file with a warning when the server has no JetStream, and JetStream when it has", async () => {
    const plain = await NatsServer.start({ jetstream: false });
    servers.push(plain);
    const a = await SchedulerProcess.start({ nats: { servers: plain.url }, cluster: "auto-a", configFile: false, service: false });
    try {
      expect(a.warnings).toHaveLength(1);
      expect(a.warnings[0]).toMatch(/^no JetStream on .*: the event log goes to the file /);
      expect(a.logPath).toMatch(/natsched-auto-a-\d+\.natlog$/);
    } finally {
      await a.close();
      if (a.logPath) rmSync(a.logPath, { force: true });
    }
    const js = await NatsServer.start();
    servers.push(js);
    const b = await SchedulerProcess.start({ nats: { servers: js.url }, cluster: "auto-b", configFile: false, service: false });
    try {
      expect(b.warnings).toEqual([]);
      expect(b.logPath).toBe(`nats://127.0.0.1:${js.port}/auto-b`);
    } finally {
      await b.close();
    }
    const none = await SchedulerProcess.start({ nats: { servers: js.url }, cluster: "auto-c", log: false, configFile: false, service: false });
    expect(none.logPath).toBeUndefined();
    expect(none.warnings).toEqual([]);
    await none.close();
  }, 30_000);
});
