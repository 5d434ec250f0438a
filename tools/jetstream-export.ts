/**
 * `natsched log export <from> <to>`: copies a log between a file and JetStream, either way
 * (or file to file, stream to stream). The copy keeps the header (its `created` and `meta`)
 * and every record in the order read, so a JSON-lines file exported to JetStream and back
 * is the same file, byte for byte. A file target is written in the source file's format
 * (JSON lines from JetStream) unless `format` says otherwise: file to file, that turns a
 * binary log into JSON lines and back. Records the source's reader skips (bad checksums,
 * duplicates) are not copied; its problems are returned.
 *
 * Into JetStream the copy is the log's only writer: the target log must be empty, and the
 * records go out in their order with many messages in flight, each message's expected last
 * subject sequence (and the link in its id, jetstream-chain.ts) predicted from the ones before it. A message stored anywhere but where
 * predicted (another writer) stops the export with LogConflictError.
 */
import { existsSync } from "node:fs";
import { open } from "node:fs/promises";
import { resolve } from "node:path";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { BadOptionError, LogConflictError } from "../machines/errors.js";
import { connectNats, type NatsConnectOptions } from "../transport/nats-connect.js";
import { encodeHeaderLine, encodeRecordLine, type LogHeader } from "../log/codec.js";
import { FileLogSink, logFormatVersion, type LogFileFormat } from "../log/file-log.js";
import { formatJetStreamLocation, isJetStreamLocation, linkedMsgId, logRecordsSubject, logStreamName, parseJetStreamLocation, PART_HEADER } from "../log/jetstream-layout.js";
import { ActorBatcher, type LogMessage } from "../log/jetstream-messages.js";
import { openLogAt } from "../log/jetstream-open.js";
import { ensureLogStream, logStreamManager } from "../log/jetstream-stream.js";
import { LOG_FORMAT_FRAMES, type LogProblem, type LogRecord } from "../log/types.js";

export interface ExportOptions {
  /** Overwrite a target file that exists. */
  force?: boolean;
  /** Replicas of a JetStream target stream that does not exist yet. */
  replicas?: number;
  /** Connection settings (credentials, TLS) for a JetStream source or target, besides its URL. */
  connect?: Omit<NatsConnectOptions, "servers">;
  /** A file target's format: default the source file's, JSON lines from JetStream. */
  format?: LogFileFormat;
}

export interface ExportReport {
  from: string;
  to: string;
  records: number;
  actors: string[];
  /** What the source's reader found (those records were not copied). */
  problems: LogProblem[];
}

/** Messages in flight at once while exporting into JetStream. */
const WINDOW = 128;
const HEADER_ROOM = 8 * 1024;
const FILE_CHUNK_BYTES = 1024 * 1024;

export async function exportLog(from: string, to: string, opts: ExportOptions = {}): Promise<ExportReport> {
  if (from === to) throw new BadOptionError("to", "the target is the source");
  if (!isJetStreamLocation(to) && !isJetStreamLocation(from) && resolve(from) === resolve(to)) throw new BadOptionError("to", "the target is the source");
  if (!isJetStreamLocation(to) && existsSync(to) && !opts.force) throw new BadOptionError("to", `${to} exists (--force overwrites it)`);
  if (opts.format !== undefined) logFormatVersion(opts.format);
  const reader = await openLogAt(from, opts.connect);
  const actors = new Set<string>();
  let count = 0;
  async function* counted(): AsyncIterable<LogRecord> {
    for await (const record of reader.records()) {
      actors.add(record.actor);
      count++;
      yield record;
    }
  }
  const binary = opts.format === undefined ? !isJetStreamLocation(from) && reader.header.v === LOG_FORMAT_FRAMES : opts.format === "binary";
  const written = isJetStreamLocation(to) ? await writeToJetStream(to, reader.header, counted(), opts) : binary ? await writeFrames(to, reader.header, counted()) : await writeToFile(to, reader.header, counted());
  return { from: reader.path, to: written, records: count, actors: [...actors].sort(), problems: [...reader.problems] };
}

