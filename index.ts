/**
 * natsched: a distributed task scheduler with Dask's policies, built as state machines over
 * an event-sourced log. This is the public API; see README.md.
 */
import "./log/runtime-check.js";
import { provideDashboard } from "./actors/dashboard-hook.js";

// LocalCluster.start({ dashboard }) loads the dashboard's server only when a cluster asks for it.
provideDashboard(async (tap, opts) => (await import("./dashboard/server/embedded.js")).startEmbeddedDashboard(tap, opts));
export { LocalCluster, type LocalClusterOptions, type WorkerSpec } from "./actors/local-cluster.js";
export { Client, Future, type ClientOptions, type SubmitOptions, type WorkerSummary } from "./actors/client.js";
export { AsCompleted, type AsCompletedOptions, type ReturnWhen, type WaitOptions, type WaitResult } from "./actors/client-waits.js";
export { progress, type ProgressOptions } from "./actors/progress.js";
export type { Graph } from "./actors/graph-spec.js";
export type { TaskFunction, TaskFunctions } from "./actors/functions.js";
export type { Executor, FunctionModuleEntry, FunctionsOption, FunctionsSource } from "./actors/function-modules.js";
export { SchedulerActor, type SchedulerActorOptions } from "./actors/scheduler-actor.js";
export { WorkerActor, type WorkerActorOptions } from "./actors/worker-actor.js";
export { realClock, type Clock } from "./actors/host/clock.js";
export { loadConfig, type LoadConfigOptions } from "./actors/config-loader.js";
export { DEFAULT_CONFIG, resolveConfig, type Config } from "./machines/config.js";
export * from "./machines/errors.js";
export { SchedulerCore } from "./machines/scheduler/core.js";
export type { SchedulerInput, SchedulerEffects, SchedulerReply } from "./machines/scheduler/inputs.js";
export { WorkerCore } from "./machines/worker/core.js";
export { readReason, type LoggedWhy, type MachineName, type Reason, type ReasonKind, type Why, type WhyOf } from "./machines/reasons.js";
export type { WorkerInput, WorkerEffects, WorkerInit } from "./machines/worker/inputs.js";
export { TASK, WORKER_TASK, WORKER, SCHEDULER, taskMachine, workerTaskMachine, workerMachine, schedulerMachine } from "./machines/tables.js";
export type { TaskStateName, WorkerTaskStateName, WorkerStateName, SchedulerStateName } from "./machines/tables.js";
export { compileMachine, type CompiledMachine } from "./machines/compile.js";
export * as protocol from "./machines/protocol.js";
export { keySplit, keySplitGroup, tupleKey, tokenize, order } from "./machines/graph/index.js";
export { MemoryBus, MemoryTransport, subjects, type Transport, type Msg } from "./transport/index.js";
export {
  FileLogSink,
  MemoryLogSink,
  NullLogSink,
  openLog,
  readLogSync,
  checkSequences,
  type LogRecord,
  type LogSink,
  type LogProblem,
  type LogReader,
} from "./log/index.js";
export { replay, type ReplayOptions, type ReplayResult, type Divergence, type ClusterStateView, type BuildDifference } from "./replay/index.js";
export { hashFunctions } from "./actors/function-hashes.js";
export { Timeline, type EntityView } from "./tools/timeline.js";
export { whatIf, whatIfLog, type WhatIfResult, type WhatIfOptions } from "./tools/what-if.js";
export { extractWorkload, type ExtractedWorkload } from "./tools/workload-extract.js";
export { exportSlice, type ExportReport } from "./tools/export.js";
export { AmbiguousKeyError, NoSuchKeyError, resolveKey, listKeys } from "./tools/keys.js";
export { connectClient, type ConnectClientOptions } from "./actors/process/connect-client.js";
export { NatsTransport, type NatsTransportOptions } from "./transport/nats.js";
export { connectNats, redactUrls, splitUrlCredentials, type NatsConnectOptions, type NatsTlsOptions, type UrlCredentials } from "./transport/nats-connect.js";
