/**
 * Reading a cluster's log from JetStream as a LogReader, the same interface the file reader
 * gives (reader.ts): `natsched log`, `story`, `replay` and `log export` take either.
 * Records come in stream order (each actor's in its own order, actors interleaved as the
 * server stored them), through an ordered consumer, to the end of the stream as it was when
 * the pass caught up with it.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { BadOptionError, LogCorruptError } from "../machines/errors.js";
import { connectNats, type NatsConnectOptions } from "../transport/nats-connect.js";
import { decodeHeaderLine, makeHeader, type LogHeader } from "./codec.js";
import { JetStreamLogDecoder } from "./jetstream-decoder.js";
import { orderedLogConsumer } from "./jetstream-elections.js";
import {
  actorOfSubject,
  actorSubject,
  checkCluster,
  formatJetStreamLocation,
  logRecordsSubject,
  logStreamName,
  parseJetStreamLocation,
  PART_HEADER,
} from "./jetstream-layout.js";
import { findLogStream, logStreamManager, readLogHeaderLine } from "./jetstream-stream.js";
import type { LogReader } from "./reader.js";
import { compileFilter, type RecordFilter } from "./record-filter.js";
import type { LogProblem, LogRecord } from "./types.js";

export interface JetStreamLogSource {
  cluster: string;
  /** A connection to read on (left open). */
  nc?: NatsConnection;
  /** Without `nc`: how to connect; each pass over the records connects and closes again. */
  connect?: NatsConnectOptions;
}

/**
 * Bytes asked for per pull: a few messages at their largest. Counted in messages, a pull of
 * large messages can outrun the server's per-client buffer (it then drops the client as a
 * slow consumer, and the ordered consumer stalls until it notices).
 */
function pullBytes(nc: NatsConnection): number {
  return Math.max(8 * 1024 * 1024, 4 * (nc.info?.max_payload ?? 1024 * 1024));
}

/**
 * Opens the log at `nats://host:port/<cluster>` (or given a connection and a cluster) and
 * checks its header. Throws BadOptionError when the server has no log for the cluster,
 * LogCorruptError when the stream's header is not a natsched header.
 */
export async function openJetStreamLog(source: string | JetStreamLogSource): Promise<JetStreamLogReader> {
  const spec: JetStreamLogSource = typeof source === "string" ? locationSource(source) : source;
  checkCluster(spec.cluster);
  return withConnection(spec, async (nc) => {
    const jsm = await logStreamManager(nc);
    const location = formatJetStreamLocation(nc.getServer(), spec.cluster);
    if ((await findLogStream(jsm, spec.cluster)) === null) {
      throw new BadOptionError("log", `${location}: no event log of cluster ${spec.cluster} on this server (no stream ${logStreamName(spec.cluster)})`);
    }
    const line = await readLogHeaderLine(jsm, spec.cluster);
    let header: LogHeader;
    let versionProblem: LogProblem | undefined;
    if (line === undefined) {
      header = makeHeader({ cluster: spec.cluster }, 0);
    } else {
      const decoded = decodeHeaderLine(line);
      if (!decoded.ok && decoded.kind === "malformed") throw new LogCorruptError(`${location}: ${decoded.message}`);
      header = decoded.header;
      if (!decoded.ok) versionProblem = { kind: "version", message: `header: ${decoded.message}; no records read` };
    }
    return new JetStreamLogReader(location, spec, header, versionProblem);
  });
}

export class JetStreamLogReader implements LogReader {
  private currentProblems: LogProblem[] = [];

  constructor(
    /** The log's location, `nats://host:port/<cluster>`. */
    readonly path: string,
    private readonly source: JetStreamLogSource,
    readonly header: LogHeader,
    private readonly versionProblem: LogProblem | undefined,
  ) {}

  get cluster(): string {
    return this.source.cluster;
  }

  get problems(): readonly LogProblem[] {
    return this.currentProblems;
  }

  async *records(filter?: RecordFilter): AsyncIterableIterator<LogRecord> {
    const decoder = new JetStreamLogDecoder();
    this.currentProblems = decoder.problems;
    if (this.versionProblem) {
      decoder.problems.push(this.versionProblem);
      return;
    }
    const match = compileFilter(filter);
    const cluster = this.source.cluster;
    const nc = this.source.nc ?? (await connectNats({ name: `natsched-log-reader-${cluster}`, ...this.source.connect }));
    try {
      const jsm = await logStreamManager(nc);
      const subject = filter?.actor !== undefined ? actorSubject(cluster, filter.actor) : logRecordsSubject(cluster);
      if ((await storedMessages(jsm, cluster, subject)) === 0) return;
      const consumer = await orderedLogConsumer(nc, logStreamName(cluster), subject);
      // Bounded by messages: nats-server 2.9 refuses the byte-bounded refills ("message size exceeds maxbytes") and the read stalls until the heartbeat times out.
      const messages = await consumer.consume({ max_messages: 64 });
      const batch: LogRecord[] = [];
      try {
        for await (const m of messages) {
          const actor = actorOfSubject(cluster, m.subject);
          if (actor !== undefined) decoder.message(actor, m.data, m.headers?.get(PART_HEADER) || undefined, m.seq, batch);
          for (const record of batch) if (match(record)) yield record;
          batch.length = 0;
          if (m.info.pending === 0) break;
        }
      } finally {
        messages.stop();
      }
      decoder.end();
    } finally {
      if (this.source.nc === undefined) await nc.close().catch(() => undefined);
    }
  }

  async readAll(filter?: RecordFilter): Promise<{ records: LogRecord[]; problems: LogProblem[] }> {
    const records: LogRecord[] = [];
    for await (const record of this.records(filter)) records.push(record);
    return { records, problems: [...this.currentProblems] };
  }
}

/** Messages the stream holds on `subject` (a wildcard counts every subject it matches). */
async function storedMessages(jsm: JetStreamManager, cluster: string, subject: string): Promise<number> {
  const info = await jsm.streams.info(logStreamName(cluster), { subjects_filter: subject });
  let total = 0;
  for (const count of Object.values(info.state.subjects ?? {})) total += count;
  return total;
}

function locationSource(location: string): JetStreamLogSource {
  const { servers, cluster } = parseJetStreamLocation(location);
  return { cluster, connect: { servers } };
}

async function withConnection<T>(source: JetStreamLogSource, run: (nc: NatsConnection) => Promise<T>): Promise<T> {
  if (source.nc !== undefined) return run(source.nc);
  const nc = await connectNats({ name: `natsched-log-reader-${source.cluster}`, ...source.connect });
  try {
    return await run(nc);
  } finally {
    await nc.close().catch(() => undefined);
  }
}
