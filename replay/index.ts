export * from "./types.js";
export {
  LOG_FORMAT_NAME,
  decodeHeaderLine,
  decodeRecordLine,
  encodeHeaderLine,
  encodeRecordLine,
  makeHeader,
  maxRecordLineBytes,
  writeRecordLine,
  type HeaderDecoding,
  type LogHeader,
  type RecordDecoding,
} from "./codec.js";
export { FileLogSink, type FileLogSinkOptions } from "./file-log.js";
export { MemoryLogSink, NullLogSink, type MemoryLogSinkOptions } from "./memory-log.js";
export { openLog, readLogSync, type LogContents, type LogReader } from "./reader.js";
export { compileFilter, concernsKey, type RecordFilter } from "./record-filter.js";
export { checkSequences } from "./sequences.js";
export { replay } from "./replay.js";
export { Timeline, type EntityView } from "./timeline.js";
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
