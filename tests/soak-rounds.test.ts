/**
 * The SOAK benchmark's rounds (bench/soak-round.ts), small and embedded, as a correctness
 * check: clients share pure keys, fail tasks, depend on failed tasks, scatter, release and
 * submit again (a failed key several times), then leave, some without releasing. After each
 * round every future has resolved or failed as it should within its timeout, and once the
 * cluster is idle no actor holds a task record, a stored key or a client. Nothing is timed
 * and the heap is not looked at: `npm run bench -- --workload SOAK` measures that.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LocalCluster } from "../index.js";
import { FUNCTIONS } from "../bench/functions.js";
import { runRound, SMALL_SHAPE, type RoundOutcome } from "../bench/soak-round.js";

const ROUNDS = 4;
/** Per phase of a client's round; the rounds take milliseconds, a future still pending after this never ends. */
const FUTURE_TIMEOUT_MS = 5_000;

const clusters: LocalCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function idle(cluster: LocalCluster, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    await cluster.flush();
    const core = cluster.scheduler.core;
    if (core.tasks.size === 0 && core.clients.size === 0 && [...cluster.workers.values()].every((w) => w.core.executing === 0)) return true;
    if (Date.now() > deadline) return false;
    await sleep(5);
  }
}

/** What must be zero once a round is over and the cluster idle. */
function leftOver(cluster: LocalCluster): Record<string, number | Record<string, number>> {
  const out: Record<string, number | Record<string, number>> = {
    "scheduler tasks": cluster.scheduler.core.tasks.size,
    "scheduler clients": cluster.scheduler.core.clients.size,
  };
  for (const [name, w] of cluster.workers) {
    const states: Record<string, number> = {};
    for (const ts of w.core.tasks.values()) states[ts.state] = (states[ts.state] ?? 0) + 1;
    out[`${name} task records`] = states;
    out[`${name} stored keys`] = w.store.size;
  }
  return out;
}

function problems(o: RoundOutcome): { hung: string[]; wrong: string[]; clientErrors: string[] } {
  return { hung: o.samples.hung, wrong: o.samples.wrong, clientErrors: o.clientErrors };
}

describe("SOAK rounds, embedded", () => {
  it(`${ROUNDS} rounds of clients that come and go: every future settles, and nothing is left once idle`, async () => {
    const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 2, functions: FUNCTIONS, log: false, configFile: false });
    clusters.push(cluster);
    const host = {
      client: async () => {
        const client = cluster.client();
        await client.connect();
        return client;
      },
    };
    const nothing = leftOver(cluster);
    for (let round = 1; round <= ROUNDS; round++) {
      const outcome = await runRound(host, round, SMALL_SHAPE, FUTURE_TIMEOUT_MS);
      const wentIdle = await idle(cluster);
      // One comparison, so that a failure shows the hangs and what was left together.
      expect({ round, ...problems(outcome), idle: wentIdle, left: leftOver(cluster) }).toEqual({ round, hung: [], wrong: [], clientErrors: [], idle: true, left: nothing });
      expect(outcome.futures).toBe(outcome.ok + outcome.failed);
      expect(outcome.failed).toBeGreaterThan(0);
    }
  }, 60_000);
});
