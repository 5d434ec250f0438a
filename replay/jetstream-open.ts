/**
 * One way to open any log: a file path, or a JetStream location `nats://host:port/<cluster>`.
 * What the CLI's log tools (`log`, `story`, `replay`, `log export`) call.
 */
import { isJetStreamLocation } from "./jetstream-layout.js";
import { openLog, type LogReader } from "./reader.js";
import { replay } from "./replay.js";
import type { ReplayOptions, ReplayResult } from "./replay-types.js";

export { isJetStreamLocation };

/** A reader of the file or JetStream log at `location`. */
export async function openLogAt(location: string): Promise<LogReader> {
  if (!isJetStreamLocation(location)) return openLog(location);
  const { openJetStreamLog } = await import("./jetstream-reader.js");
  return openJetStreamLog(location);
}

/**
 * `replay` of the log at `location`. A JetStream log is read into memory first (so a
 * divergence gets its state diff, which needs a second pass); the problems its reader found
 * (checksums, duplicates, torn records) count as the file reader's would.
 */
export async function replayAt(location: string, options: ReplayOptions = {}): Promise<ReplayResult> {
  if (!isJetStreamLocation(location)) return replay(location, options);
  const reader = await openLogAt(location);
  const { records, problems } = await reader.readAll();
  const result = await replay(records, options);
  // Gaps the replay finds again in the records themselves; the rest only the reader saw.
  const unseen = problems.filter((p) => p.kind !== "gap");
  if (unseen.length > 0) {
    result.problems.unshift(...unseen);
    result.complete = false;
    result.ok = false;
  }
  return result;
}
