/**
 * The SOAK workload's embedded cluster: a LocalCluster in this process, clients from
 * `cluster.client()` as an application makes them, counts read from the actors directly,
 * and the heap of the whole process (cluster, clients and the benchmark) after a full GC.
 */
import { LocalCluster } from "../index.js";
import { FUNCTIONS } from "./functions.js";
import { sleep } from "./lib.js";
import type { SoakHost } from "./soak-round.js";
import { heapAfterGcMB, localClusterTables, schedulerCounts, workerCounts } from "./soak-tables.js";
import type { SoakSnapshot } from "./soak-verdict.js";

export interface SoakCluster extends SoakHost {
  /** Waits until the scheduler holds no task and no client and nothing runs; false after `timeoutMs`. */
  waitIdle(timeoutMs: number): Promise<boolean>;
  /** Counts of every actor (no GC). */
  counts(): Promise<SoakSnapshot["actors"]>;
  /** Counts of every actor and the heap after GC of every process. */
  snapshot(idle: boolean): Promise<SoakSnapshot>;
  close(): Promise<void>;
}

export interface SoakClusterOptions {
  workers: number;
  threadsPerWorker: number;
  /** The event log: a file path, or false. */
  log: string | false;
}

export async function startEmbeddedSoak(o: SoakClusterOptions): Promise<SoakCluster> {
  const cluster = await LocalCluster.start({
    workers: o.workers,
    threadsPerWorker: o.threadsPerWorker,
    functions: FUNCTIONS,
    log: o.log === false ? false : { path: o.log },
    configFile: false,
  });
  const counts = (): SoakSnapshot["actors"] => {
    const actors: SoakSnapshot["actors"] = { scheduler: schedulerCounts(cluster.scheduler) };
    for (const [name, w] of cluster.workers) actors[name] = workerCounts(w);
    return actors;
  };
  const quiet = (): boolean => {
    const core = cluster.scheduler.core;
    if (core.tasks.size > 0 || core.clients.size > 0) return false;
    for (const w of cluster.workers.values()) if (w.core.executing > 0) return false;
    return true;
  };
  return {
    async client() {
      const client = cluster.client();
      await client.connect();
      return client;
    },
    async waitIdle(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        await cluster.flush();
        if (quiet()) return true;
        if (Date.now() > deadline) return false;
        await sleep(5);
      }
    },
    async counts() {
      await cluster.flush();
      return counts();
    },
    async snapshot(idle) {
      await cluster.flush();
      return { actors: counts(), host: localClusterTables(cluster), heapMB: { process: heapAfterGcMB() }, idle };
    },
    close: () => cluster.close(),
  };
}
