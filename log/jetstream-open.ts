/**
 * One way to open any log: a file path, or a JetStream location `nats://host:port/<cluster>`.
 * What the CLI's log tools (`log`, `story`, `replay`, `log export`) call.
 */
import type { NatsConnectOptions } from "../transport/nats-connect.js";
import { isJetStreamLocation, parseJetStreamLocation } from "./jetstream-layout.js";
import { openLog, type LogReader } from "./reader.js";
import { replay } from "../replay/replay.js";
import type { ReplayOptions, ReplayResult } from "../replay/replay-types.js";

export { isJetStreamLocation };

/**
 * A reader of the file or JetStream log at `location`. For a JetStream log, `connect` gives
 * the connection settings (credentials, TLS) besides the location's server URL; they win
 * over credentials written in the URL.
 */
export async function openLogAt(location: string, connect: Omit<NatsConnectOptions, "servers"> = {}): Promise<LogReader> {
  if (!isJetStreamLocation(location)) return openLog(location);
  const { openJetStreamLog } = await import("./jetstream-reader.js");
  const { servers, cluster } = parseJetStreamLocation(location);
  return openJetStreamLog({ cluster, connect: { ...connect, servers } });
}

/**
 * `replay` of the log at `location`. A JetStream log is read into memory first (so a
 * divergence gets its state diff, which needs a second pass); the problems its reader found
 * (checksums, duplicates, torn records) count as the file reader's would. Foreign messages
 * on the log's subjects are listed among the problems but leave the log complete.
 */
export async function replayAt(location: string, options: ReplayOptions = {}, connect: Omit<NatsConnectOptions, "servers"> = {}): Promise<ReplayResult> {
  if (!isJetStreamLocation(location)) return replay(location, options);
  const reader = await openLogAt(location, connect);
  const { records, problems } = await reader.readAll();
  const result = await replay(records, options);
  // Gaps the replay finds again in the records themselves; the rest only the reader saw.
  const unseen = problems.filter((p) => p.kind !== "gap");
  result.problems.unshift(...unseen);
  // A foreign message (jetstream-chain.ts) took nothing from the log: reported, the log is whole.
  if (unseen.some((p) => p.kind !== "foreign")) {
    result.complete = false;
    result.ok = false;
  }
  return result;
}
