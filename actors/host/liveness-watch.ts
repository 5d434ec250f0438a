import type { LivenessOp } from "../../machines/protocol.js";
import type { SchedulerCore } from "../../machines/scheduler/core.js";
import type { SchedulerInput, SchedulerReply } from "../../machines/scheduler/inputs.js";
import { Liveness, type LivenessPolicy, type ProbeOutcome } from "./liveness.js";

/** The scheduler's host, as its liveness check needs it. */
export interface LivenessHost {
  /** The core now (the simulator replaces it on a restart). */
  readonly core: SchedulerCore;
  /** Record and feed an input: the check's decisions are inputs like any other. */
  feed(input: SchedulerInput): unknown;
  /**
   * Is anyone still serving the worker's data subject? `answer` when known, with the time
   * then (live: a NATS request and its "no responders"; simulated: the worker's mailbox).
   */
  probe(name: string, id: string, answer: (outcome: ProbeOutcome, t: number) => void): void;
  /** A worker the core does not have sent a heartbeat: tell it to register again. */
  sayMissing?(name: string, id: string): void;
  /** A client released while it could not be heard spoke again: tell it which futures are gone. */
  tellReleased?(client: string, keys: string[], reason: string): void;
}

/** An op as the liveness check reads it: who sent it. */
type Heard = { op: string; worker?: string; name?: string; id?: string; client?: string };

/** Seconds between two liveness checks: one per heartbeat, within 50 ms to 1 s. */
export function livenessCheckInterval(heartbeatInterval: number): number {
  return Math.min(1, Math.max(0.05, heartbeatInterval));
}

/**
 * Who is still there, as the scheduler's host hears it, and what it does about silence: a
 * worker silent for `workerTtl` seconds, or silent and no longer serving its subject, is
 * reported lost to the core (worker-lost); a client silent for `clientReleaseGrace` seconds
 * is made to leave (client-leave). Both are recorded inputs with their time, so a replay
 * needs none of this. The bookkeeping is actors/host/liveness.ts; the host passes the time and
 * calls `check` on its clock (SchedulerActor on the real one, the simulator on virtual time).
 */
export class LivenessWatch {
  readonly liveness: Liveness;
  /** Workers with a probe in flight. */
  private readonly probing = new Set<string>();
  private stopped = false;

  constructor(
    policy: LivenessPolicy,
    private readonly host: LivenessHost,
  ) {
    this.liveness = new Liveness(policy);
  }

  /** An op the host took from a worker or a client at `t` (before the core has it): its sender is alive. */
  heard(op: Heard | SchedulerInput | LivenessOp, t: number): void {
    const o = op as Heard;
    const { liveness } = this;
    if (o.op === "unregister-worker") {
      liveness.workerGone(o.name!);
      return;
    }
    const name = o.op === "heartbeat" ? o.name : o.worker;
    if (name !== undefined && o.id !== undefined) {
      // A worker the core does not have is not watched: it was removed, and only registering
      // again brings it back (watched from when the core accepts it: `fed`).
      const core = this.host.core;
      if (core.workers.get(name)?.id === o.id) liveness.heardFromWorker(name, o.id, t);
      else if (o.op === "heartbeat" && !core.workers.has(name)) this.host.sayMissing?.(name, o.id);
    }
    if (o.client === undefined) return;
    if (o.op === "client-leave") {
      liveness.clientGone(o.client);
      return;
    }
    const released = liveness.heardFromClient(o.client, t);
    if (released !== undefined) this.host.tellReleased?.(o.client, released.keys, `released by the scheduler: ${released.reason}`);
  }

  /**
   * The core took `input` and answered `reply`: a lost incarnation is no longer watched,
   * whoever decided it; a registration it accepted is watched from then (one it refused, of
   * an incarnation removed since, leaves the watch of the current one alone).
   */
  fed(input: SchedulerInput, reply: SchedulerReply): void {
    if (input.op === "worker-lost") this.liveness.workerGone(input.name, input.id);
    else if (input.op === "register-worker" && reply.ok) this.liveness.heardFromWorker(input.name, input.id, input.t);
  }

  /**
   * What is due at `t`, fed to the core: lost workers, released clients; silent workers are
   * probed. Returns whether anything was fed (the host then sends what it produced).
   */
  check(t: number): boolean {
    const { liveness, host } = this;
    // A client the core knows of that this host never heard (a scheduler restarted from its log): the grace starts now.
    for (const client of host.core.clients.keys()) liveness.adoptClient(client, t);
    const due = liveness.due(t);
    for (const { name, id, reason } of due.lost) host.feed({ op: "worker-lost", name, id, reason, t });
    for (const { client, reason } of due.release) {
      const wanted = host.core.clients.get(client);
      if (wanted === undefined) continue;
      liveness.noteReleased(client, [...wanted].map((ts) => ts.key), reason);
      host.feed({ op: "client-leave", client, reason, t });
    }
    for (const { name, id } of due.probe) this.probe(name, id);
    return due.lost.length > 0 || due.release.length > 0;
  }

  /**
   * The host could not have heard anyone until `t` (its connection was down, its event loop
   * stalled): silence so far proves nothing.
   */
  credit(t: number): void {
    this.liveness.credit(t);
  }

  stop(): void {
    this.stopped = true;
  }

  private probe(name: string, id: string): void {
    if (this.probing.has(name)) return;
    this.probing.add(name);
    this.host.probe(name, id, (outcome, t) => {
      this.probing.delete(name);
      if (!this.stopped) this.liveness.probeResult(name, id, outcome, t);
    });
  }
}
