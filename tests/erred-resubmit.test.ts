/**
 * A failed key submitted again, after the clients that wanted it released it or left, fails
 * again with TaskFailedError instead of waiting for ever; and the workers forget a failed
 * task once nobody wants it (issue 20, item 1), on the embedded cluster.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LocalCluster, TaskFailedError, type LocalClusterOptions } from "../index.js";
import { untilFlushed } from "./support/until.js";

const clusters: LocalCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});

async function start(opts: Partial<LocalClusterOptions> = {}): Promise<LocalCluster> {
  const cluster = await LocalCluster.start({
    log: false,
    configFile: false,
    workers: 1,
    functions: {
      fail: (x: number) => {
        throw new Error(`boom ${x}`);
      },
      inc: (x: number) => x + 1,
    },
    ...opts,
  });
  clusters.push(cluster);
  return cluster;
}

/** Task records the worker cores hold, and results their stores hold, over the cluster. */
function heldByWorkers(cluster: LocalCluster): { records: number; stored: number } {
  let records = 0;
  let stored = 0;
  for (const worker of cluster.workers.values()) {
    records += worker.core.tasks.size;
    stored += worker.store.size;
  }
  return { records, stored };
}

describe("a failed pure key submitted again", () => {
  it("fails again for each of three clients in turn, each leaving before the next submits; the worker keeps nothing", async () => {
    const cluster = await start();
    for (let i = 0; i < 3; i++) {
      const client = cluster.client();
      const err = await client
        .submit("fail", [42])
        .result({ timeout: 3000 })
        .catch((e: unknown) => e);
      expect(err, `client ${i}`).toBeInstanceOf(TaskFailedError);
      expect((err as TaskFailedError).message).toContain("boom 42");
      await client.close();
    }
    await untilFlushed(cluster, () => cluster.scheduler.core.tasks.size === 0 && heldByWorkers(cluster).records === 0);
  });

  it("rounds of tasks, some failing, by clients that release them or leave: every future settles and nothing is left behind", async () => {
    const cluster = await start({ workers: 2 });
    for (let round = 0; round < 4; round++) {
      const client = cluster.client();
      // The same failing keys every round, some shared by two futures of this client.
      const ok = client.map<number>("inc", Array.from({ length: 20 }, (_, i) => i + round));
      const bad = client.map("fail", [1, 2, 3, 1]);
      expect(await client.gather(ok, { timeout: 3000 })).toEqual(Array.from({ length: 20 }, (_, i) => i + round + 1));
      for (const f of bad) await expect(f.result({ timeout: 3000 })).rejects.toBeInstanceOf(TaskFailedError);
      if (round % 2 === 0) {
        for (const f of [...ok, ...bad]) f.release();
      }
      await client.close();
    }
    await untilFlushed(cluster, () => cluster.scheduler.core.tasks.size === 0 && heldByWorkers(cluster).records === 0);
    expect(heldByWorkers(cluster)).toEqual({ records: 0, stored: 0 });
  });
});
