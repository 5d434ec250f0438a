import type { Config } from "../machines/config.js";
import { BadOptionError } from "../machines/errors.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerEffects, SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";
import type { LogRecord, LogSink } from "../log/types.js";
import type { SchedulerSender } from "../transport/subjects.js";
import { refusal } from "../actors/host/op-roles.js";
import { ActorRecorder } from "../actors/host/recorder.js";
import { ON_DEMAND_GAP, serializableConfig } from "../actors/host/scheduler-host.js";
import { withTime } from "../actors/host/with-time.js";
import type { SimKernel } from "./kernel.js";
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
 * stealing runs as the actor runs it: a pass every workStealingInterval (a timer that only
 * ticks while some task is processing, so that an idle run ends), and an on-demand pass
 * after a message when `core.wantsBalance()` says so, at most every ON_DEMAND_GAP. Each
 * pass is a recorded `balance` input, so the log replays.
 */
export class SimScheduler {
  /** The scheduler's core; a new one after restart-scheduler. */
  core: SchedulerCore;
  /** Scheduler restarts so far (restart-scheduler actions). */
  restarts = 0;
  private readonly live: SchedulerEffects;
  readonly recorder: ActorRecorder;
  readonly steals: SimSteals;
  /** Ops refused for their sender's role or incarnation, as SchedulerActor refuses them (actors/host/op-roles.ts). */
  refused = 0;
  private lastBalance = -Infinity;
  /** The periodic timer: index of the next tick (ticks fall at k * interval), or -1 while disarmed. */
  private nextTick = -1;
  private lastTick = 0;

  constructor(
    private readonly kernel: SimKernel,
    private readonly config: Config,
    log: LogSink,
    /** Whether that incarnation of a worker was killed (its late registration is lost at once). */
    private readonly isDead: (name: string, id: string) => boolean = () => false,
  ) {
    const recorder = (this.recorder = new ActorRecorder("scheduler", log));
    const steals = (this.steals = new SimSteals());
    this.live = {
      toWorker: (worker, op) => kernel.send(SCHEDULER_ADDRESS, workerAddress(worker), op),
      toClient: (client, op) => kernel.send(SCHEDULER_ADDRESS, clientAddress(client), op),
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
    this.recorder.start(t, "scheduler", { cluster: "sim", config: serializableConfig(this.config) });
    this.feed({ op: "scheduler-start", t });
    // The sender's address stands for the subject it would send on, as on a real transport.
    const senders = new Map<string, SchedulerSender | undefined>();
    this.kernel.open(SCHEDULER_ADDRESS, (from, ops) => {
      let sender = senders.get(from);
      if (sender === undefined && !senders.has(from)) senders.set(from, (sender = senderAt(from)));
      this.receiveFrom(sender, from, ops);
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
    this.start();
  }

  /**
   * One message from a worker or the client (one envelope of ops), as the actor's
   * `receive`: each op fed, then an on-demand stealing pass if one is due.
   */
  receive(inputs: SchedulerInput[]): void {
    for (const input of inputs) this.feed(input);
    this.maybeBalance(false);
  }

  /**
   * One envelope from a worker, as SchedulerActor takes it: each op checked for its sender's
   * role and incarnation just before it is fed (a refused one is counted and dropped), then an
   * on-demand stealing pass if one is due.
   */
  private receiveFrom(sender: SchedulerSender | undefined, from: string, ops: unknown[]): void {
    for (const op of ops) {
      if (refusal(this.core, sender, op as { op: string }, from) !== undefined) {
        this.refused++;
        continue;
      }
      // A registration from an incarnation removed since is refused (its process is gone in the simulator, so the refusal goes nowhere).
      const reply = this.handle(withTime(op as object, this.kernel.now) as SchedulerInput);
      if (!reply.ok) {
        if ((op as { op: string }).op !== "register-worker") throw new Error(`simulator: the scheduler refused ${(op as { op: string }).op}: ${reply.error.message}`);
        this.refused++;
        continue;
      }
      // A registration sent before its worker was killed, delivered after: the host finds that
      // incarnation gone at once, as it found out about the kill (kill-worker).
      const { name, id } = op as { op: string; name: string; id: string };
      if ((op as { op: string }).op === "register-worker" && this.isDead(name, id) && this.core.workers.get(name)?.id === id) {
        this.feed({ op: "worker-lost", name, id, reason: "killed", t: this.kernel.now });
      }
    }
    this.maybeBalance(false);
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
    const reply = this.handle(input);
    this.maybeBalance(false);
    return reply;
  }

  private handle(input: SchedulerInput): SchedulerReply {
    this.recorder.input(input);
    const reply = this.core.handle(input);
    this.armTimer();
    return reply;
  }

  /** The actor's `maybeBalance`: periodic passes skip the on-demand gap, on-demand ones respect it. */
  private maybeBalance(periodic: boolean): void {
    const now = this.kernel.now;
    if (!periodic && now - this.lastBalance < ON_DEMAND_GAP) return;
    if (!this.core.wantsBalance()) return;
    this.lastBalance = now;
    this.feed({ op: "balance", t: now });
  }

  /**
   * The actor's setInterval, on virtual time: ticks at k * workStealingInterval from the
   * scheduler's start. Armed whenever a task is processing, so the run never idles on it.
   */
  private armTimer(): void {
    if (this.nextTick >= 0 || this.core.stealing === null || !this.anyProcessing()) return;
    const interval = this.config.workStealingInterval;
    this.nextTick = Math.max(this.lastTick + 1, Math.floor(this.kernel.now / interval) + 1);
    this.kernel.at(this.nextTick * interval, () => {
      this.lastTick = this.nextTick;
      this.nextTick = -1;
      this.maybeBalance(true);
      this.armTimer();
    });
  }

  private anyProcessing(): boolean {
    for (const ws of this.core.running) if (ws.processing.size > 0) return true;
    return false;
  }
}
