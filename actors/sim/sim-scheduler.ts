import type { Config } from "../../machines/config.js";
import { SchedulerCore } from "../../machines/scheduler/core.js";
import type { SchedulerInput, SchedulerReply } from "../../machines/scheduler/inputs.js";
import type { LogSink } from "../../replay/types.js";
import { ActorRecorder } from "../recorder.js";
import { serializableConfig } from "../scheduler-actor.js";
import type { SimKernel } from "./kernel.js";

export const SCHEDULER_ADDRESS = "scheduler";
export const workerAddress = (name: string): string => `worker.${name}`;
export const clientAddress = (client: string): string => `client.${client}`;

/**
 * Hosts the scheduler core on the virtual clock, as SchedulerActor does on the real one:
 * each op it receives is stamped with the time, recorded, then fed to the core.
 */
export class SimScheduler {
  readonly core: SchedulerCore;
  readonly recorder: ActorRecorder;

  constructor(
    private readonly kernel: SimKernel,
    private readonly config: Config,
    log: LogSink,
  ) {
    const recorder = (this.recorder = new ActorRecorder("scheduler", log));
    this.core = new SchedulerCore(config, {
      toWorker: (worker, op) => kernel.send(SCHEDULER_ADDRESS, workerAddress(worker), op),
      toClient: (client, op) => kernel.send(SCHEDULER_ADDRESS, clientAddress(client), op),
      transition: (machine, id, event, from, to, why) => recorder.transition(machine, id, event, from, to, why),
    });
    kernel.open(SCHEDULER_ADDRESS, (_from, ops) => {
      for (const op of ops) this.feed({ ...(op as object), t: kernel.now } as SchedulerInput);
    });
  }

  start(): void {
    const t = this.kernel.now;
    this.recorder.start(t, "scheduler", { cluster: "sim", config: serializableConfig(this.config) });
    this.feed({ op: "scheduler-start", t });
  }

  /** Feed one stimulus; a refusal is a simulator bug (scenarios are checked up front), so it throws. */
  feed(input: SchedulerInput): SchedulerReply {
    this.recorder.input(input);
    const reply = this.core.handle(input);
    if (!reply.ok) throw new Error(`simulator: the scheduler refused ${input.op}: ${reply.error.message}`);
    return reply;
  }
}