/** A binary (version-2) file with the source's header meta and creation time. */
async function writeFrames(path: string, header: LogHeader, records: AsyncIterable<LogRecord>): Promise<string> {
  const sink = await FileLogSink.open(path, { meta: header.meta, created: header.created, format: "binary" });
  try {
    for await (const record of records) sink.append(record);
  } finally {
    await sink.close();
  }
  return path;
}

/** A JSON-lines (version-1) file. */
async function writeToFile(path: string, header: LogHeader, records: AsyncIterable<LogRecord>): Promise<string> {
  const handle = await open(path, "w");
  try {
    let chunk = encodeHeaderLine({ ...header, v: 1 });
    for await (const record of records) {
      chunk += encodeRecordLine(record);
      if (chunk.length >= FILE_CHUNK_BYTES) {
        await handle.write(chunk);
        chunk = "";
      }
    }
    await handle.write(chunk);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  return path;
}

async function writeToJetStream(location: string, header: LogHeader, records: AsyncIterable<LogRecord>, opts: ExportOptions): Promise<string> {
  const { servers, cluster } = parseJetStreamLocation(location);
  const nc = await connectNats({ name: `natsched-log-export-${cluster}`, ...opts.connect, servers });
  try {
    const jsm = await logStreamManager(nc);
    const info = await ensureLogStream(jsm, cluster, { header, ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}) });
    const target = formatJetStreamLocation(nc.getServer(), cluster);
    const existing = await jsm.streams.info(logStreamName(cluster), { subjects_filter: logRecordsSubject(cluster) });
    if (Object.values(existing.state.subjects ?? {}).some((n) => n > 0)) {
      throw new BadOptionError("to", `${target} already holds records: export into a cluster whose log is empty`);
    }
    const maxMsg = info.config.max_msg_size !== undefined && info.config.max_msg_size > 0 ? info.config.max_msg_size : Infinity;
    const maxBody = Math.min(nc.info?.max_payload ?? 1024 * 1024, maxMsg) - HEADER_ROOM;
    const writer = new OrderedWriter(jetstream(nc), existing.state.last_seq);
    const batchers = new Map<string, ActorBatcher>();
    const sealed: LogMessage[] = [];
    let current: ActorBatcher | undefined;
    let index = 0;
    for await (const record of records) {
      let batcher = batchers.get(record.actor);
      if (batcher === undefined) batchers.set(record.actor, (batcher = new ActorBatcher(cluster, record.actor, maxBody)));
      // A message holds consecutive records of one actor: the stream keeps the source's order.
      if (current !== batcher) current?.seal(sealed);
      current = batcher;
      batcher.add(record, index++, sealed);
      for (const message of sealed) await writer.send(message);
      sealed.length = 0;
    }
    current?.seal(sealed);
    for (const message of sealed) await writer.send(message);
    await writer.done();
    return target;
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** Publishes messages in order, WINDOW at a time, each expecting the stream sequences predicted for the ones before it. */
class OrderedWriter {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly lastByActor = new Map<string, number>();
  private failure: unknown;

  constructor(
    private readonly js: JetStreamClient,
    private lastSeq: number,
  ) {}

  async send(message: LogMessage): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    const expected = this.lastByActor.get(message.actor) ?? 0;
    const predicted = ++this.lastSeq;
    this.lastByActor.set(message.actor, predicted);
    const h = natsHeaders();
    if (message.part !== undefined) h.set(PART_HEADER, message.part);
    const publish = this.js
      .publish(message.subject, message.body, { msgID: linkedMsgId(message.msgId, expected), expect: { lastSubjectSequence: expected }, headers: h })
      .then(
        (ack) => {
          if (ack.seq !== predicted || ack.duplicate) {
            this.failure ??= new LogConflictError(message.actor, `stored at stream seq ${ack.seq}${ack.duplicate ? " (a duplicate)" : ""}, expected ${predicted}: another writer is at work`);
          }
        },
        (error: unknown) => {
          this.failure ??= error;
        },
      )
      .finally(() => this.inFlight.delete(publish));
    this.inFlight.add(publish);
    if (this.inFlight.size >= WINDOW) await Promise.race(this.inFlight);
  }

  async done(): Promise<void> {
    await Promise.all(this.inFlight);
    if (this.failure !== undefined) throw this.failure;
  }
}
