import type { Config } from "../machines/config.js";
import { BadOptionError } from "../machines/errors.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerEffects, SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";
import type { LogRecord, LogSink } from "../log/types.js";
import type { SchedulerSender } from "../transport/subjects.js";
import { simTimers } from "./sim-timers.js";
import { LivenessWatch, livenessCheckInterval, type LivenessHost } from "../actors/host/liveness-watch.js";
import { PeriodicTicks } from "../actors/host/periodic-ticks.js";
import { StealPasses, type StealPassHost } from "../actors/host/steal-passes.js";
import type { ProbeOutcome } from "../actors/host/liveness.js";
import { refusal } from "../actors/host/op-roles.js";
import { ActorRecorder } from "../actors/host/recorder.js";
import { stampCause } from "../actors/host/causes.js";
import { withTime } from "../actors/host/with-time.js";
import type { SimKernel } from "./kernel.js";
import { NO_HOST_COSTS, type HostCosts } from "./host-costs.js";
import { SimSteals } from "./sim-steals.js";

export const SCHEDULER_ADDRESS = "scheduler";
export const workerAddress = (name: string): string => `worker.${name}`;
export const clientAddress = (client: string): string => `client.${client}`;

/** The role an address stands for, as `subjects(cluster).senderOf` reads a subject. */
function senderAt(address: string): SchedulerSender | undefined {
  if (address.startsWith("worker.")) return { role: "worker", name: address.slice("worker.".length) };
  if (address.startsWith("client.")) return { role: "client", id: address.slice("client.".length) };
  return undefined;
}

/**
 * Hosts the scheduler core on the virtual clock, as SchedulerActor does on the real one:
 * each op it receives is stamped with the time, recorded, then fed to the core. Work
 * stealing and liveness are the host kit's (actors/host/), as the actor's, on virtual
 * time: stealing passes (each a recorded `balance` input); and the liveness check, which
 * finds a killed worker lost as the live host does: silent past `workerTtl`, or silent and
 * nobody serving its subject. Live workers and clients heartbeat every heartbeatInterval;
 * here their heartbeats are not mail but accounted for at each check (a live incarnation
 * was last heard at its last heartbeat), and the checks run only while a dead incarnation
 * is watched, so that an idle run ends.
 */
export class SimScheduler implements StealPassHost, LivenessHost {
  /** The scheduler's core; a new one after restart-scheduler. */
  core: SchedulerCore;
  /** Scheduler restarts so far (restart-scheduler actions). */
  restarts = 0;
  private readonly live: SchedulerEffects;
  readonly recorder: ActorRecorder;
  readonly steals: SimSteals;
  /** Whether the host has taken a graph in (its warm-up is behind it). */
  private warm = false;
  /** Ops refused for their sender's role or incarnation, as SchedulerActor refuses them (actors/host/op-roles.ts). */
  refused = 0;
  private readonly stealPasses: StealPasses;
  /** The liveness of the current run (a new run starts with a watch of its own, as a new scheduler process). */
  private liveness: LivenessWatch;
  private readonly livenessChecks: PeriodicTicks;

  constructor(
    private readonly kernel: SimKernel,
    private readonly config: Config,
    log: LogSink,
    /** Whether that incarnation of a worker is alive (it heartbeats). */
    private readonly isAlive: (name: string, id: string) => boolean,
    /** Seconds the host is busy per op of a worker's message, per task of a graph it takes, and more for its first graph (hostCosts). */
    private readonly costs: Pick<HostCosts, "schedulerOp" | "graphIntake" | "warmUp"> = NO_HOST_COSTS,
  ) {
    const timers = simTimers(kernel);
    this.stealPasses = new StealPasses(this, timers, config.workStealingInterval);
    this.liveness = new LivenessWatch(config, this);
    this.livenessChecks = new PeriodicTicks(timers, livenessCheckInterval(config.heartbeatInterval), (t) => this.checkLiveness(t));
    const recorder = (this.recorder = new ActorRecorder("scheduler", log));
    const steals = (this.steals = new SimSteals());
    this.live = {
      toWorker: (worker, op) => kernel.send(SCHEDULER_ADDRESS, workerAddress(worker), stampCause(op, recorder)),
      toClient: (client, op) => kernel.send(SCHEDULER_ADDRESS, clientAddress(client), stampCause(op, recorder)),
      transition: (machine, id, event, from, to, why) => {
        recorder.transition(machine, id, event, from, to, why);
        steals.transition(machine, id, event, from, why, kernel.now);
      },
    };
    this.core = new SchedulerCore(config, this.live);
  }

