/**
 * The transactional steal, race by race, on the scheduler and worker cores wired by hand
 * (tests/steal-mini-cluster.ts) so each message arrives exactly when the test says. Ports
 * of Dask's test_steal.py races that need a precise interleaving; docs/dask-tests-ported.md.
 */
import { describe, expect, it } from "vitest";
import { correctionsAreZero, MiniCluster } from "./steal-mini-cluster.js";

/** a and b (and c) with one thread each; `n` tasks f-0.. pinned loosely on a, known to take 1 s. */
function pinnedOnA(n: number, workers = ["a", "b"]): MiniCluster {
  const cluster = new MiniCluster({ defaultTaskDurations: { f: 1 } });
  for (const w of workers) cluster.addWorker(w);
  cluster.submit(Array.from({ length: n }, (_, i) => ({ key: `f-${i}`, workers: ["a"], allowOtherWorkers: true })));
  cluster.deliverToWorkers();
  return cluster;
}

const isSteal = (m: { op: { op: string } }) => m.op.op === "steal-response";

describe("the victim's answer", () => {
  it("test_dont_steal_executing_tasks_2: a task already executing is rejected and stays; stealRequest is cleared", () => {
    const cluster = pinnedOnA(1);
    expect(cluster.runningOn("a")).toEqual(["f-0"]);
    expect(cluster.moveTaskRequest("f-0", "a", "b")).toBe("steal-0");
    expect(cluster.task("f-0")).toMatchObject({ state: "processing.stealing", stealRequest: "steal-0" });
    cluster.settle();
    expect(cluster.story("f-0")).toEqual(["ASSIGN released->processing.assigned", "STEAL processing.assigned->processing.stealing", "STEAL_REJECT processing.stealing->processing.assigned"]);
    // The bug this pins: the request id outlived the rejection.
    expect(cluster.task("f-0")).toMatchObject({ state: "processing.assigned", stealRequest: null });
    expect(cluster.task("f-0").processingOn!.name).toBe("a");
    expect(cluster.workers.get("a")!.tasks.get("f-0")!.state).toBe("executing");
    expect(cluster.workers.get("b")!.tasks.size).toBe(0);
    expect(cluster.scheduler.stealing!.metrics.rejected[0]).toBe(1);
    expect(correctionsAreZero(cluster)).toBe(true);
    cluster.runToCompletion();
    expect(cluster.executions).toEqual(["a:f-0"]);
  });

  it("a task not started yet is confirmed: cancelled on the victim, then sent to the thief, run once", () => {
    const cluster = pinnedOnA(2);
    cluster.moveTaskRequest("f-1", "a", "b");
    cluster.settle();
    expect(cluster.story("f-1")).toEqual(["ASSIGN released->processing.assigned", "STEAL processing.assigned->processing.stealing", "STEAL_CONFIRM processing.stealing->processing.assigned"]);
    expect(cluster.task("f-1")).toMatchObject({ stealRequest: null });
    expect(cluster.task("f-1").processingOn!.name).toBe("b");
    expect(cluster.transitions.filter((r) => r.actor === "a" && r.id === "f-1").map((r) => r.event)).toEqual(["READY", "STEAL"]);
    cluster.runToCompletion();
    expect(cluster.executions.sort()).toEqual(["a:f-0", "b:f-1"]);
    expect(cluster.scheduler.stealing!.metrics.confirmed[0]).toBe(1);
  });

  it("test_dont_steal_already_released: a worker asked about a task it no longer has answers reject with state released", () => {
    const cluster = pinnedOnA(2);
    cluster.moveTaskRequest("f-1", "a", "b");
    // The client releases f-1 while the request is on its way: free-keys goes out after it.
    cluster.feed({ op: "release-keys", client: "c", keys: ["f-1"] });
    expect(cluster.scheduler.tasks.has("f-1")).toBe(false);
    // The victim sees the steal request first (it still has f-1 ready: confirm), then the free-keys.
    cluster.deliverToWorkers("a");
    expect(cluster.pending(isSteal).map((m) => m.op)).toEqual([expect.objectContaining({ key: "f-1", outcome: "confirm", state: "ready" })]);
    // Dask's "Key released between request and confirm": a stale answer, nothing happens.
    cluster.deliverToScheduler();
    expect(cluster.scheduler.stealing!.metrics.stale).toBe(1);
    expect(cluster.scheduler.stealing!.inFlight.size).toBe(0);
    expect(correctionsAreZero(cluster)).toBe(true);
    // Asked again now that it has forgotten the key: reject, state released.
    cluster.workers.get("a")!.handle({ op: "steal-request", key: "f-1", requestId: "late", t: 1000 });
    expect(cluster.pending(isSteal).map((m) => m.op)).toEqual([expect.objectContaining({ key: "f-1", requestId: "late", outcome: "reject", state: "released" })]);
    cluster.runToCompletion();
    expect(cluster.executions).toEqual(["a:f-0"]);
  });
});

