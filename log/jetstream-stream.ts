/**
 * The stream that holds a cluster's log: found, or created with the layout of
 * jetstream-layout.ts, and the log's header message.
 */
import { DiscardPolicy, JetStreamApiError, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager, type MsgRequest, type StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { BadOptionError, LogCorruptError, NatschedError } from "../machines/errors.js";
import { decodeHeaderLine, encodeHeaderLine, makeHeader, type LogHeader } from "./codec.js";
import { writerMeta } from "./package-version.js";
import { jetStreamManagerAfterElections, waitingOutElections } from "./jetstream-elections.js";
import { logHeaderSubject, logRecordsSubject, logStreamName } from "./jetstream-layout.js";

export interface LogStreamOptions {
  /** Replicas of the stream when it is created (3 on a 3-server cluster survives a host crash). Default 1. */
  replicas?: number;
  /** Header meta when the log is created. */
  meta?: Record<string, unknown>;
  /** The whole header when the log is created (an export keeps the original's); overrides `meta`. */
  header?: LogHeader;
}

const STREAM_NOT_FOUND = 10059;
const WRONG_LAST_SEQUENCE = 10071;

export async function logStreamManager(nc: NatsConnection): Promise<JetStreamManager> {
  try {
    return await jetStreamManagerAfterElections(nc);
  } catch (error) {
    throw new NatschedError("PROTOCOL", `JetStream is not available on ${nc.getServer()} (start nats-server with -js): ${(error as Error)?.message ?? String(error)}`, {
      cause: error,
    });
  }
}

/**
 * Whether the account this connection logs in to can use JetStream: a `$JS.API.INFO`
 * request. Not available: the server runs without JetStream (`-js`), the account has none,
 * or the user may not publish on `$JS.API.INFO` (the reason says which). A request that
 * times out is asked again (a JetStream cluster electing its meta leader answers nothing).
 */
export async function jetStreamAvailability(nc: NatsConnection, timeoutMs = 2000): Promise<{ available: true } | { available: false; reason: string }> {
  try {
    await waitingOutElections((timeout) => jetstreamManager(nc, { timeout }), { attemptMs: timeoutMs });
    return { available: true };
  } catch (error) {
    return { available: false, reason: (error as Error)?.message ?? String(error) };
  }
}

/** The cluster's log stream, or null if there is none. */
export async function findLogStream(jsm: JetStreamManager, cluster: string): Promise<StreamInfo | null> {
  try {
    return await waitingOutElections(() => jsm.streams.info(logStreamName(cluster)), { attemptMs: jsm.getOptions().timeout ?? 5000 });
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return null;
    throw error;
  }
}

/** The cluster's log stream, created (with its header) if missing. Checks an existing stream is one. */
export async function ensureLogStream(jsm: JetStreamManager, cluster: string, opts: LogStreamOptions = {}): Promise<StreamInfo> {
  const replicas = opts.replicas ?? 1;
  if (!Number.isSafeInteger(replicas) || replicas < 1 || replicas > 5) throw new BadOptionError("replicas", `must be a whole number from 1 to 5, got ${replicas}`);
  let info = await findLogStream(jsm, cluster);
  if (info === null) {
    try {
      info = await jsm.streams.add({
        name: logStreamName(cluster),
        subjects: [logHeaderSubject(cluster), logRecordsSubject(cluster)],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        // A log that is full refuses new records rather than dropping the oldest: replay needs every one.
        discard: DiscardPolicy.New,
        num_replicas: replicas,
        allow_direct: true,
        description: `natsched event log of cluster ${cluster}`,
      });
    } catch (error) {
      // Someone else created it meanwhile: use theirs.
      info = await findLogStream(jsm, cluster);
      if (info === null) throw error;
    }
  }
  checkStreamLayout(info, cluster);
  await writeHeaderOnce(jsm, cluster, opts.header ?? makeHeader({ ...writerMeta(), cluster, ...(opts.meta ?? {}) }));
  return info;
}

function checkStreamLayout(info: StreamInfo, cluster: string): void {
  const subjects = info.config.subjects ?? [];
  for (const subject of [logHeaderSubject(cluster), logRecordsSubject(cluster)]) {
    if (!subjects.includes(subject)) {
      throw new LogCorruptError(`stream ${info.config.name} is not a natsched log: its subjects ${JSON.stringify(subjects)} do not include ${subject}`);
    }
  }
}

/**
 * Publishes the header if the log has none; the first writer's header wins (the
 * expectation "no message on the header subject yet" refuses a second one).
 */
export async function writeHeaderOnce(jsm: JetStreamManager, cluster: string, header: LogHeader): Promise<boolean> {
  if ((await readLogHeader(jsm, cluster)) !== undefined) return false;
  const js = jsm.jetstream();
  try {
    await js.publish(logHeaderSubject(cluster), encodeHeaderLine(header), { msgID: `${cluster}:header`, expect: { lastSubjectSequence: 0 } });
    return true;
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === WRONG_LAST_SEQUENCE) return false;
    throw error;
  }
}

/**
 * The header line of the log (without its newline), or undefined if it has none: the first
 * message on the header subject (written once, expecting none before it); anything
 * published there after it is not the header.
 */
export async function readLogHeaderLine(jsm: JetStreamManager, cluster: string): Promise<string | undefined> {
  // `next_by_subj` (nats-server 2.9+) is missing from the client's type for this API.
  const first = { next_by_subj: logHeaderSubject(cluster), seq: 1 } as unknown as MsgRequest;
  const msg = await jsm.streams.getMessage(logStreamName(cluster), first);
  if (msg === null) return undefined;
  return msg.string().replace(/\n$/, "");
}

/** The log's header, if it has one this code reads. */
export async function readLogHeader(jsm: JetStreamManager, cluster: string): Promise<LogHeader | undefined> {
  const line = await readLogHeaderLine(jsm, cluster);
  if (line === undefined) return undefined;
  const decoded = decodeHeaderLine(line);
  return decoded.ok || decoded.kind === "version" ? decoded.header : undefined;
}

/** The server's version as numbers, e.g. [2, 9, 10]. */
export function serverVersion(nc: NatsConnection): [number, number, number] {
  const parts = (nc.info?.version ?? "0.0.0").split(/[.-]/).map((p) => Number.parseInt(p, 10));
  return [parts[0] || 0, parts[1] || 0, parts[2] || 0];
}

/**
 * What an acknowledged write is worth on this server, for the operator: JetStream
 * acknowledges before it fsyncs (every 2 minutes by default). `sync_interval: always`
 * (nats-server 2.10.0 and newer; 2.9 rejects the setting) fsyncs before each ack.
 */
export function durabilityNote(nc: NatsConnection, replicas: number): string {
  const [major, minor] = serverVersion(nc);
  const syncSetting = major > 2 || (major === 2 && minor >= 10);
  if (replicas >= 3) return `stream replicas ${replicas}: an acknowledged record is on ${Math.ceil((replicas + 1) / 2)} servers`;
  return syncSetting
    ? "an acknowledged record survives a host crash only with `jetstream { sync_interval: always }` in the server config, or stream replicas 3"
    : `nats-server ${nc.info?.version ?? "?"} has no sync_interval setting (2.10+): an acknowledged record survives a host crash only with stream replicas 3`;
}
