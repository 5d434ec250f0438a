/**
 * Retries and fire-and-forget on a real nats-server, the scheduler and a worker as
 * `natsched scheduler` / `natsched worker` run them, each logging to a file: a task failing
 * twice succeeds with retries=2, one whose retries run out fails with its last attempt's
 * message, a fired-and-forgotten task runs after its client closed and is forgotten once
 * done, and both logs replay.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { TaskFailedError } from "../machines/errors.js";
import { readLogSync } from "../log/index.js";
import { readReason } from "../machines/reasons.js";
import { replay } from "../replay/index.js";
import { startLoggedNatsCluster, type LoggedNatsCluster } from "./support/logged-nats-cluster.js";
import { until } from "./support/until.js";

const CLUSTER = "retries";
let cluster: LoggedNatsCluster;

/** Calls of `flaky` per name: it fails on its first `failures` calls for that name. */
const calls = new Map<string, number>();
/** What `record` saw: the side effect of a fired-and-forgotten task. */
const recorded: number[] = [];
let open!: () => void;
const opened = new Promise<void>((resolve) => (open = resolve));

beforeAll(async () => {
  const functions = {
    flaky: (name: string, failures: number) => {
      const n = (calls.get(name) ?? 0) + 1;
      calls.set(name, n);
      if (n <= failures) throw new Error(`${name} failed on call ${n}`);
      return `${name} ok on call ${n}`;
    },
    record: async (x: number) => {
      await opened;
      recorded.push(x);
      return x;
    },
  };
  cluster = await startLoggedNatsCluster(CLUSTER, functions);
}, 30_000);

afterAll(async () => {
  await cluster?.close();
});

describe("retries and fire-and-forget on NATS", () => {
  it("retries to success and to exhaustion, a task fired and forgotten by a client that closed, and the logs replay", async () => {
    const opts = cluster.clientOptions;
    const { scheduler, worker, schedulerLog, workerLog } = cluster;
    const client = await connectClient(opts);
    let fired: string;
    try {
      const x = client.submit<string>("flaky", ["x", 2], { retries: 2 });
      expect(await x.result({ timeout: 5000 })).toBe("x ok on call 3");
      const err = await client
        .submit("flaky", ["z", 9], { retries: 1 })
        .result({ timeout: 5000 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TaskFailedError);
      expect((err as Error).message).toContain("z failed on call 2");
      const f = client.submit<number>("record", [5]);
      fired = f.key;
      await client.fireAndForget(f);
      await until(() => scheduler.actor.core.tasks.get(fired)?.state === "processing.assigned", 5000);
    } finally {
      await client.close();
    }
    expect(scheduler.actor.core.tasks.has(fired)).toBe(true);
    open();
    await until(() => recorded.length === 1 && scheduler.actor.core.tasks.size === 0 && worker.actor.core.tasks.size === 0, 5000);
    expect(recorded).toEqual([5]);
    await worker.close();
    await scheduler.close();
    const { records } = readLogSync(schedulerLog);
    expect(records.some((r) => r.kind === "input" && r.event.op === "fire-and-forget")).toBe(true);
    const tries = records.filter((r) => r.kind === "transition" && r.machine === "task" && readReason(r).kind === "retry");
    expect(tries).toHaveLength(3);
    for (const path of [schedulerLog, workerLog]) expect((await replay(path)).ok, path).toBe(true);
  }, 30_000);
});