describe("requests and answers that race", () => {
  it("test_steal_concurrent_simple: a second request for the same task is refused; the first wins", () => {
    const cluster = pinnedOnA(3, ["a", "b", "c"]);
    expect(cluster.moveTaskRequest("f-2", "a", "b")).toBe("steal-0");
    expect(cluster.moveTaskRequest("f-2", "a", "c")).toBeNull();
    expect(cluster.scheduler.stealing!.inFlight.size).toBe(1);
    cluster.runToCompletion();
    expect(cluster.executions).toContain("b:f-2");
    expect(cluster.executions.filter((e) => e.startsWith("c:"))).toEqual([]);
    expect(cluster.executions.filter((e) => e.endsWith(":f-2"))).toHaveLength(1);
  });

  it("test_steal_stimulus_id_unique: 1000 requests in a row get 1000 distinct ids", () => {
    const cluster = pinnedOnA(1000);
    const ids = Array.from({ length: 1000 }, (_, i) => cluster.moveTaskRequest(`f-${i}`, "a", "b"));
    // f-0 is executing on a but still processing there: the request goes out (and will be rejected).
    expect(new Set(ids).size).toBe(1000);
    expect([...cluster.scheduler.stealing!.inFlight.values()].map((i) => i.requestId).sort()).toEqual([...ids].sort());
    cluster.settle();
    expect(cluster.scheduler.stealing!.inFlight.size).toBe(0);
    expect(correctionsAreZero(cluster)).toBe(true);
  });

  it("a duplicated answer, and an answer carrying another request's id, change nothing", () => {
    const cluster = pinnedOnA(2);
    cluster.moveTaskRequest("f-1", "a", "b");
    cluster.deliverToWorkers("a");
    const [answer] = cluster.pending(isSteal);
    // A forged answer to an older request for the same task arrives first: stale, the request stays in flight.
    cluster.feed({ ...(answer!.op as object), requestId: "steal-99" } as never);
    expect(cluster.task("f-1").state).toBe("processing.stealing");
    expect(cluster.scheduler.stealing!.metrics.stale).toBe(1);
    cluster.deliverToScheduler(isSteal);
    expect(cluster.task("f-1").processingOn!.name).toBe("b");
    const before = cluster.transitions.length;
    cluster.feed(answer!.op as never);
    expect(cluster.transitions.length).toBe(before);
    expect(cluster.scheduler.stealing!.metrics.stale).toBe(2);
    expect(cluster.task("f-1").processingOn!.name).toBe("b");
    cluster.runToCompletion();
    expect(cluster.executions.sort()).toEqual(["a:f-0", "b:f-1"]);
  });

  it("an answer from a previous incarnation of the victim is stale", () => {
    const cluster = pinnedOnA(2);
    cluster.moveTaskRequest("f-1", "a", "b");
    cluster.deliverToWorkers("a");
    const [answer] = cluster.pending(isSteal);
    cluster.feed({ ...(answer!.op as object), id: "a#0" } as never);
    expect(cluster.task("f-1").state).toBe("processing.stealing");
    expect(cluster.scheduler.stealing!.metrics.stale).toBe(1);
  });

  it("the task finishes on the victim before the answer arrives: FINISH from processing.stealing, the late reject is stale", () => {
    const cluster = pinnedOnA(1);
    cluster.moveTaskRequest("f-0", "a", "b");
    cluster.finish("a", "f-0");
    cluster.deliverToWorkers("a");
    // task-finished was sent before the steal request arrived: it reaches the scheduler first.
    expect(cluster.pending().map((m) => m.op.op)).toEqual(["task-finished", "steal-response"]);
    cluster.deliverToScheduler();
    expect(cluster.story("f-0").slice(-1)).toEqual(["FINISH processing.stealing->memory"]);
    expect(cluster.scheduler.stealing!.metrics.stale).toBe(1);
    expect(correctionsAreZero(cluster)).toBe(true);
    expect(cluster.executions).toEqual(["a:f-0"]);
  });
});

