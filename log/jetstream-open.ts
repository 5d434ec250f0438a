/**
 * One way to open any log: a file path, or a JetStream location `nats://host:port/<cluster>`.
 * What the CLI's log tools (`log`, `story`, `inspect`, `log export`) and `replayAt` (replay/replay-at.ts) call.
 */
import type { NatsConnectOptions } from "../transport/nats-connect.js";
import { isJetStreamLocation, parseJetStreamLocation } from "./jetstream-layout.js";
import { openLog, type LogReader } from "./reader.js";

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
