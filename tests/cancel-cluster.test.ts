/**
 * Cancel on LocalCluster (client.cancel, future.cancel; docs/protocol.md, "Cancel"): a task
 * processing on a worker, waiting for a dependency, or queued on the scheduler; the futures
 * of its dependents; a key another client wants; the key submitted again; and the log of it
 * all replayed.
 */
import { afterEach, describe, expect, it } from "vitest";
import { CancelledError, LocalCluster, MemoryLogSink, readReason, replay, type LocalClusterOptions } from "../index.js";
import type { InputRecord, TransitionRecord } from "../log/types.js";
import { explainReasons } from "../tools/story-reasons.js";
import { rejection } from "./errors-helpers.js";
import { untilFlushed } from "./support/until.js";

const clusters: LocalCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});

/** Promises the test opens by hand: a task function that awaits one runs until the test says. */
class Gates {
  private readonly open = new Map<number, () => void>();
  private readonly waiting = new Map<number, Promise<void>>();
  started: number[] = [];

  gate(n: number): Promise<void> {
    let promise = this.waiting.get(n);
    if (promise === undefined) {
      promise = new Promise<void>((resolve) => this.open.set(n, resolve));
      this.waiting.set(n, promise);
    }
    return promise;
  }

  release(n: number): void {
    void this.gate(n);
    this.open.get(n)!();
  }
}

async function start(gates: Gates, opts: Partial<LocalClusterOptions> = {}): Promise<{ cluster: LocalCluster; log: MemoryLogSink }> {
  const log = new MemoryLogSink();
  const cluster = await LocalCluster.start({
    log,
    configFile: false,
    workers: [{ name: "a", nthreads: 1 }],
    functions: {
      inc: (x: number) => x + 1,
      add: (a: number, b: number) => a + b,
      /** Runs until gate `n` opens, on the worker's loop (an async function: Dask's would be stuck in a thread). */
      held: async (n: number) => {
        gates.started.push(n);
        await gates.gate(n);
        return n;
      },
    },
    ...opts,
  });
  clusters.push(cluster);
  return { cluster, log };
}

function transitions(log: MemoryLogSink, actor: string, key: string): TransitionRecord[] {
  return log.records.filter((r): r is TransitionRecord => r.kind === "transition" && r.actor === actor && r.id === key);
}