  /** The scheduler starts: it records its start and takes mail. */
  start(): void {
    const t = this.kernel.now;
    this.recorder.startScheduler(t, "sim", this.config);
    this.feed({ op: "scheduler-start", t });
    // The sender's address stands for the subject it would send on, as on a real transport.
    const senders = new Map<string, SchedulerSender | undefined>();
    this.kernel.open(SCHEDULER_ADDRESS, (from, ops) => {
      let sender = senders.get(from);
      if (sender === undefined && !senders.has(from)) senders.set(from, (sender = senderAt(from)));
      // Still taking a graph (hostCosts.graphIntake): the message waits its turn, in order.
      const free = this.kernel.freeAt(SCHEDULER_ADDRESS);
      if (free > this.kernel.now) this.kernel.at(free, () => this.up && this.receiveFrom(sender, from, ops));
      else this.receiveFrom(sender, from, ops);
    });
  }

  /** Whether the scheduler is up (not stopped by stop-scheduler). */
  get up(): boolean {
    return this.core.state === "running";
  }

  /**
   * The scheduler stops cleanly, as SchedulerActor.close: it takes no more mail (what is sent
   * to it while it is down is lost), records its close (scheduler-close) and its stop.
   */
  stop(): void {
    const t = this.kernel.now;
    this.kernel.close(SCHEDULER_ADDRESS);
    this.feed({ op: "scheduler-close", t });
    this.recorder.stop(t, "stopped");
  }

  /**
   * A scheduler starts after a clean stop: a new run (a log that ends with a stop is not
   * resumed, replay/jetstream-resume.ts), with a core that knows nothing yet.
   */
  startNewRun(): void {
    this.core = new SchedulerCore(this.config, this.live);
    this.liveness.stop();
    this.liveness = new LivenessWatch(this.config, this);
    this.start();
  }

  /**
   * One message from a worker or the client (one envelope of ops), as the actor's
   * `receive`: each op fed, then an on-demand stealing pass if one is due.
   */
  receive(inputs: SchedulerInput[]): void {
    for (const input of inputs) {
      this.liveness.heard(input, input.t);
      this.feed(input);
    }
    this.stealPasses.afterMessage();
  }

  /**
   * One envelope from a worker, as SchedulerActor takes it: each op checked for its sender's
   * role and incarnation just before it is fed (a refused one is counted and dropped), then an
   * on-demand stealing pass if one is due.
   */
  private receiveFrom(sender: SchedulerSender | undefined, from: string, ops: unknown[]): void {
    if (this.costs.schedulerOp > 0) this.kernel.holdUntil(SCHEDULER_ADDRESS, this.kernel.now + this.costs.schedulerOp * ops.length);
    for (const op of ops) {
      if (refusal(this.core, sender, op as { op: string }, from) !== undefined) {
        this.refused++;
        continue;
      }
      const input = withTime(op as object, this.kernel.now) as SchedulerInput;
      this.liveness.heard(input, input.t);
      // A registration from an incarnation removed since is refused (its process is gone in the simulator, so the refusal goes nowhere).
      const reply = this.handle(input);
      if (!reply.ok) {
        if (input.op !== "register-worker") throw new Error(`simulator: the scheduler refused ${input.op}: ${reply.error.message}`);
        this.refused++;
        continue;
      }
      // A registration sent before its worker was killed, delivered after: watched, and silent from the start.
      if (input.op === "register-worker" && !this.isAlive(input.name, input.id)) this.watchTheDead();
    }
    this.stealPasses.afterMessage();
  }

  /**
   * A worker incarnation died (kill-worker): its heartbeats stop. The scheduler heard them
   * until then, and finds it lost when the liveness check does.
   */
  workerDied(name: string, id: string): void {
    const { liveness } = this.liveness;
    if (liveness.watchedId(name) === id) liveness.heardFromWorker(name, id, this.lastHeartbeat(this.kernel.now));
    this.watchTheDead();
  }

  /** The simulator's answer to a probe: someone serves the worker's subject if a live incarnation has its mailbox open. */
  probe(name: string, _id: string, answer: (outcome: ProbeOutcome, t: number) => void): void {
    const { kernel } = this;
    kernel.at(kernel.now + 2 * kernel.latency, () => answer(kernel.isOpen(workerAddress(name)) ? "answered" : "no-responders", kernel.now));
  }

  /** Liveness checks run while a dead incarnation is watched. */
  private watchTheDead(): void {
    if (this.livenessChecks.armed) return;
    for (const { name, id } of this.liveness.liveness.watchedWorkers()) {
      if (!this.isAlive(name, id)) {
        this.livenessChecks.arm();
        return;
      }
    }
  }

