/**
 * Rebuilding an actor's core from its start record, for replay: the same core the actor
 * hosted, with effects that report transitions and count messages instead of sending them.
 */
import { readSchedulerStart, readWorkerStart } from "../log/start-init.js";
import type { SchedulerToClient, SchedulerToWorker } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput } from "../machines/scheduler/inputs.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInput } from "../machines/worker/inputs.js";
import { ClientHost } from "./client-host.js";
import { schedulerInstance, workerCoreInstance } from "./instance-snapshot.js";
import type { InputRecord, StartRecord } from "../log/types.js";
import type { MachineName, Why } from "../machines/reasons.js";

export interface ReplayEffects {
  transition(machine: MachineName, id: string, event: string, from: string, to: string, why?: Why): void;
  /**
   * The core sent a message (or asked its host to run or fetch something). A scheduler core
   * also says to whom and what, for a core that goes live after its replay (a restart).
   */
  sent(op: string, to?: MessageTarget, message?: SchedulerToWorker | SchedulerToClient): void;
}

export type MessageTarget = { worker: string } | { client: string };

export type ReplayHost = SchedulerHost | WorkerHost | ClientHost;

export class SchedulerHost {
  readonly role = "scheduler";
  readonly core: SchedulerCore;

  constructor(init: Record<string, unknown>, fx: ReplayEffects) {
    this.core = new SchedulerCore(readSchedulerStart(init).config, {
      toWorker: (worker, op) => fx.sent(op.op, { worker }, op),
      toClient: (client, op) => fx.sent(op.op, { client }, op),
      transition: (machine, id, event, from, to, why) => fx.transition(machine, id, event, from, to, why),
    });
  }

  handle(event: InputRecord["event"]): void {
    this.core.handle(event as unknown as SchedulerInput);
  }

  snapshot(machine: string, id: string): unknown {
    return schedulerInstance(this.core, machine, id);
  }
}

export class WorkerHost {
  readonly role = "worker";
  readonly core: WorkerCore;

  constructor(init: Record<string, unknown>, fx: ReplayEffects) {
    this.core = new WorkerCore(readWorkerStart(init), {
      toScheduler: (op) => fx.sent(op.op),
      execute: () => fx.sent("execute"),
      gather: () => fx.sent("gather"),
      freeData: () => undefined,
      transition: (machine, id, event, from, to, why) => fx.transition(machine, id, event, from, to, why),
    });
  }

  handle(event: InputRecord["event"]): void {
    this.core.handle(event as unknown as WorkerInput);
  }

  snapshot(machine: string, id: string): unknown {
    return workerCoreInstance(this.core, machine, id);
  }
}

/** The core a start record describes; throws an Error saying why when it cannot be built. */
export function buildHost(start: StartRecord, fx: ReplayEffects): ReplayHost {
  switch (start.role) {
    case "scheduler":
      return new SchedulerHost(start.init, fx);
    case "worker":
      return new WorkerHost(start.init, fx);
    case "client":
      return new ClientHost(start.init, fx);
    default:
      throw new Error(`role "${start.role}" has no core to replay`);
  }
}