describe("cancel on LocalCluster", () => {
  it("a task processing on a worker: its future rejects at once, the worker frees it and drops its outcome, dependents reject too", async () => {
    const gates = new Gates();
    const { cluster, log } = await start(gates);
    const client = cluster.client();
    const x = client.submit<number>("held", [1]);
    const y = client.submit<number>("inc", [x]);
    const result = x.result();
    const dependent = y.result();
    await untilFlushed(cluster, () => gates.started.includes(1));
    const cancelled = x.cancel();
    // Rejected before the scheduler has even heard of it, and the dependent's future with it.
    expect(x.status).toBe("cancelled");
    expect(y.status).toBe("cancelled");
    const error = await rejection(result);
    expect(error).toBeInstanceOf(CancelledError);
    expect(error).toMatchObject({ code: "CANCELLED", message: `task ${x.key} was cancelled (by its client)` });
    expect(await rejection(dependent)).toMatchObject({ code: "CANCELLED", message: `task ${y.key} was cancelled (its dependency ${x.key} was cancelled)` });
    await cancelled;
    await cluster.flush();
    // The scheduler forgot both, recording why; the worker was told to free x while it ran.
    expect(cluster.scheduler.core.tasks.has(x.key)).toBe(false);
    expect(cluster.scheduler.core.tasks.has(y.key)).toBe(false);
    const release = transitions(log, "scheduler", x.key).find((r) => r.event === "RELEASE");
    expect(release).toMatchObject({ from: "processing.assigned", to: "released", why: { rule: "cancelled", client: client.id } });
    expect(readReason(release!, true)).toEqual({ kind: "cancelled", why: { rule: "cancelled", client: client.id } });
    expect(explainReasons(release!)).toEqual([`a client cancelled it, or a task it cancelled no longer needs it (client=${client.id})`]);
    expect(transitions(log, "scheduler", y.key).find((r) => r.event === "RELEASE")).toMatchObject({ from: "waiting", why: { rule: "cancelled", client: client.id } });
    expect(transitions(log, "worker.a", x.key).map((r) => `${r.from}>${r.to}`)).toContain("executing>cancelled");
    const input = log.records.find((r): r is InputRecord => r.kind === "input" && r.actor === "scheduler" && r.event.op === "cancel-keys");
    expect(input?.event).toMatchObject({ client: client.id, keys: [x.key, y.key] });
    // The function ends; its result is dropped, and the worker is free for the next task.
    gates.release(1);
    expect(await client.submit<number>("inc", [41]).result()).toBe(42);
    await untilFlushed(cluster, () => !cluster.workers.get("a")!.core.tasks.has(x.key));
    expect(cluster.workers.get("a")!.store.has(x.key)).toBe(false);
    // Submitted again, it computes.
    const again = client.submit<number>("held", [1]);
    expect(again.key).toBe(x.key);
    expect(x.status).toBe("pending");
    gates.release(1);
    expect(await again.result()).toBe(1);
    expect(await x.result()).toBe(1);
    await cluster.close();
    const replayed = await replay(log.records);
    expect(replayed.ok).toBe(true);
  });

  it("a waiting task: cancelled alone, what it waited for goes on", async () => {
    const gates = new Gates();
    const { cluster, log } = await start(gates);
    const client = cluster.client();
    const x = client.submit<number>("held", [2]);
    const y = client.submit<number>("inc", [x]);
    await untilFlushed(cluster, () => cluster.scheduler.core.tasks.get(y.key)?.state === "waiting");
    await client.cancel([y]);
    expect(await rejection(y.result())).toMatchObject({ code: "CANCELLED" });
    expect(x.status).toBe("pending");
    expect(cluster.scheduler.core.tasks.has(y.key)).toBe(false);
    gates.release(2);
    expect(await x.result()).toBe(2);
    expect(transitions(log, "scheduler", y.key).map((r) => r.to)).toEqual(["waiting", "released", "forgotten"]);
  });

  it("a queued task: dropped from the queue, the others run", async () => {
    const gates = new Gates();
    const { cluster } = await start(gates);
    const client = cluster.client();
    const futures = client.map<number>("held", [10, 11, 12, 13, 14, 15]);
    await untilFlushed(cluster, () => futures.some((f) => cluster.scheduler.core.tasks.get(f.key)?.state === "queued"));
    const queued = futures.filter((f) => cluster.scheduler.core.tasks.get(f.key)?.state === "queued");
    const victim = queued[queued.length - 1]!;
    await victim.cancel();
    expect(await rejection(victim.result())).toMatchObject({ code: "CANCELLED" });
    expect(cluster.scheduler.core.tasks.has(victim.key)).toBe(false);
    expect(cluster.scheduler.core.queued.size).toBe(queued.length - 1);
    for (const n of [10, 11, 12, 13, 14, 15]) gates.release(n);
    const rest = futures.filter((f) => f !== victim);
    expect(await client.gather(rest)).toEqual(rest.map((f) => Number(futures.indexOf(f)) + 10));
  });

  it("a key another client wants goes on for it, as Dask's cancel without force", async () => {
    const gates = new Gates();
    const { cluster } = await start(gates);
    const alice = cluster.client();
    const bob = cluster.client();
    await bob.connect();
    const a = alice.submit<number>("held", [3]);
    await untilFlushed(cluster, () => gates.started.includes(3));
    const b = bob.submit<number>("held", [3]);
    expect(b.key).toBe(a.key);
    await untilFlushed(cluster, () => cluster.scheduler.core.tasks.get(a.key)?.whoWants?.size === 2);
    await alice.cancel(a);
    expect(a.status).toBe("cancelled");
    expect(cluster.scheduler.core.tasks.get(a.key)?.state).toBe("processing.assigned");
    gates.release(3);
    expect(await b.result()).toBe(3);
    expect(await rejection(a.result())).toMatchObject({ code: "CANCELLED" });
  });

  it("refuses what is not a future of this client", async () => {
    const gates = new Gates();
    const { cluster } = await start(gates);
    const client = cluster.client();
    const other = cluster.client().submit("inc", [1]);
    await expect(client.cancel([other])).rejects.toMatchObject({ code: "BAD_OPTION" });
    await expect(client.cancel("x" as never)).rejects.toMatchObject({ code: "BAD_OPTION" });
  });
});
