/** The log floor's public pieces (index.ts re-exports them): record types, the line codec, file and in-memory sinks, the reader. */
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
