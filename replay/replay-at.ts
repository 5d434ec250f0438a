/**
 * `replay` of the log at a location: a file path, or a JetStream location
 * `nats://host:port/<cluster>` (log/jetstream-open.ts opens either). What `natsched replay` calls.
 */
import type { NatsConnectOptions } from "../transport/nats-connect.js";
import { isJetStreamLocation, openLogAt } from "../log/jetstream-open.js";
import { replay } from "./replay.js";
import { buildDifferences, startRecordDifferences, thisBuild } from "./build-differences.js";
import type { ReplayOptions, ReplayResult } from "./replay-types.js";

/**
 * `replay` of the log at `location`. A JetStream log is read into memory first (so a
 * divergence gets its state diff, which needs a second pass); the problems its reader found
 * (checksums, duplicates, torn records) count as the file reader's would. Foreign messages
 * on the log's subjects are listed among the problems but leave the log complete.
 * A JetStream log is accepted open (`openOk` defaults to true): a live cluster is still
 * writing it. Pass `openOk: false` to require that every actor has stopped.
 */
export async function replayAt(location: string, options: ReplayOptions = {}, connect: Omit<NatsConnectOptions, "servers"> = {}): Promise<ReplayResult> {
  if (!isJetStreamLocation(location)) return replay(location, options);
  const reader = await openLogAt(location, connect);
  const { records, problems } = await reader.readAll();
  const result = await replay(records, { ...options, openOk: options.openOk ?? true });
  const now = thisBuild(options.functions);
  result.buildDifferences = [...buildDifferences(reader.header.meta, now), ...startRecordDifferences(records, now)];
  // Gaps the replay finds again in the records themselves; the rest only the reader saw.
  const unseen = problems.filter((p) => p.kind !== "gap");
  result.problems.unshift(...unseen);
  // A foreign message (log/jetstream-chain.ts) took nothing from the log: reported, the log is whole.
  if (unseen.some((p) => p.kind !== "foreign")) {
    result.complete = false;
    result.ok = false;
  }
  return result;
}