describe("workers leaving while a request is in flight", () => {
  it("the victim dies: its tasks are rescheduled (the stolen one too), the dead victim's answer is stale", () => {
    const cluster = pinnedOnA(3);
    cluster.moveTaskRequest("f-2", "a", "b");
    cluster.deliverToWorkers("a");
    const answers = cluster.pending(isSteal);
    cluster.killWorker("a");
    expect(cluster.story("f-2").slice(-2)).toEqual(["RELEASE processing.stealing->released", "ASSIGN released->processing.assigned"]);
    expect(cluster.scheduler.stealing!.inFlight.size).toBe(0);
    expect(correctionsAreZero(cluster)).toBe(true);
    cluster.deliverToScheduler((m) => answers.includes(m));
    expect(cluster.scheduler.stealing!.metrics.stale).toBe(1);
    cluster.runToCompletion();
    // f-0 ran on a when it died, and again on b; f-1 and f-2 only on b.
    expect(cluster.executions.sort()).toEqual(["a:f-0", "b:f-0", "b:f-1", "b:f-2"]);
  });

  it("the thief dies before the confirm: the task is released and placed afresh (on the victim)", () => {
    const cluster = pinnedOnA(2);
    cluster.moveTaskRequest("f-1", "a", "b");
    cluster.deliverToWorkers("a");
    cluster.killWorker("b");
    cluster.deliverToScheduler(isSteal);
    const steal = cluster.transitions.filter((r) => r.actor === "scheduler" && r.id === "f-1").slice(-2);
    expect(steal.map((r) => `${r.event} ${r.from}->${r.to}`)).toEqual(["RELEASE processing.stealing->released", "ASSIGN released->processing.assigned"]);
    expect(steal[0]!.why).toMatchObject({ rule: "steal-reschedule", thief: "b", victim: "a" });
    expect(cluster.task("f-1").processingOn!.name).toBe("a");
    expect(correctionsAreZero(cluster)).toBe(true);
    cluster.runToCompletion();
    expect(cluster.executions.sort()).toEqual(["a:f-0", "a:f-1"]);
  });

  it("test_steal_worker_dies_same_ip: the thief is replaced under the same name before the confirm: the task does not go to the old one", () => {
    const cluster = pinnedOnA(2);
    const oldThief = cluster.worker("b");
    cluster.moveTaskRequest("f-1", "a", "b");
    cluster.deliverToWorkers("a");
    cluster.killWorker("b");
    cluster.addWorker("b");
    expect(cluster.worker("b")).not.toBe(oldThief);
    cluster.deliverToScheduler(isSteal);
    expect(cluster.task("f-1").processingOn).not.toBe(oldThief);
    expect(cluster.story("f-1").slice(-2)).toEqual(["RELEASE processing.stealing->released", "ASSIGN released->processing.assigned"]);
    cluster.runToCompletion();
    expect(cluster.executions.filter((e) => e.endsWith(":f-1"))).toHaveLength(1);
  });
});