  /** One liveness check, after the heartbeats of live workers and clients (the simulator's are not mail). */
  private checkLiveness(t: number): void {
    if (!this.up) return;
    const { liveness } = this.liveness;
    const beat = this.lastHeartbeat(t);
    for (const { name, id } of liveness.watchedWorkers()) if (this.isAlive(name, id)) liveness.heardFromWorker(name, id, beat);
    for (const client of this.core.clients.keys()) liveness.heardFromClient(client, beat);
    this.liveness.check(t);
    this.watchTheDead();
  }

  /** Workers and clients heartbeat at k * heartbeatInterval. */
  private lastHeartbeat(t: number): number {
    const every = this.config.heartbeatInterval;
    return Math.floor(t / every) * every;
  }

  /**
   * The scheduler process dies and another takes over at once, rebuilt from the log: the
   * scheduler's recorded inputs re-run through a fresh core, each transition it makes
   * checked against the recorded one (as a scheduler resuming from its JetStream log does,
   * replay/jetstream-resume.ts), then the new core's effects go live. Its timers are the
   * host's and carry on. Throws if the log is not there or is not reproduced.
   */
  restart(records: readonly LogRecord[]): void {
    let own = records.filter((r) => r.actor === this.recorder.actor);
    // This run's records: from its start (an earlier run stopped cleanly is not resumed).
    const lastStart = own.findLastIndex((r) => r.kind === "start");
    if (lastStart > 0) own = own.slice(lastStart);
    if (own.length === 0 || own[0]!.kind !== "start") {
      throw new BadOptionError("actions", "restart-scheduler rebuilds the scheduler from its log: run with the log kept in memory (simulate()'s default)");
    }
    const recorded = own.filter((r) => r.kind === "transition");
    let checked = 0;
    let going: SchedulerEffects | null = null;
    const relay: SchedulerEffects = {
      toWorker: (worker, op) => going?.toWorker(worker, op),
      toClient: (client, op) => going?.toClient(client, op),
      transition: (machine, id, event, from, to, why) => {
        if (going !== null) return going.transition(machine, id, event, from, to, why);
        const r = recorded[checked++];
        if (r === undefined || r.kind !== "transition" || r.machine !== machine || r.id !== id || r.event !== event || r.from !== from || r.to !== to) {
          throw new Error(`simulator: restart-scheduler: the scheduler's log is not reproduced at transition #${checked - 1} (${machine} ${id} ${event} ${from}->${to})`);
        }
      },
    };
    const core = new SchedulerCore(this.config, relay);
    for (const r of own) if (r.kind === "input") core.handle(r.event as unknown as SchedulerInput);
    if (checked !== recorded.length) throw new Error(`simulator: restart-scheduler: the rebuilt scheduler made ${checked} of the ${recorded.length} recorded transitions`);
    going = this.live;
    this.core = core;
    this.restarts += 1;
  }

  /** Feed one stimulus; a refusal is a simulator bug (scenarios are checked up front), so it throws. */
  feed(input: SchedulerInput): SchedulerReply {
    const reply = this.handle(input);
    if (!reply.ok) throw new Error(`simulator: the scheduler refused ${input.op}: ${reply.error.message}`);
    return reply;
  }

  /**
   * A client's request that may be refused (a scatter of a key that exists: the client gets
   * KEY_EXISTS), answered, then an on-demand stealing pass if one is due, as `receive`.
   */
  request(input: SchedulerInput): SchedulerReply {
    this.liveness.heard(input, input.t);
    const reply = this.handle(input);
    this.stealPasses.afterMessage();
    return reply;
  }

  /** The host takes a graph in: busy graphIntake per new task (it skips specs of keys it has), warmUp more the first time. */
  private takeIn(specs: readonly { key: string }[]): void {
    let taken = 0;
    for (const spec of specs) if (!this.core.tasks.has(spec.key)) taken += 1;
    if (taken === 0) return;
    const busy = this.costs.graphIntake * taken + (this.warm ? 0 : this.costs.warmUp);
    this.warm = true;
    this.kernel.holdUntil(SCHEDULER_ADDRESS, this.kernel.freeAt(SCHEDULER_ADDRESS) + busy);
  }

  private handle(input: SchedulerInput): SchedulerReply {
    this.recorder.input(input);
    if (input.op === "update-graph" && (this.costs.graphIntake > 0 || this.costs.warmUp > 0)) this.takeIn(input.tasks);
    const reply = this.core.handle(input);
    this.liveness.fed(input, reply);
    this.stealPasses.afterInput();
    return reply;
  }
}
