/**
 * Credentials written into NATS URLs (`nats://alice:s3cret@host:port`, `nats://token@host:port`,
 * and the log tools' `nats://[user:pass@]host:port/<cluster>`) log in on every connection
 * path: the scheduler and worker commands, Client.connect, the log tools. The log tools take
 * the same connection flags as the daemons. No message shows the password or token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { runCli } from "../cli/run.js";
import { BadOptionError, NatschedError } from "../machines/errors.js";
import { exportLog } from "../tools/jetstream-export.js";
import { openLogAt } from "../log/jetstream-open.js";
import { connectNats, natsConnectionOptions, redactUrls, splitUrlCredentials } from "../transport/nats-connect.js";
import * as tasks from "./support/cluster-tasks.js";

const { default: _default, ...taskFunctions } = tasks;
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;

describe("credentials in a URL", () => {
  it("are split out of the URL, percent-escapes decoded; a user alone is a token", () => {
    expect(splitUrlCredentials("nats://alice:s3cret@127.0.0.1:4222")).toEqual({ url: "nats://127.0.0.1:4222", credentials: { user: "alice", pass: "s3cret" } });
    expect(splitUrlCredentials("nats://tok-123@127.0.0.1:4222")).toEqual({ url: "nats://127.0.0.1:4222", credentials: { token: "tok-123" } });
    expect(splitUrlCredentials("alice:p%40ss%3Aw@host:1")).toEqual({ url: "host:1", credentials: { user: "alice", pass: "p@ss:w" } });
    expect(splitUrlCredentials("nats://127.0.0.1:4222")).toEqual({ url: "nats://127.0.0.1:4222" });
    expect(splitUrlCredentials("nats://127.0.0.1:4222/cl@x")).toEqual({ url: "nats://127.0.0.1:4222/cl@x" });
  });

  it("log in in place of the environment's, and explicit options win over them", () => {
    const env = { NATS_USER: "env-user", NATS_PASSWORD: "env-pass" };
    const fromUrl = natsConnectionOptions({ servers: "nats://alice:s3cret@a:1", env });
    expect(fromUrl).toMatchObject({ servers: ["nats://a:1"], user: "alice", pass: "s3cret" });
    expect(fromUrl.token).toBeUndefined();
    expect(natsConnectionOptions({ servers: "nats://tok@a:1", env: {} })).toMatchObject({ servers: ["nats://a:1"], token: "tok" });
    expect(natsConnectionOptions({ env: { NATS_URL: "nats://alice:s3cret@a:1, nats://alice:s3cret@b:1" } })).toMatchObject({
      servers: ["nats://a:1", "nats://b:1"],
      user: "alice",
      pass: "s3cret",
    });
    const explicit = natsConnectionOptions({ servers: "nats://alice:s3cret@a:1", user: "bob", pass: "pw", env: {} });
    expect(explicit).toMatchObject({ servers: ["nats://a:1"], user: "bob", pass: "pw" });
    const token = natsConnectionOptions({ servers: "nats://alice:s3cret@a:1", token: "t", env: {} });
    expect(token.user).toBeUndefined();
    expect(token.token).toBe("t");
  });

  it("refuses servers whose URLs disagree on credentials, without printing them", () => {
    let error: unknown;
    try {
      natsConnectionOptions({ servers: "nats://alice:s3cret@a:1,nats://bob:hunter2@b:1", env: {} });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BadOptionError);
    expect((error as Error).message).toContain("nats://alice:***@a:1");
    expect((error as Error).message).not.toMatch(/s3cret|hunter2/);
  });

  it("are redacted in any text", () => {
    expect(redactUrls("at nats://alice:s3cret@127.0.0.1:4222/prod and tls://tok-123@h:1, nats://h:2")).toBe(
      "at nats://alice:***@127.0.0.1:4222/prod and tls://***@h:1, nats://h:2",
    );
  });
});

describe("a nats-server with --user/--pass", () => {
  let server: NatsServer;
  const processes: NatschedProcess[] = [];
  const url = () => `nats://alice:s3cret@127.0.0.1:${server.port}`;

  beforeAll(async () => {
    server = await NatsServer.start({ args: ["--user", "alice", "--pass", "s3cret"] });
  });

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop("SIGKILL")));
    await server?.dispose();
  });

  it("natsched scheduler and worker log in with the URL's credentials, so does Client.connect, and none prints the password", async () => {
    const scheduler = NatschedProcess.spawn("scheduler", ["scheduler", "--nats", url(), "--cluster", "creds", "--log", "jetstream"]);
    processes.push(scheduler);
    await scheduler.waitFor(/natsched scheduler: cluster creds/, 30_000);
    const worker = NatschedProcess.spawn("worker", ["worker", "--nats", url(), "--cluster", "creds", "--name", "w1", "--functions", FUNCTIONS]);
    processes.push(worker);
    await worker.waitFor(/registered/, 30_000);
    const client = await connectClient({ servers: url(), cluster: "creds", env: {} });
    try {
      expect(await client.submit<number>("inc", [41]).result({ timeout: 20_000 })).toBe(42);
    } finally {
      await client.close();
    }
    for (const p of processes) {
      expect(p.log).not.toContain("s3cret");
      // The password in the URL shows in `ps`: each process says so, and what to use instead.
      expect(p.log).toMatch(/^natsched (scheduler|worker): warning: a password in nats:\/\/alice:\*\*\*@127\.0\.0\.1:\d+ on the command line: it shows in `ps`.*NATS_PASSWORD.*NATS_TOKEN.*--creds <file>/m);
    }
  }, 60_000);

  it("the log tools read nats://alice:s3cret@host:port/<cluster>, or take --user/--password", async () => {
    const out: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(t) };
    expect(await runCli(["log", `${url()}/creds`], io)).toBe(0);
    expect(out.join("\n")).toMatch(/scheduler +\d+ records/);
    expect(out.join("\n")).toContain(`nats://alice:***@127.0.0.1:${server.port}/creds: format v1`);
    const plain = `nats://127.0.0.1:${server.port}/creds`;
    for (const command of [["log", plain], ["story", plain, "inc-nothing"], ["inspect", plain], ["replay", plain, "--actor", "scheduler"]]) {
      out.length = 0;
      const code = await runCli([...command, "--user", "alice", "--password", "s3cret"], io);
      expect(out.join("\n")).not.toMatch(/Authorization|cannot connect/);
      expect(code, `${command[0]}: ${out.join("\n")}`).toBe(command[0] === "story" ? 1 : 0);
    }
    // The flags win over the URL's credentials.
    out.length = 0;
    expect(await runCli(["log", `nats://alice:wrong@127.0.0.1:${server.port}/creds`, "--user", "alice", "--password", "s3cret"], io)).toBe(0);
    // Without credentials, or with wrong ones, the refusal shows no password.
    out.length = 0;
    expect(await runCli(["log", plain], io)).toBe(1);
    expect(out.join("\n")).toMatch(/cannot connect to NATS.*Authorization Violation/);
    out.length = 0;
    expect(await runCli(["replay", `nats://alice:wrong-secret@127.0.0.1:${server.port}/creds`], io)).toBe(1);
    expect(out.join("\n")).toMatch(/Authorization Violation/);
    expect(out.join("\n")).not.toContain("wrong-secret");
  }, 60_000);

  it("log export takes the flags, and connection errors name the server without its password", async () => {
    const reader = await openLogAt(`nats://127.0.0.1:${server.port}/creds`, { user: "alice", pass: "s3cret" });
    expect(reader.header.format).toBe("natsched-log");
    const out: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(t) };
    const target = `${server.storeDir}/exported.natlog`;
    expect(await runCli(["log", "export", `nats://127.0.0.1:${server.port}/creds`, target, "--user", "alice", "--password", "s3cret"], io)).toBe(0);
    await expect(exportLog(target, `${url()}/copy`)).resolves.toMatchObject({ to: `nats://127.0.0.1:${server.port}/copy` });
    const refused = await connectNats({ servers: `nats://alice:wrong-secret@127.0.0.1:${server.port}`, env: {} }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(NatschedError);
    expect((refused as Error).message).toMatch(/Authorization Violation/);
    expect((refused as Error).message).not.toContain("wrong-secret");
  }, 30_000);
});

describe("a nats-server with --auth <token>", () => {
  let server: NatsServer;

  beforeAll(async () => {
    server = await NatsServer.start({ args: ["--auth", "tok-123"] });
  });

  afterAll(async () => {
    await server?.dispose();
  });

  it("the scheduler, a worker, a client and the log tools log in with nats://tok-123@host:port", async () => {
    const url = `nats://tok-123@127.0.0.1:${server.port}`;
    const scheduler = await SchedulerProcess.start({ nats: { servers: url, env: {} }, cluster: "tok", log: { jetstream: true }, configFile: false, service: false });
    const worker = await WorkerProcess.start({ nats: { servers: url, env: {} }, cluster: "tok", name: "w1", nthreads: 1, functions: taskFunctions, configFile: false, service: false });
    const client = await connectClient({ servers: url, cluster: "tok", env: {} });
    try {
      expect(await client.submit<number>("inc", [1]).result({ timeout: 20_000 })).toBe(2);
    } finally {
      await client.close();
      await worker.close();
      await scheduler.close();
    }
    const out: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(t) };
    expect(await runCli(["replay", `${url}/tok`], io)).toBe(0);
    expect(out.join("\n")).not.toContain("tok-123");
    out.length = 0;
    expect(await runCli(["inspect", `nats://127.0.0.1:${server.port}/tok`, "--token", "tok-123"], io)).toBe(0);
    expect(out.join("\n")).toMatch(/scheduler/);
    out.length = 0;
    expect(await runCli(["log", `nats://wrong-token@127.0.0.1:${server.port}/tok`], io)).toBe(1);
    expect(out.join("\n")).toMatch(/Authorization Violation/);
    expect(out.join("\n")).not.toContain("wrong-token");
  }, 60_000);
});