describe("the task rescheduled while a request is in flight", () => {
  it("test_steal_reschedule_reset_in_flight_occupancy: its dependency is lost, it is released and run again; the corrections return to zero", () => {
    const cluster = new MiniCluster({ defaultTaskDurations: { f: 1, r: 0.1 } });
    for (const w of ["a", "b", "c"]) cluster.addWorker(w);
    cluster.submit([{ key: "r-0", workers: ["c"], allowOtherWorkers: true }]);
    cluster.runToCompletion();
    cluster.submit(
      Array.from({ length: 3 }, (_, i) => ({ key: `f-${i}`, deps: ["r-0"], workers: ["a"], allowOtherWorkers: true })),
      ["f-0", "f-1", "f-2"],
    );
    // a is told to compute them and asks c for r-0; the transfer has not happened yet.
    cluster.deliverToWorkers("a");
    cluster.moveTaskRequest("f-2", "a", "b");
    expect(correctionsAreZero(cluster)).toBe(false);
    // c, the only holder of r-0, dies: every f is released (f-2 out of processing.stealing) and r-0 is recomputed.
    cluster.killWorker("c");
    expect(cluster.story("f-2").slice(1)).toEqual(["STEAL processing.assigned->processing.stealing", "RELEASE processing.stealing->released", "WAIT released->waiting"]);
    expect(cluster.scheduler.stealing!.inFlight.size).toBe(0);
    expect(correctionsAreZero(cluster)).toBe(true);
    cluster.runToCompletion();
    for (const key of ["f-0", "f-1", "f-2"]) {
      expect(cluster.scheduler.taskState(key)).toBe("memory");
      expect(cluster.executions.filter((e) => e.endsWith(`:${key}`))).toHaveLength(1);
    }
    expect(cluster.scheduler.stealing!.metrics.stale).toBe(1);
    expect(correctionsAreZero(cluster)).toBe(true);
  });

  it("test_reschedule_concurrent_requests_deadlock: released and resubmitted to b while a request from a is in flight, then asked of b", () => {
    const cluster = pinnedOnA(2, ["a", "b", "c"]);
    cluster.moveTaskRequest("f-1", "a", "b");
    // The client drops f-1 and submits it again, now restricted to b.
    cluster.feed({ op: "release-keys", client: "c", keys: ["f-1"] });
    cluster.submit([{ key: "f-1", workers: ["b"] }]);
    expect(cluster.task("f-1").processingOn!.name).toBe("b");
    cluster.deliverToWorkers("b");
    expect(cluster.runningOn("b")).toEqual(["f-1"]);
    // move_task_request does not look at restrictions; b is already computing it.
    expect(cluster.moveTaskRequest("f-1", "b", "c")).toBe("steal-1");
    cluster.settle();
    // a's answer to the first request is stale; b rejects the second (already computing).
    expect(cluster.scheduler.stealing!.metrics.stale).toBe(1);
    expect(cluster.story("f-1").slice(-3)).toEqual([
      "ASSIGN released->processing.assigned",
      "STEAL processing.assigned->processing.stealing",
      "STEAL_REJECT processing.stealing->processing.assigned",
    ]);
    cluster.runToCompletion();
    expect(cluster.task("f-1").whoHas.size).toBe(1);
    expect([...cluster.task("f-1").whoHas][0]!.name).toBe("b");
    expect(cluster.executions.filter((e) => e.endsWith(":f-1"))).toEqual(["b:f-1"]);
  });
});

describe("stopping stealing with requests in flight (test_stop_in_flight)", () => {
  it("without further passes the requests in flight are answered and none is left; new work stays put; a pass steals again", () => {
    const cluster = pinnedOnA(10);
    const stealing = cluster.scheduler.stealing!;
    cluster.feed({ op: "balance" });
    expect(stealing.inFlight.size).toBeGreaterThan(0);
    // "Stopped": the host feeds no more passes. The answers still arrive and settle every request.
    cluster.settle();
    expect(stealing.inFlight.size).toBe(0);
    expect(correctionsAreZero(cluster)).toBe(true);
    expect([...cluster.scheduler.tasks.values()].some((ts) => ts.state === "processing.stealing")).toBe(false);
    cluster.runToCompletion();
    const stolen = cluster.executions.filter((e) => e.startsWith("b:")).length;
    expect(stolen).toBeGreaterThan(0);
    expect(cluster.executions).toHaveLength(10);
    // Still stopped: a second batch pinned on a stays there.
    cluster.submit(Array.from({ length: 10 }, (_, i) => ({ key: `f-${10 + i}`, workers: ["a"], allowOtherWorkers: true })));
    cluster.settle();
    expect(cluster.worker("a").processing.size).toBe(10);
    expect(cluster.worker("b").processing.size).toBe(0);
    // Started again: one pass and b has work once more.
    cluster.feed({ op: "balance" });
    cluster.settle();
    expect(cluster.worker("b").processing.size).toBeGreaterThan(0);
    cluster.runToCompletion();
    const runs = cluster.executions.map((e) => e.split(":")[1]);
    expect(new Set(runs).size).toBe(20);
    expect(runs).toHaveLength(20);
  });
});
