export * from "../log/types.js";
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
} from "../log/codec.js";
export { FileLogSink, type FileLogSinkOptions } from "../log/file-log.js";
export { MemoryLogSink, NullLogSink, type MemoryLogSinkOptions } from "../log/memory-log.js";
export { openLog, readLogSync, type LogContents, type LogReader } from "../log/reader.js";
export { compileFilter, concernsKey, type RecordFilter } from "../log/record-filter.js";
export { checkSequences } from "../log/sequences.js";
export { replay } from "./replay.js";
export { Timeline, type EntityView } from "../tools/timeline.js";
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
