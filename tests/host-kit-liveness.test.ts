/**
 * The host kit's liveness check (actors/host/liveness-watch.ts) on a fake clock, driven
 * as the simulator drives it: a check every heartbeat on PeriodicTicks, probes answered by
 * the host. When a dead worker is lost, with which reason, and what a reason says back.
 */
import { describe, expect, it } from "vitest";
import { LivenessWatch, livenessCheckInterval, type LivenessHost } from "../actors/host/liveness-watch.js";
import { PeriodicTicks } from "../actors/host/periodic-ticks.js";
import { silenceBeforeLoss, type ProbeOutcome } from "../actors/host/liveness.js";
import { resolveConfig } from "../machines/config.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import { FakeTimers } from "./support/fake-timers.js";
import type { SchedulerInput } from "../machines/scheduler/inputs.js";

interface Rig {
  timers: FakeTimers;
  watch: LivenessWatch;
  /** An op from a worker or client, taken as the host takes it: heard, then fed to the core. */
  take(input: SchedulerInput): void;
  fed: SchedulerInput[];
  missing: string[];
  released: { client: string; keys: string[]; reason: string }[];
  /** Whether the worker still serves its subject (a killed process does not). */
  serving: { value: boolean };
}

/** A scheduler core and its liveness watch, checked every heartbeat on fake timers, probes answered 10 ms later. */
function rig(settings: Record<string, unknown>): Rig {
  const config = resolveConfig({ heartbeatInterval: 0.5, ...settings });
  const timers = new FakeTimers();
  const core = new SchedulerCore(config, { toWorker() {}, toClient() {}, transition() {} });
  const fed: SchedulerInput[] = [];
  const missing: string[] = [];
  const released: Rig["released"] = [];
  const serving = { value: true };
  const host: LivenessHost = {
    core,
    feed(input) {
      fed.push(input);
      const reply = core.handle(input);
      watch.fed(input, reply);
      return reply;
    },
    probe(_name, _id, answer: (outcome: ProbeOutcome, t: number) => void) {
      timers.at(timers.now() + 0.01, () => answer(serving.value ? "answered" : "no-responders", timers.now()));
    },
    sayMissing: (name) => missing.push(name),
    tellReleased: (client, keys, reason) => released.push({ client, keys, reason }),
  };
  const watch = new LivenessWatch(config, host);
  const checks = new PeriodicTicks(timers, livenessCheckInterval(config.heartbeatInterval), (t) => {
    watch.check(t);
    checks.arm();
  });
  checks.arm();
  host.feed({ op: "scheduler-start", t: 0 });
  const take = (input: SchedulerInput): void => {
    watch.heard(input, input.t);
    host.feed(input);
  };
  return { timers, watch, take, fed, missing, released, serving };
}

const REGISTER = { op: "register-worker" as const, name: "w1", id: "w1-1", nthreads: 1, host: "h", resources: {}, functions: [] };

/** The worker registers at 0 and heartbeats every 0.5 s until `until`. */
function heartbeats(r: Rig, until: number): void {
  r.take({ ...REGISTER, t: 0 });
  for (let t = 0.5; t <= until + 1e-9; t += 0.5) r.timers.at(t, () => r.watch.heard({ op: "heartbeat", name: "w1", id: "w1-1" }, r.timers.now()));
}

function losses(r: Rig): { t: number; reason: string }[] {
  return r.fed.flatMap((i) => (i.op === "worker-lost" ? [{ t: i.t, reason: i.reason }] : []));
}

describe("the host kit's liveness check on a fake clock", () => {
  it("finds a killed worker lost once its subject has gone unserved for the unreachable window", () => {
    const r = rig({});
    heartbeats(r, 2);
    // Killed at 2.2: its last heartbeat was at 2, and nobody serves its subject any more.
    r.timers.at(2.2, () => (r.serving.value = false));
    r.timers.runUntil(5.9);
    expect(losses(r)).toEqual([]);
    r.timers.runUntil(20);
    // Probed from 3.5 (three heartbeats of silence), unserved from 3.51, lost 2 s later at the 6.0 check.
    expect(losses(r)).toEqual([{ t: 6, reason: "connection gone: no message for 4.0s and nobody serving its subject for 2.5s" }]);
    expect(6 - silenceBeforeLoss(losses(r)[0]!.reason)!).toBe(2);
  });

  it("finds a silent worker that still serves its subject lost after workerTtl", () => {
    const r = rig({ workerTtl: 5 });
    heartbeats(r, 2);
    r.timers.runUntil(7);
    expect(losses(r)).toEqual([]);
    r.timers.runUntil(20);
    expect(losses(r)).toEqual([{ t: 7.5, reason: "no message for 5.5s (workerTtl 5s)" }]);
    expect(silenceBeforeLoss(losses(r)[0]!.reason)).toBe(5.5);
  });

  it("never loses a worker that goes on heartbeating, and tells one it no longer has to register again", () => {
    const r = rig({ workerTtl: 2 });
    heartbeats(r, 30);
    r.timers.runUntil(30);
    expect(losses(r)).toEqual([]);
    r.watch.heard({ op: "heartbeat", name: "w9", id: "w9-1" }, 30);
    expect(r.missing).toEqual(["w9"]);
  });

  it("releases a silent client, and tells it what it lost when it speaks again", () => {
    const r = rig({ clientReleaseGrace: 3 });
    r.take({ op: "client-join", client: "c1", t: 0 });
    r.timers.runUntil(2.5);
    expect(r.fed.some((i) => i.op === "client-leave")).toBe(false);
    r.timers.runUntil(3);
    expect(r.fed.filter((i) => i.op === "client-leave")).toEqual([{ op: "client-leave", client: "c1", reason: "no message for 3.0s (clientReleaseGrace 3s)", t: 3 }]);
    r.watch.heard({ op: "heartbeat-client", client: "c1" }, 4);
    expect(r.released).toEqual([{ client: "c1", keys: [], reason: "released by the scheduler: no message for 3.0s (clientReleaseGrace 3s)" }]);
  });

  it("reads no silence out of a loss the liveness check did not decide", () => {
    expect(silenceBeforeLoss("killed")).toBeUndefined();
    expect(silenceBeforeLoss("no heartbeat (lost)")).toBeUndefined();
  });
});
