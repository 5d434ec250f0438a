/**
 * Observability of stealing (docs/stealing.md, "Observability"): every request, confirm,
 * reject and abort is a transition whose reasons carry the request id, the level, the
 * estimated costs and the occupancies that justified it; the per-level counters add up and
 * the scheduler's status query returns them.
 */
import { describe, expect, it } from "vitest";
import { answerQuery } from "../actors/scheduler-queries.js";
import { LEVELS } from "../machines/scheduler/stealing.js";
import { readReason, type StealRequestWhy } from "../machines/reasons.js";
import { MiniCluster } from "./steal-mini-cluster.js";

const REASONS: (keyof StealRequestWhy)[] = ["victim", "thief", "level", "requestId", "compute", "commVictim", "commThief", "occVictim", "occThief"];

/** a, b and c with one thread each; f-0..f-3 pinned loosely on a, known to take 1 s. */
function pinnedOnA(): MiniCluster {
  const cluster = new MiniCluster({ defaultTaskDurations: { f: 1 } });
  for (const w of ["a", "b", "c"]) cluster.addWorker(w);
  cluster.submit(Array.from({ length: 4 }, (_, i) => ({ key: `f-${i}`, workers: ["a"], allowOtherWorkers: true })));
  cluster.deliverToWorkers();
  return cluster;
}

const stealTransitions = (cluster: MiniCluster, key: string) => cluster.transitions.filter((r) => r.actor === "scheduler" && r.id === key && r.from.startsWith("processing"));

describe("steal reasons in the log", () => {
  it("request, reject, confirm and abort each carry the request's id, level, costs and occupancies", () => {
    const cluster = pinnedOnA();
    cluster.moveTaskRequest("f-0", "a", "b"); // executing on a: rejected
    cluster.moveTaskRequest("f-1", "a", "b"); // ready on a: confirmed
    cluster.moveTaskRequest("f-2", "a", "c"); // aborted: a dies before answering
    cluster.deliverWhere("a", (op) => op.op === "steal-request" && op.key !== "f-2");
    cluster.deliverToScheduler();
    cluster.killWorker("a");
    const ends = ["f-0", "f-1", "f-2"].map((key) => stealTransitions(cluster, key).find((r) => r.from === "processing.stealing")!);
    expect(ends.map((r) => r.event)).toEqual(["STEAL_REJECT", "STEAL_CONFIRM", "RELEASE"]);
    for (const [i, r] of ends.entries()) {
      const request = readReason(stealTransitions(cluster, `f-${i}`).find((t) => t.event === "STEAL")!);
      const end = readReason(r, true);
      if (request.kind !== "steal-request") throw new Error(`f-${i}: the STEAL carries ${request.kind} reasons`);
      if (end.kind !== "steal-rejected" && end.kind !== "steal-confirmed" && end.kind !== "steal-aborted") throw new Error(`f-${i}: ${r.event} carries ${end.kind} reasons`);
      for (const field of REASONS) expect(end.why[field], `${r.event} ${field}`).toEqual(request.why[field]);
      expect(end.why.requestId).toBe(`steal-${i}`);
      expect(end.why.level).toBe(0);
    }
    expect(ends[0]!.why).toMatchObject({ outcome: "reject", state: "executing" });
    expect(ends[1]!.why).toMatchObject({ outcome: "confirm", state: "ready", worker: "b" });
    expect(ends[2]!.why).toMatchObject({ steal: "aborted", rule: "worker-left", worker: "a" });
  });

  it("a victim that no longer holds the assignment: the reschedule is an abort, with its cause", () => {
    const cluster = new MiniCluster({ defaultTaskDurations: { f: 1 } });
    cluster.addWorker("a");
    cluster.addWorker("b");
    cluster.submit([0, 1].map((i) => ({ key: `f-${i}`, workers: ["a"], allowOtherWorkers: true })));
    cluster.moveTaskRequest("f-1", "a", "b");
    cluster.deliverWhere("a", (op) => op.op === "steal-request"); // overtakes f-1's compute-task
    cluster.deliverToScheduler();
    const end = stealTransitions(cluster, "f-1").find((r) => r.from === "processing.stealing")!;
    expect(end.event).toBe("RELEASE");
    expect(end.why).toMatchObject({ steal: "aborted", rule: "steal-reschedule", cause: "victim-released", outcome: "reject", state: "released", requestId: "steal-0", level: 0 });
    expect(cluster.scheduler.stealing!.metrics.aborted[0]).toBe(1);
  });
});

describe("steal counters", () => {
  it("per level, requests = confirmed + rejected + aborted + in flight; the status query returns them", () => {
    const cluster = pinnedOnA();
    cluster.moveTaskRequest("f-0", "a", "b");
    cluster.moveTaskRequest("f-1", "a", "b");
    cluster.moveTaskRequest("f-2", "a", "c");
    cluster.moveTaskRequest("f-3", "a", "c");
    cluster.deliverWhere("a", (op) => op.op === "steal-request" && (op.key === "f-0" || op.key === "f-1"));
    cluster.deliverToScheduler();
    cluster.feed({ op: "release-keys", client: "c", keys: ["f-2"] }); // aborted: released while in flight
    const status = answerQuery(cluster.scheduler, { op: "status" }) as { stealing: Record<string, unknown> };
    const zeros = (at0: number) => [at0, ...new Array(LEVELS - 1).fill(0)];
    expect(status.stealing).toEqual({ requests: zeros(4), confirmed: zeros(1), rejected: zeros(1), aborted: zeros(1), stale: 0, inFlight: 1 });
    cluster.runToCompletion();
    const after = answerQuery(cluster.scheduler, { op: "status" }) as { stealing: Record<string, number[] | number> };
    expect(after.stealing).toMatchObject({ requests: zeros(4), confirmed: zeros(2), inFlight: 0 });
    const m = cluster.scheduler.stealing!.metrics;
    for (let level = 0; level < LEVELS; level++) expect(m.requests[level]).toBe(m.confirmed[level]! + m.rejected[level]! + m.aborted[level]!);
  });

  it("is null in the status answer when stealing is off", () => {
    const cluster = new MiniCluster({ workStealing: false });
    expect((answerQuery(cluster.scheduler, { op: "status" }) as { stealing: unknown }).stealing).toBeNull();
  });
});
