/**
 * When a scheduler logging to JetStream snapshots its core (log/core-snapshot.ts,
 * log/jetstream-snapshot.ts), so that a restart restores the snapshot and re-runs only
 * the log after it:
 * - at rest: its log has not grown for `idleMs` and has grown by `idleRecords` since the
 *   last snapshot (a cluster that finished its work is snapshotted as it stands);
 * - while busy: every `busyRecords` records, which bounds what a restart re-runs.
 * Taking one blocks the scheduler for the walk of its state, which grows with the tasks it
 * holds (docs/performance.md), so it is not done more often. One at a time; the snapshot is
 * published once the log holds every record it includes. A snapshot that cannot be taken or
 * stored is reported to `onError`, and tried again later (at most every `retryMs`).
 */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { serializableConfig } from "../../log/start-init.js";
import { snapshotCore } from "../../log/core-snapshot.js";
import type { JetStreamLogSink } from "../../log/jetstream-log.js";
import { writeSnapshot, type SnapshotPointer } from "../../log/jetstream-snapshot.js";
import type { SchedulerActor } from "../scheduler-actor.js";

export interface SnapshotPolicy {
  /** Milliseconds without a new record before a scheduler counts as at rest. Default 500. */
  idleMs?: number;
  /** Records since the last snapshot for one at rest. Default 10,000. */
  idleRecords?: number;
  /** Records since the last snapshot for one while busy. Default 200,000. */
  busyRecords?: number;
}

export interface SnapshotterOptions {
  nc: NatsConnection;
  jsm: JetStreamManager;
  js: JetStreamClient;
  cluster: string;
  actor: SchedulerActor;
  sink: JetStreamLogSink;
  /** The `created` of the log's header. */
  logCreated: number;
  /** The last record a snapshot in the stream already includes (a restart from one). */
  lastSnapshot?: number;
  policy?: SnapshotPolicy;
  onError?: (error: unknown) => void;
  /** Told of each snapshot stored. */
  onSnapshot?: (pointer: SnapshotPointer, ms: { take: number; store: number }) => void;
}

const TICK_MS = 250;
const RETRY_MS = 60_000;

export class SchedulerSnapshots {
  private readonly timer: ReturnType<typeof setInterval>;
  private lastSnapshot: number;
  private lastSeen: number | undefined = undefined;
  private quietSince = performance.now();
  private busy = false;
  /** Not in the first seconds: a scheduler that just started (or resumed) has clients and workers to answer first. */
  private notBefore = performance.now() + 3000;
  private stopped = false;

  constructor(private readonly opts: SnapshotterOptions) {
    this.lastSnapshot = opts.lastSnapshot ?? -1;
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  private tick(): void {
    if (this.busy || this.stopped || this.opts.sink.failed !== undefined) return;
    const { lastAppended } = this.opts.sink.position("scheduler");
    if (lastAppended === undefined) return;
    const now = performance.now();
    if (lastAppended !== this.lastSeen) {
      this.lastSeen = lastAppended;
      this.quietSince = now;
    }
    if (now < this.notBefore) return;
    const grown = lastAppended - this.lastSnapshot;
    const policy = this.opts.policy ?? {};
    const atRest = now - this.quietSince >= (policy.idleMs ?? 500) && grown >= (policy.idleRecords ?? 10_000);
    if (atRest || grown >= (policy.busyRecords ?? 200_000)) void this.take();
  }

  /** Takes a snapshot now (between two inputs: this runs from a timer) and stores it. */
  async take(): Promise<SnapshotPointer | undefined> {
    if (this.busy) return undefined;
    this.busy = true;
    const { sink, actor } = this.opts;
    try {
      const started = performance.now();
      const { lastAppended, storedTail } = sink.position("scheduler");
      if (lastAppended === undefined) return undefined;
      const bytes = snapshotCore(actor.core);
      const taken = performance.now();
      // The snapshot may only say what the log holds.
      await sink.flush();
      if (this.stopped) return undefined;
      const pointer = await writeSnapshot(this.opts.nc, this.opts.jsm, this.opts.js, this.opts.cluster, {
        bytes,
        logCreated: this.opts.logCreated,
        recordSeq: lastAppended,
        after: storedTail,
        config: serializableConfig(actor.core.config),
        replicas: sink.replicas,
      });
      this.lastSnapshot = lastAppended;
      this.opts.onSnapshot?.(pointer, { take: taken - started, store: performance.now() - taken });
      return pointer;
    } catch (error) {
      this.notBefore = performance.now() + RETRY_MS;
      if (!this.stopped) this.opts.onError?.(new Error(`scheduler snapshot not stored (the next restart re-runs more of the log): ${(error as Error)?.message ?? String(error)}`, { cause: error }));
      return undefined;
    } finally {
      this.busy = false;
    }
  }
}
