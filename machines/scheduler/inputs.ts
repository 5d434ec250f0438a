import type { ClientToScheduler, ErrorInfo, HostMetrics, SchedulerToClient, SchedulerToWorker, WorkerToScheduler } from "../protocol.js";
import type { MachineName, Why } from "../reasons.js";

/** A worker stopped answering (missed heartbeats, closed connection): detected by the host. */
export interface WorkerLostOp {
  op: "worker-lost";
  name: string;
  id: string;
  reason: string;
}

/**
 * A worker's host metrics (from its heartbeat), as the scheduler's host chose to record them
 * (rate-limited: actors/host/metrics-gate.ts). An input so that the log keeps them in order
 * with everything else and replay re-feeds them; the core keeps nothing of them.
 */
export interface HostMetricsOp extends HostMetrics {
  op: "host-metrics";
  worker: string;
  id: string;
}

/** The scheduler's own lifecycle, from its host. */
export type SchedulerLifecycleOp = { op: "scheduler-start" } | { op: "scheduler-close" };

/** Run one work-stealing pass now (hosts feed it every workStealingInterval and on demand). */
export interface BalanceOp {
  op: "balance";
}

/** Every stimulus the scheduler core takes, stamped with the time the host saw it. */
export type SchedulerInput = (ClientToScheduler | WorkerToScheduler | WorkerLostOp | SchedulerLifecycleOp | BalanceOp | HostMetricsOp) & { t: number };

/** `run` answers a register-worker: the scheduler run the worker registered with. */
export type SchedulerReply = { ok: true; run?: number } | { ok: false; error: ErrorInfo & { keys?: string[] } };

/** What the scheduler core asks its host to do; every call is synchronous and cheap. */
export interface SchedulerEffects {
  toWorker(worker: string, op: SchedulerToWorker): void;
  toClient(client: string, op: SchedulerToClient): void;
  /** A machine's transition, with the decision's reasons (machines/reasons.ts): the host logs it. */
  transition(machine: MachineName, id: string, event: string, from: string, to: string, why?: Why): void;
}
