/**
 * A scheduler process taking up its log in JetStream: the sink, where the log stands, and,
 * when a scheduler died with the log open, the core rebuilt from it (replay/jetstream-resume.ts),
 * from the latest snapshot when there is one (log/jetstream-snapshot.ts). From the moment
 * it sees scheduler records in the log until it serves, it says it is resuming on
 * `natsched.<cluster>.announce.resuming` every 250 ms, so clients wait for it past their
 * request timeout (actors/client.ts, actors/resuming.ts).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { LogCorruptError, LogForeignMessageError } from "../../machines/errors.js";
import { PROTOCOL_VERSION } from "../../machines/protocol.js";
import { JetStreamLogSink, type ClaimFrom } from "../../log/jetstream-log.js";
import { resumeScheduler, type ResumedScheduler } from "../../replay/jetstream-resume.js";
import { snapshotToResume, type LoadedSnapshot } from "../../log/jetstream-snapshot.js";
import { actorSubject, logStreamName } from "../../log/jetstream-layout.js";
import { findLogStream, logStreamManager, readLogHeader } from "../../log/jetstream-stream.js";
import type { LogProblem } from "../../log/types.js";
import type { Transport } from "../../transport/types.js";
import { RESUMING_EVERY_MS, resumingSubject, type ResumingAnnouncement } from "../resuming.js";

/**
 * Announces that the scheduler is resuming (actors/resuming.ts), now and every
 * RESUMING_EVERY_MS; the returned stop ends it, saying it serves when `served`.
 */
export function announceResuming(transport: Transport, cluster: string): (served: boolean) => void {
  const say = (message: ResumingAnnouncement) => {
    try {
      if (!transport.closed) transport.publish(resumingSubject(cluster), message);
    } catch {
      // Closing: nobody to tell.
    }
  };
  const resuming: ResumingAnnouncement = { v: PROTOCOL_VERSION, op: "scheduler-resuming", every: RESUMING_EVERY_MS };
  say(resuming);
  const timer = setInterval(() => say(resuming), RESUMING_EVERY_MS);
  let stopped = false;
  return (served) => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    if (served) say({ v: PROTOCOL_VERSION, op: "scheduler-resumed" });
  };
}

export interface OpenedLog {
  sink: JetStreamLogSink;
  /** The seq the scheduler's next record has. */
  firstSeq: number;
  resumed: ResumedScheduler | null;
  /** The `created` of the log's header (snapshots name the log they belong to). */
  logCreated: number;
  /** How long each step took, in ms: finding where the log stands, the snapshot, rebuilding the core. */
  timings: { claim: number; snapshot: number; rebuild: number };
  /** Stops the resuming announcements: with true once the scheduler serves. */
  stopAnnouncing: (served: boolean) => void;
}

export interface OpenLogOptions {
  transport: Transport & { nc: NatsConnection };
  cluster: string;
  replicas?: number;
  /** Use snapshots (default true). */
  snapshots?: boolean;
  /** The sink stopped writing for good (a second writer): the scheduler must stop. */
  onLogFailed: (error: unknown) => void;
  onError?: (error: unknown) => void;
  /** Runs before the core is rebuilt (tests make a slow resume with it). */
  beforeResume?: () => Promise<void>;
}

/**
 * Opens the cluster's log in JetStream for the scheduler and rebuilds the core a scheduler
 * left in it. A snapshot that turns out unusable is reported and left aside: the whole log
 * is re-run.
 */
export async function openSchedulerLog(opts: OpenLogOptions): Promise<OpenedLog> {
  const report = (message: string) => opts.onError?.(new LogCorruptError(`scheduler snapshot: ${message}`));
  const jsm = await logStreamManager(opts.transport.nc);
  // A log with scheduler records may be one to resume: say so from now on.
  const scheduler = await findLogStream(jsm, opts.cluster).then((info) =>
    info === null ? null : jsm.streams.getMessage(logStreamName(opts.cluster), { last_by_subj: actorSubject(opts.cluster, "scheduler") }),
  );
  let stopAnnouncing = scheduler === null ? (_served: boolean): void => undefined : announceResuming(opts.transport, opts.cluster);
  try {
    let snapshot: LoadedSnapshot | undefined;
    const t0 = performance.now();
    if (opts.snapshots !== false && scheduler !== null) {
      try {
        const found = await snapshotToResume(jsm, opts.cluster);
        if (found.problem !== undefined) report(found.problem);
        snapshot = found.snapshot;
      } catch (error) {
        report(`cannot read the snapshots (${(error as Error)?.message ?? String(error)}): re-running the whole log`);
      }
    }
    const t1 = performance.now();
    for (;;) {
      const from: ClaimFrom | undefined = snapshot === undefined ? undefined : { logTail: snapshot.pointer.after };
      const sink = await JetStreamLogSink.open({
        nc: opts.transport.nc,
        cluster: opts.cluster,
        ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}),
        onError: opts.onLogFailed,
        onForeign: (problem) => opts.onError?.(foreignMessage(problem)),
      });
      const header = await readLogHeader(jsm, opts.cluster);
      const claim = await sink.claim("scheduler", from);
      for (const problem of claim.foreign) opts.onError?.(foreignMessage(problem));
      const t2 = performance.now();
      await opts.beforeResume?.();
      try {
        const resumed = await resumeScheduler(opts.transport.nc, opts.cluster, claim.nextSeq, snapshot, report);
        const t3 = performance.now();
        let firstSeq = claim.nextSeq;
        if (resumed !== null) {
          for (const record of resumed.unlogged) sink.append(record);
          firstSeq = resumed.nextSeq;
        }
        const opened = { sink, firstSeq, resumed, logCreated: header?.created ?? 0, timings: { claim: t2 - t1, snapshot: t1 - t0, rebuild: t3 - t2 }, stopAnnouncing };
        stopAnnouncing = () => undefined;
        return opened;
      } catch (error) {
        await sink.close().catch(() => undefined);
        // Where the snapshot said the log stood was wrong: read all of it.
        if (snapshot === undefined || !(error instanceof LogCorruptError)) throw error;
        report(`resuming from the snapshot at record ${snapshot.pointer.recordSeq} failed (${error.message}): re-running the whole log`);
        snapshot = undefined;
      }
    }
  } finally {
    // Left to the caller once it returns; stopped here if rebuilding failed.
    stopAnnouncing(false);
  }
}

/** A foreign message on a log subject, as reported to `onError` (it was skipped). */
export function foreignMessage(problem: LogProblem): LogForeignMessageError {
  return new LogForeignMessageError(problem.actor ?? "scheduler", problem.streamSeq ?? 0, problem.message);
}

