/** A recorded log (a file, or a JetStream log at nats://host:port/<cluster>) read whole into a dashboard model. */
import { openLogAt } from "../../log/jetstream-open.js";
import type { LogProblem } from "../../log/types.js";
import type { NatsConnectOptions } from "../../transport/nats-connect.js";
import { DashboardModel } from "./model.js";

export async function recordedLogModel(location: string, connect: Omit<NatsConnectOptions, "servers"> = {}): Promise<{ model: DashboardModel; problems: readonly LogProblem[] }> {
  const reader = await openLogAt(location, connect);
  const cluster = typeof reader.header.meta?.cluster === "string" ? reader.header.meta.cluster : undefined;
  const model = new DashboardModel({ kind: "log", location, live: false, ...(cluster !== undefined ? { cluster } : {}) }, reader.header.created);
  for await (const record of reader.records()) model.add(record);
  return { model, problems: reader.problems };
}
