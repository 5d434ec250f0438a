/**
 * The permissions docs/nats.md ("Connection options and authentication") lists are enough:
 * a user allowed exactly those subjects runs a scheduler and a worker with their event logs
 * in JetStream, a client computes, and the log tools read the log back.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { replayAt } from "../replay/jetstream-open.js";
import * as tasks from "./support/cluster-tasks.js";

const { default: _default, ...taskFunctions } = tasks;
import { NatsServer } from "./support/nats-server.js";

const CLUSTER = "perm";
const STREAM = `NATSCHED_LOG_${CLUSTER}`;
// As listed in docs/nats.md.
const PUBLISH = [
  `natsched.${CLUSTER}.>`,
  "_INBOX.>",
  "$SRV.>",
  "$JS.API.INFO",
  `$JS.API.STREAM.INFO.${STREAM}`,
  `$JS.API.STREAM.CREATE.${STREAM}`,
  `$JS.API.STREAM.MSG.GET.${STREAM}`,
  `$JS.API.CONSUMER.CREATE.${STREAM}`,
  `$JS.API.CONSUMER.CREATE.${STREAM}.>`,
  `$JS.API.CONSUMER.MSG.NEXT.${STREAM}.>`,
  `$JS.API.CONSUMER.INFO.${STREAM}.>`,
  `$JS.API.CONSUMER.DELETE.${STREAM}.>`,
];
const SUBSCRIBE = [`natsched.${CLUSTER}.>`, "_INBOX.>", "$SRV.>"];

let server: NatsServer;

beforeAll(async () => {
  const list = (subjects: string[]) => subjects.map((s) => JSON.stringify(s)).join(", ");
  server = await NatsServer.start({
    config: `authorization { users: [ { user: "natsched", password: "pw", permissions: { publish: [${list(PUBLISH)}], subscribe: [${list(SUBSCRIBE)}] } } ] }\n`,
  });
});

afterAll(async () => {
  await server?.dispose();
});

describe("a NATS user with only the documented permissions", () => {
  it("runs a scheduler and a worker logging to JetStream, a client, and the log tools", async () => {
    const url = `nats://natsched:pw@127.0.0.1:${server.port}`;
    const errors: string[] = [];
    const onError = (error: unknown) => errors.push(String((error as Error)?.message ?? error));
    const nats = { servers: url, env: {} };
    const scheduler = await SchedulerProcess.start({ nats, cluster: CLUSTER, log: { jetstream: true }, configFile: false, onError });
    const worker = await WorkerProcess.start({ nats, cluster: CLUSTER, name: "w1", nthreads: 1, functions: taskFunctions, configFile: false, log: { jetstream: true }, onError });
    const client = await connectClient({ ...nats, cluster: CLUSTER });
    try {
      expect(await client.compute({ x: ["inc", 1], y: ["add", "x", 10] }, { timeout: 10_000 })).toEqual({ x: 2, y: 12 });
    } finally {
      await client.close();
      await worker.close();
      await scheduler.close();
    }
    const result = await replayAt(`${url}/${CLUSTER}`);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(errors.filter((e) => /permission/i.test(e))).toEqual([]);
    expect(server.log).not.toMatch(/Permissions Violation/);
  }, 60_000);
});
