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
  MSG_ID_HEADER,
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

/** What a pull may bring at most, in bytes: well under the server's per-client buffer (`max_pending`, 64 MiB by default). */
const PULL_BYTES = 32 * 1024 * 1024;

/**
 * Messages asked for per pull. Bounded by messages, never by bytes: with `max_bytes`, the
 * client library refills with what is left of the byte budget, and nats-server 2.9 refuses a
 * refill smaller than the next message (409 "message size exceeds maxbytes"); nothing then
 * moves until the consumer's heartbeat times out, tens of seconds later. As many messages as
 * fit in PULL_BYTES at the server's largest (`max_payload`), so a pull of large messages does
 * not outrun the server's buffer for this client (it would drop it as a slow consumer).
 */
export function pullMessages(maxPayload: number | undefined): number {
  return Math.min(1000, Math.max(1, Math.floor(PULL_BYTES / (maxPayload ?? 1024 * 1024))));
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
    yield* this.read(filter);
  }

  /**
   * `actor`'s records in the messages after its log's message at stream sequence `tail`
   * (where a scheduler's snapshot was taken: replay/jetstream-resume.ts): the log is known
   * to be the actor's up to there, and its seqs are checked from the first record read on.
   */
  recordsAfter(actor: string, tail: number): AsyncIterableIterator<LogRecord> {
    return this.read({ actor }, tail);
  }

  private async *read(filter: RecordFilter | undefined, after?: number): AsyncIterableIterator<LogRecord> {
    this.currentProblems = [];
    if (this.versionProblem) {
      this.currentProblems.push(this.versionProblem);
      return;
    }
    const match = compileFilter(filter);
    const cluster = this.source.cluster;
    const nc = this.source.nc ?? (await connectNats({ name: `natsched-log-reader-${cluster}`, ...this.source.connect }));
    try {
      const jsm = await logStreamManager(nc);
      const subject = filter?.actor !== undefined ? actorSubject(cluster, filter.actor) : logRecordsSubject(cluster);
      const stored = await storedMessages(jsm, cluster, subject);
      const decoder = new JetStreamLogDecoder(stored.deleted, after === undefined ? undefined : { actor: filter!.actor!, subject, tail: after });
      this.currentProblems = decoder.problems;
      if (stored.messages === 0) return;
      if (after !== undefined && ((await jsm.streams.getMessage(logStreamName(cluster), { last_by_subj: subject }))?.seq ?? 0) <= after) return;
      const consumer = await orderedLogConsumer(nc, logStreamName(cluster), subject, after === undefined ? {} : { afterSeq: after });
      const pull = pullMessages(nc.info?.max_payload);
      const messages = await consumer.consume({ max_messages: pull, threshold_messages: Math.floor(pull / 4) });
      const batch: LogRecord[] = [];
      try {
        for await (const m of messages) {
          const actor = actorOfSubject(cluster, m.subject);
          if (actor !== undefined) {
            const headers = m.headers;
            decoder.message(actor, { subject: m.subject, streamSeq: m.seq, body: m.data, msgId: headers?.get(MSG_ID_HEADER) || undefined, part: headers?.get(PART_HEADER) || undefined }, batch);
          }
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

/**
 * Messages the stream holds on `subject` (a wildcard counts every subject it matches), and
 * the stream sequences of messages deleted from the stream (a log continues past them).
 */
export async function storedMessages(jsm: JetStreamManager, cluster: string, subject: string): Promise<{ messages: number; deleted: ReadonlySet<number> }> {
  const info = await jsm.streams.info(logStreamName(cluster), { subjects_filter: subject, deleted_details: true });
  let messages = 0;
  for (const count of Object.values(info.state.subjects ?? {})) messages += count;
  return { messages, deleted: new Set(info.state.deleted ?? []) };
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
