/**
 * The scheduler host's liveness bookkeeping (actors/host/liveness.ts) with the time passed in:
 * when a client is released, when a worker is probed and declared lost, and how a credit
 * (the host could not hear anyone) restarts every silence.
 */
import { describe, expect, it } from "vitest";
import { Liveness, unreachableWindow } from "../actors/host/liveness.js";

const policy = { heartbeatInterval: 0.5, workerTtl: 300, clientReleaseGrace: 10 };

describe("client release", () => {
  it("releases a client silent for the grace, once, and not a moment before", () => {
    const live = new Liveness(policy);
    live.heardFromClient("c1", 100);
    live.heardFromClient("c2", 100);
    live.heardFromClient("c2", 105);
    expect(live.due(109.99).release).toEqual([]);
    expect(live.due(110).release).toEqual([{ client: "c1", reason: "no message for 10.0s (clientReleaseGrace 10s)" }]);
    expect(live.due(111).release).toEqual([]);
    expect(live.due(115).release.map((r) => r.client)).toEqual(["c2"]);
  });

  it("waits at least 3 heartbeat intervals, whatever the grace", () => {
    const live = new Liveness({ ...policy, clientReleaseGrace: 0 });
    live.heardFromClient("c1", 0);
    expect(live.due(1.4).release).toEqual([]);
    expect(live.due(1.5).release.map((r) => r.client)).toEqual(["c1"]);
  });

  it("forgets a client that left, and hands back what a released client wanted when it returns", () => {
    const live = new Liveness(policy);
    live.heardFromClient("gone", 0);
    live.clientGone("gone");
    live.heardFromClient("c1", 0);
    expect(live.due(20).release.map((r) => r.client)).toEqual(["c1"]);
    live.noteReleased("c1", ["x", "y"], "no message for 20.0s");
    expect(live.heardFromClient("c1", 21)).toEqual({ keys: ["x", "y"], reason: "no message for 20.0s" });
    expect(live.heardFromClient("c1", 22)).toBeUndefined();
  });

  it("starts the grace of a client it adopts (known to the core, never heard) when adopted", () => {
    const live = new Liveness(policy);
    live.adoptClient("old", 50);
    live.adoptClient("old", 55); // already tracked: unchanged
    expect(live.due(59).release).toEqual([]);
    expect(live.due(60).release.map((r) => r.client)).toEqual(["old"]);
  });
});

describe("worker loss", () => {
  it("probes a worker that missed 3 heartbeats and loses it after the unreachable window", () => {
    const live = new Liveness(policy);
    const window = unreachableWindow(policy.heartbeatInterval);
    expect(window).toBe(2);
    live.heardFromWorker("w1", "id1", 0);
    expect(live.due(1.4)).toEqual({ lost: [], probe: [], release: [] });
    expect(live.due(1.5).probe).toEqual([{ name: "w1", id: "id1" }]);
    live.probeResult("w1", "id1", "no-responders", 1.6);
    live.probeResult("w1", "id1", "no-responders", 2.1);
    expect(live.due(3.5).lost).toEqual([]);
    const { lost } = live.due(3.6);
    expect(lost).toEqual([{ name: "w1", id: "id1", reason: "connection gone: no message for 3.6s and nobody serving its subject for 2.0s" }]);
    expect(live.due(400).lost).toEqual([]);
  });

  it("starts over when a probe is answered, times out, or the worker is heard", () => {
    const live = new Liveness(policy);
    live.heardFromWorker("w1", "id1", 0);
    live.probeResult("w1", "id1", "no-responders", 2);
    live.probeResult("w1", "id1", "inconclusive", 3);
    expect(live.due(4.5).lost).toEqual([]);
    live.probeResult("w1", "id1", "no-responders", 5);
    live.probeResult("w1", "id1", "answered", 6);
    expect(live.due(7.5).lost).toEqual([]);
    live.probeResult("w1", "id1", "no-responders", 8);
    live.heardFromWorker("w1", "id1", 9);
    expect(live.due(10.4)).toEqual({ lost: [], probe: [], release: [] });
  });

  it("ignores probe results for another incarnation, and a worker gone under another id", () => {
    const live = new Liveness(policy);
    live.heardFromWorker("w1", "new", 0);
    live.probeResult("w1", "old", "no-responders", 1);
    expect(live.due(10).lost).toEqual([]);
    live.workerGone("w1", "old");
    expect(live.due(10).probe).toEqual([{ name: "w1", id: "new" }]);
    live.workerGone("w1");
    expect(live.due(10).probe).toEqual([]);
  });

  it("loses a silent worker after workerTtl, as Dask does, even if probes are answered", () => {
    const live = new Liveness({ ...policy, workerTtl: 30 });
    live.heardFromWorker("w1", "id1", 0);
    live.probeResult("w1", "id1", "answered", 20);
    expect(live.due(30).lost).toEqual([]);
    expect(live.due(30.1).lost).toEqual([{ name: "w1", id: "id1", reason: "no message for 30.1s (workerTtl 30s)" }]);
  });
});

describe("credit", () => {
  it("restarts every silence and unreachable window from the moment the host could hear again", () => {
    const live = new Liveness(policy);
    live.heardFromClient("c1", 0);
    live.heardFromWorker("w1", "id1", 0);
    live.probeResult("w1", "id1", "no-responders", 1.5);
    live.credit(20);
    expect(live.due(21)).toEqual({ lost: [], probe: [], release: [] });
    expect(live.due(29.9).release).toEqual([]);
    const later = live.due(30);
    expect(later.release.map((r) => r.client)).toEqual(["c1"]);
    expect(later.probe).toEqual([{ name: "w1", id: "id1" }]);
  });
});
