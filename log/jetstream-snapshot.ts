/**
 * Snapshots of the scheduler's core in JetStream, so a restarted scheduler rebuilds its state
 * from the latest snapshot and the log after it instead of re-running its whole log
 * (replay/jetstream-resume.ts). A snapshot is a cache of the log, never more: the log stays
 * whole and replays as before, and a restart without a usable snapshot re-runs the log.
 *
 *   stream   NATSCHED_SNAPSHOT_<cluster>      file storage, the log stream's replicas
 *   subjects natsched.<cluster>.snapshot.scheduler          the latest snapshot's pointer (JSON)
 *            natsched.<cluster>.snapshot.scheduler.<seq>    its parts (the core-snapshot bytes, split to fit max_payload)
 *
 * The pointer says which record of the scheduler's log the snapshot includes last (`recordSeq`),
 * a message of the log whose records all precede it (`after`: reading resumes after it), the
 * log it belongs to (its header's `created`), the config, and the parts (stream sequences,
 * size, CRC-32). It is published once the log holds every record up to `recordSeq`, and the
 * older snapshots are purged after it. Anything on these subjects that is not such a pointer
 * and its parts (a foreign message, a torn write) is reported and ignored.
 */
import { crc32 } from "node:zlib";
import { DiscardPolicy, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import { actorSubject, checkCluster, logStreamName, MSG_ID_HEADER, parseLogMsgId } from "./jetstream-layout.js";
import { readLogHeader } from "./jetstream-stream.js";

export const SNAPSHOT_PART_HEADER = "Natsched-Snapshot-Part";
const STREAM_NOT_FOUND = 10059;
const HEADER_ROOM = 8 * 1024;
const WINDOW = 8;

export function snapshotStreamName(cluster: string): string {
  checkCluster(cluster);
  return `NATSCHED_SNAPSHOT_${cluster}`;
}

export function snapshotPointerSubject(cluster: string): string {
  return `natsched.${cluster}.snapshot.scheduler`;
}

function partsSubject(cluster: string, recordSeq: number): string {
  return `${snapshotPointerSubject(cluster)}.${recordSeq}`;
}

export interface SnapshotPointer {
  v: 1;
  /** The `created` of the log's header: a snapshot belongs to one log. */
  logCreated: number;
  /** The last record of the scheduler's log the snapshot includes. */
  recordSeq: number;
  /** Stream sequence of a message of the scheduler's log whose records all come before `recordSeq` (or are it). */
  after: number;
  /** The scheduler's config, as in its start record. */
  config: Record<string, unknown>;
  bytes: number;
  crc: number;
  /** Stream sequences of the parts, in order. */
  parts: number[];
  /** When it was taken (ms since the epoch), for people. */
  created: number;
}

export interface LoadedSnapshot {
  pointer: SnapshotPointer;
  bytes: Buffer;
}

/** The snapshot stream, created if missing (with `replicas`). */
async function ensureSnapshotStream(jsm: JetStreamManager, cluster: string, replicas: number): Promise<void> {
  const name = snapshotStreamName(cluster);
  try {
    await jsm.streams.info(name);
    return;
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND)) throw error;
  }
  await jsm.streams
    .add({
      name,
      subjects: [`${snapshotPointerSubject(cluster)}`, `${snapshotPointerSubject(cluster)}.*`],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      num_replicas: replicas,
      // Parts are read with direct gets: raw bytes, where the stream API answers in base64 JSON.
      allow_direct: true,
      description: `natsched scheduler snapshots of cluster ${cluster} (a cache of its event log)`,
    })
    .catch(async (error: unknown) => {
      // Created by someone else meanwhile: use it.
      await jsm.streams.info(name).catch(() => {
        throw error;
      });
    });
}

/**
 * Stores a snapshot and makes it the latest: its parts, then its pointer; then purges the
 * snapshots before it. The caller has made sure the log holds every record up to `recordSeq`.
 */
export async function writeSnapshot(
  nc: NatsConnection,
  jsm: JetStreamManager,
  js: JetStreamClient,
  cluster: string,
  snapshot: { bytes: Buffer; logCreated: number; recordSeq: number; after: number; config: Record<string, unknown>; replicas: number },
): Promise<SnapshotPointer> {
  await ensureSnapshotStream(jsm, cluster, snapshot.replicas);
  const partBytes = Math.max(1024, (nc.info?.max_payload ?? 1024 * 1024) - HEADER_ROOM);
  const count = Math.max(1, Math.ceil(snapshot.bytes.length / partBytes));
  const subject = partsSubject(cluster, snapshot.recordSeq);
  const parts: number[] = new Array(count);
  for (let first = 0; first < count; first += WINDOW) {
    const acks = [];
    for (let i = first; i < Math.min(count, first + WINDOW); i++) {
      const h = natsHeaders();
      h.set(SNAPSHOT_PART_HEADER, `${i}/${count}`);
      acks.push(js.publish(subject, snapshot.bytes.subarray(i * partBytes, (i + 1) * partBytes), { headers: h }).then((ack) => (parts[i] = ack.seq)));
    }
    await Promise.all(acks);
  }
  const pointer: SnapshotPointer = {
    v: 1,
    logCreated: snapshot.logCreated,
    recordSeq: snapshot.recordSeq,
    after: snapshot.after,
    config: snapshot.config,
    bytes: snapshot.bytes.length,
    crc: crc32(snapshot.bytes),
    parts,
    created: Date.now(),
  };
  await js.publish(snapshotPointerSubject(cluster), JSON.stringify(pointer));
  // The snapshots before it, by subject (a purge by filter and sequence misbehaves on nats-server 2.9).
  const stream = snapshotStreamName(cluster);
  await jsm.streams.purge(stream, { filter: snapshotPointerSubject(cluster), keep: 1 });
  const info = await jsm.streams.info(stream, { subjects_filter: `${snapshotPointerSubject(cluster)}.*` });
  for (const old of Object.keys(info.state.subjects ?? {})) if (old !== subject) await jsm.streams.purge(stream, { filter: old });
  return pointer;
}

