/**
 * Where a client on NATS records itself (actor `client.<id>`, docs/log-format.md): its own
 * file, the cluster's log in JetStream, or nowhere.
 */
import { FileLogSink, type LogFileFormat } from "../../log/file-log.js";
import { JetStreamLogSink } from "../../log/jetstream-log.js";
import { jetstreamManager } from "@nats-io/jetstream";
import { logStreamName } from "../../log/jetstream-layout.js";
import type { LogProblem, LogSink } from "../../log/types.js";
import { BadOptionError, ForbiddenError, LogForeignMessageError } from "../../machines/errors.js";
import type { NatsTransport } from "../../transport/nats.js";
import type { Msg } from "../../transport/types.js";

/**
 * A file path; `{ jetstream: true }`: the cluster's log in JetStream (created if missing);
 * false: none. Unset: the cluster's log in JetStream when the cluster has one (its scheduler
 * logs there) and this connection may read it, else none.
 */
export type ClientLogOption = string | { jetstream: true } | false;

export interface ClientLog {
  sink: LogSink;
  /** The seq the actor's next record takes: a client id used before continues its log. */
  firstSeq: number;
}

export async function openClientLog(
  transport: NatsTransport,
  cluster: string,
  id: string,
  option: ClientLogOption | undefined,
  format: LogFileFormat | undefined,
  onError: ((error: unknown) => void) | undefined,
): Promise<ClientLog | null> {
  if (option === false) return null;
  if (typeof option === "string") {
    if (option === "") throw new BadOptionError("log", "a log file's path must not be empty");
    return { sink: await FileLogSink.open(option, { meta: { cluster, client: id }, format }), firstSeq: 0 };
  }
  if (option !== undefined && (typeof option !== "object" || option === null || option.jetstream !== true)) {
    throw new BadOptionError("log", `must be a file path, { jetstream: true } or false, got ${JSON.stringify(option)}`);
  }
  if (option === undefined && !(await clusterLogsToJetStream(transport, cluster))) return null;
  const foreign = (p: LogProblem) => onError?.(new LogForeignMessageError(p.actor ?? "", p.streamSeq ?? 0, p.message));
  const sink = await JetStreamLogSink.open({ nc: transport.nc, cluster, onForeign: foreign, ...(onError ? { onError } : {}) });
  try {
    const claim = await sink.claim(`client.${id}`);
    for (const p of claim.foreign) foreign(p);
    return { sink, firstSeq: claim.nextSeq };
  } catch (error) {
    await sink.close().catch(() => undefined);
    throw error;
  }
}

/**
 * The transport's error hook, less the server's refusal of the default's question (a user,
 * such as the ready roles config's clients, with no right to ask JetStream): that refusal is
 * the answer "no log here", not an error of the client's.
 */
export function withoutProbeRefusals(cluster: string, onError: ((error: unknown, msg?: Msg) => void) | undefined): (error: unknown, msg?: Msg) => void {
  const probed = [`"$JS.API.INFO"`, `"$JS.API.STREAM.INFO.${logStreamName(cluster)}"`];
  return (error, msg) => {
    const message = (error as { message?: unknown } | null)?.message;
    if (error instanceof ForbiddenError && typeof message === "string" && probed.some((subject) => message.endsWith(subject))) return;
    if (onError !== undefined) onError(error, msg);
    else console.error(`natsched: ${msg ? `message on ${msg.subject}: ` : ""}`, error);
  };
}

/**
 * Whether the cluster has a log stream this connection can see: one question, a second at
 * most, so that connecting is not held up where there is none (no JetStream, no right to
 * look, or a JetStream cluster electing its leader: then no log either).
 */
async function clusterLogsToJetStream(transport: NatsTransport, cluster: string): Promise<boolean> {
  try {
    const jsm = await jetstreamManager(transport.nc, { timeout: 1000 });
    await jsm.streams.info(logStreamName(cluster));
    return true;
  } catch {
    return false;
  }
}
