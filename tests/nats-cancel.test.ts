/**
 * Cancel on a real nats-server (docs/protocol.md, "Cancel"), the scheduler and a worker as
 * `natsched scheduler` / `natsched worker` run them, each logging to a file: a task running
 * on the worker is cancelled with its dependent (the futures reject at once, the worker frees
 * it), a key another client wants goes on for it, the key submitted again computes, and both
 * logs replay.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../actors/process/connect-client.js";
import { CancelledError } from "../machines/errors.js";
import { readLogSync } from "../log/index.js";
import { replay } from "../replay/index.js";
import { startLoggedNatsCluster, type LoggedNatsCluster } from "./support/logged-nats-cluster.js";
import { until } from "./support/until.js";

const CLUSTER = "cancel";
let cluster: LoggedNatsCluster;

/** A function that runs until the test opens its gate (on the worker's loop). */
const gates = new Map<number, { open: () => void; promise: Promise<void> }>();
const started: number[] = [];
function gate(n: number): { open: () => void; promise: Promise<void> } {
  let g = gates.get(n);
  if (g === undefined) {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    gates.set(n, (g = { open, promise }));
  }
  return g;
}

beforeAll(async () => {
  const functions = {
    inc: (x: number) => x + 1,
    held: async (n: number) => {
      started.push(n);
      await gate(n).promise;
      return n;
    },
  };
  cluster = await startLoggedNatsCluster(CLUSTER, functions);
}, 30_000);

afterAll(async () => {
  await cluster?.close();
});

describe("cancel on NATS", () => {
  it("cancels a running task and its dependent, leaves another client's key alone, computes the key again, and the logs replay", async () => {
    const opts = cluster.clientOptions;
    const { scheduler, worker, schedulerLog, workerLog } = cluster;
    const alice = await connectClient(opts);
    const bob = await connectClient(opts);
    try {
      const x = alice.submit<number>("held", [1]);
      const y = alice.submit<number>("inc", [x]);
      const shared = alice.submit<number>("held", [2]);
      const theirs = bob.submit<number>("held", [2]);
      const results = [x.result(), y.result()].map((p) => p.catch((e: unknown) => e));
      await until(() => started.includes(1) && started.includes(2) && scheduler.actor.core.tasks.get(shared.key)?.whoWants?.size === 2, 5000);
      const cancelled = alice.cancel([x, shared]);
      // Rejected before the scheduler answers.
      expect([x.status, y.status, shared.status]).toEqual(["cancelled", "cancelled", "cancelled"]);
      await cancelled;
      for (const error of await Promise.all(results)) expect(error).toBeInstanceOf(CancelledError);
      // x is freed on the worker while its function still runs; the shared key goes on for bob.
      await until(() => !scheduler.actor.core.tasks.has(x.key) && worker.actor.core.tasks.get(x.key)?.state === "cancelled", 5000);
      expect(scheduler.actor.core.tasks.has(y.key)).toBe(false);
      gate(2).open();
      expect(await theirs.result({ timeout: 5000 })).toBe(2);
      gate(1).open();
      await until(() => !worker.actor.core.tasks.has(x.key), 5000);
      expect(worker.actor.store.has(x.key)).toBe(false);
      // Submitted again: computed afresh.
      expect(await alice.submit<number>("inc", [alice.submit<number>("held", [1])]).result({ timeout: 5000 })).toBe(2);
    } finally {
      await alice.close();
      await bob.close();
    }
    await worker.close();
    await scheduler.close();
    const { records } = readLogSync(schedulerLog);
    expect(records.some((r) => r.kind === "input" && r.event.op === "cancel-keys")).toBe(true);
    expect(records.some((r) => r.kind === "transition" && r.machine === "task" && r.event === "RELEASE" && (r.why as { rule?: string } | undefined)?.rule === "cancelled")).toBe(true);
    for (const path of [schedulerLog, workerLog]) expect((await replay(path)).ok, path).toBe(true);
  }, 30_000);
});