/**
 * The latest snapshot of the scheduler of the log created at `logCreated`, or why there is
 * none to use (no stream, no pointer, one of another log, damaged or foreign messages).
 */
export async function readSnapshot(jsm: JetStreamManager, cluster: string, logCreated: number): Promise<LoadedSnapshot | { none: string; problem?: string }> {
  const stream = snapshotStreamName(cluster);
  let last;
  try {
    last = await jsm.streams.getMessage(stream, { last_by_subj: snapshotPointerSubject(cluster) });
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return { none: "no snapshot stream" };
    throw error;
  }
  if (last === null) return { none: "no snapshot" };
  const where = `${stream} stream seq ${last.seq}`;
  let pointer: SnapshotPointer;
  try {
    pointer = JSON.parse(last.string()) as SnapshotPointer;
  } catch {
    return { none: "no usable snapshot", problem: `${where}: the latest message on ${snapshotPointerSubject(cluster)} is not a snapshot pointer (not JSON): ignored` };
  }
  const shape = pointerProblem(pointer);
  if (shape !== undefined) return { none: "no usable snapshot", problem: `${where}: the latest message on ${snapshotPointerSubject(cluster)} is not a snapshot pointer (${shape}): ignored` };
  if (pointer.logCreated !== logCreated) return { none: "the latest snapshot is of another log (created at another time)" };
  const subject = partsSubject(cluster, pointer.recordSeq);
  const chunks: Buffer[] = new Array(pointer.parts.length);
  for (let first = 0; first < pointer.parts.length; first += WINDOW) {
    const reads = [];
    for (let i = first; i < Math.min(pointer.parts.length, first + WINDOW); i++) {
      reads.push(
        jsm.direct.getMessage(stream, { seq: pointer.parts[i]! }).then((m) => {
          if (m === null || m.subject !== subject || m.header?.get(SNAPSHOT_PART_HEADER) !== `${i}/${pointer.parts.length}`) return false;
          chunks[i] = Buffer.from(m.data);
          return true;
        }),
      );
    }
    if (!(await Promise.all(reads)).every(Boolean)) return { none: "no usable snapshot", problem: `${where}: a part of the snapshot at record ${pointer.recordSeq} is missing or not one of it: ignored` };
  }
  const bytes = Buffer.concat(chunks);
  if (bytes.length !== pointer.bytes || crc32(bytes) !== pointer.crc) {
    return { none: "no usable snapshot", problem: `${where}: the snapshot at record ${pointer.recordSeq} does not match its size and checksum: ignored` };
  }
  return { pointer, bytes };
}

function pointerProblem(p: SnapshotPointer): string | undefined {
  if (typeof p !== "object" || p === null || p.v !== 1) return "not version 1";
  const whole = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  if (![p.logCreated, p.recordSeq, p.after, p.bytes, p.crc].every(whole)) return "logCreated, recordSeq, after, bytes and crc must be whole numbers";
  if (typeof p.config !== "object" || p.config === null) return "no config";
  if (!Array.isArray(p.parts) || p.parts.length === 0 || !p.parts.every(whole)) return "parts must list stream sequences";
  return undefined;
}

/**
 * The snapshot a scheduler restarting from the cluster's log can start from: the latest one,
 * if the log has scheduler records, the snapshot is of this log, and the message it says to
 * read after is one of the scheduler's log. `problem`: why a snapshot there is not used.
 */
export async function snapshotToResume(jsm: JetStreamManager, cluster: string): Promise<{ snapshot?: LoadedSnapshot; problem?: string }> {
  const subject = actorSubject(cluster, "scheduler");
  const stream = logStreamName(cluster);
  if ((await jsm.streams.getMessage(stream, { last_by_subj: subject })) === null) return {};
  const header = await readLogHeader(jsm, cluster);
  if (header === undefined) return {};
  const found = await readSnapshot(jsm, cluster, header.created);
  if ("none" in found) return found.problem === undefined ? {} : { problem: found.problem };
  const after = found.pointer.after;
  if (after > 0) {
    const m = await jsm.streams.getMessage(stream, { seq: after }).catch(() => null);
    if (m === null || m.subject !== subject || parseLogMsgId(m.header?.get(MSG_ID_HEADER))?.actor !== "scheduler") {
      return { problem: `the snapshot at record ${found.pointer.recordSeq} says to read the log after stream seq ${after}, which is not a message of the scheduler's log: not used` };
    }
  }
  return { snapshot: found };
}
