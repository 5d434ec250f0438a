/** The replay engine's public pieces (index.ts re-exports them). */
export { replay } from "./replay.js";
export type { BuildDifference } from "./build-differences.js";
export type {
  ActorReplay,
  Divergence,
  InstanceDiff,
  ReplayOptions,
  ReplayProblem,
  ReplayResult,
  ReplaySource,
  ReplayStats,
  StateChange,
  TransitionFacts,
  UntilKind,
} from "./replay-types.js";
export type { ClusterStateView, SchedulerStateView, SchedulerWorkerView, WorkerCoreView } from "./state-view.js";
