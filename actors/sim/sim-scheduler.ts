import type { Config } from "../../machines/config.js";
import { SchedulerCore } from "../../machines/scheduler/core.js";
import type { SchedulerInput, SchedulerReply } from "../../machines/scheduler/inputs.js";
import type { LogSink } from "../../replay/types.js";
import { ActorRecorder } from "../recorder.js";
import { ON_DEMAND_GAP, serializableConfig } from "../scheduler-actor.js";
import type { SimKernel } from "./kernel.js";
import { SimSteals } from "./sim-steals.js";

export const SCHEDULER_ADDRESS = "scheduler";
export const workerAddress = (name: string): string => `worker.${name}`;
export const clientAddress = (client: string): string => `client.${client}`;

/**
 * Hosts the scheduler core on the virtual clock, as SchedulerActor does on the real one:
 * each op it receives is stamped with the time, recorded, then fed to the core. Work
 * stealing runs as the actor runs it: a pass every workStealingInterval (a timer that only
 * ticks while some task is processing, so that an idle run ends), and an on-demand pass
 * after a message when `core.wantsBalance()` says so, at most every ON_DEMAND_GAP. Each
 * pass is a recorded `balance` input, so the log replays.
 */
export class SimScheduler {
  readonly core: SchedulerCore;
  readonly recorder: ActorRecorder;
  readonly steals: SimSteals;
  private lastBalance = -Infinity;
  /** The periodic timer: index of the next tick (ticks fall at k * interval), or -1 while disarmed. */
  private nextTick = -1;
  private lastTick = 0;

  constructor(
    private readonly kernel: SimKernel,
    private readonly config: Config,
    log: LogSink,
  ) {
    const recorder = (this.recorder = new ActorRecorder("scheduler", log));
    const steals = (this.steals = new SimSteals());
    this.core = new SchedulerCore(config, {
      toWorker: (worker, op) => kernel.send(SCHEDULER_ADDRESS, workerAddress(worker), op),
      toClient: (client, op) => kernel.send(SCHEDULER_ADDRESS, clientAddress(client), op),
      transition: (machine, id, event, from, to, why) => {
        recorder.transition(machine, id, event, from, to, why);
        steals.transition(machine, id, event, from, why, kernel.now);
      },
    });
    kernel.open(SCHEDULER_ADDRESS, (_from, ops) => this.receive(ops.map((op) => ({ ...(op as object), t: kernel.now }) as SchedulerInput)));
  }

  start(): void {
    const t = this.kernel.now;
    this.recorder.start(t, "scheduler", { cluster: "sim", config: serializableConfig(this.config) });
    this.feed({ op: "scheduler-start", t });
  }

  /**
   * One message from a worker or the client (one envelope of ops), as the actor's
   * `receive`: each op fed, then an on-demand stealing pass if one is due.
   */
  receive(inputs: SchedulerInput[]): void {
    for (const input of inputs) this.feed(input);
    this.maybeBalance(false);
  }

  /** Feed one stimulus; a refusal is a simulator bug (scenarios are checked up front), so it throws. */
  feed(input: SchedulerInput): SchedulerReply {
    this.recorder.input(input);
    const reply = this.core.handle(input);
    if (!reply.ok) throw new Error(`simulator: the scheduler refused ${input.op}: ${reply.error.message}`);
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
