/** A scheduler as its own process on NATS: what `natsched scheduler` runs. */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import type { Service } from "./services.js";
import type { Config } from "../../machines/config.js";
import { BadOptionError, NatschedError } from "../../machines/errors.js";
import { FileLogSink, type LogFileFormat } from "../../log/file-log.js";
import { LogGatedTransport } from "./jetstream-gate.js";
import { jetStreamAvailability, logStreamManager } from "../../log/jetstream-stream.js";
import type { ResumedScheduler } from "../../replay/jetstream-resume.js";
import type { LogSink } from "../../log/types.js";
import { NatsTransport } from "../../transport/nats.js";
import type { NatsConnectOptions } from "../../transport/nats-connect.js";
import type { ResendOptions } from "../../transport/nats-resend.js";
import { subjects } from "../../transport/subjects.js";
import type { Subscription, Transport } from "../../transport/types.js";
import { realClock } from "../host/clock.js";
import { loadConfig } from "../config-loader.js";
import type { MembershipChange } from "../membership.js";
import { SchedulerActor } from "../scheduler-actor.js";
import { stealingSummary, tasksByState } from "../scheduler-queries.js";
import { resyncAfterRestart, serveWorkerReturns, type ResyncOptions, type ResyncReport } from "./scheduler-resync.js";
import { openSchedulerLog, type OpenedLog } from "./scheduler-resume.js";
import { SchedulerSnapshots, type SnapshotPolicy } from "./scheduler-snapshots.js";
import { registerService } from "./services.js";
import { answers } from "./wait-for.js";
import { announceNewRun } from "./worker-resync.js";

export interface SchedulerProcessOptions {
  nats: NatsConnectOptions;
  cluster: string;
  /**
   * The event log: a file path, false for none, `{ jetstream: true }` for the cluster's log
   * in JetStream (see docs/nats.md), which a restarted scheduler resumes from, or "auto"
   * (the default): JetStream when the server (and this user) has it, else a new file in the
   * temp dir, with a warning in `warnings` (a scheduler restarted then begins a new run).
   */
  log?: string | false | JetStreamLogChoice | "auto";
  /** A log file's format (docs/log-format.md): "binary" (the default) or "jsonl". */
  logFormat?: LogFileFormat;
  /** Config file (default: natsched.config.* in the cwd), and settings over it. */
  /** false: no config file at all. */
  configFile?: string | false;
  config?: Partial<Config>;
  /** Register as a NATS service. Default true. */
  service?: boolean;
  resend?: ResendOptions | false;
  onError?: (error: unknown) => void;
  /**
   * With the log in JetStream: snapshots of the core, from which a restart resumes instead of
   * re-running the whole log (scheduler-snapshots.ts, when they are taken). Default on; false: none.
   */
  snapshots?: SnapshotPolicy | false;
  /** Runs before a resuming scheduler rebuilds its core (tests make a slow resume with it). */
  beforeResume?: () => Promise<void>;
  /** Told each time a worker or client joins or leaves, with the reason (`natsched scheduler` prints it). */
  onMembership?: (change: MembershipChange) => void;
}

export interface JetStreamLogChoice {
  jetstream: true;
  /** Replicas of the log's stream when this scheduler creates it. Default 1. */
  replicas?: number;
}

export class SchedulerProcess {
  private closing: Promise<void> | undefined;
  /**
   * Set when the scheduler resumed from its log: settles once every worker of the rebuilt
   * state has answered or been declared lost (scheduler-resync.ts).
   */
  resynced: Promise<ResyncReport> | null = null;
  /** Snapshots of the core for fast restarts (scheduler-snapshots.ts), with the log in JetStream. */
  snapshots: SchedulerSnapshots | null = null;
  /** Stops announcing a new run to the workers of the last one (worker-resync.ts). */
  private stopAnnouncing: () => void = () => undefined;
  /** Resyncing workers whose connection came back (scheduler-resync.ts). */
  private workerReturns: Subscription | null = null;
  private stopResyncOnReconnect: () => void = () => undefined;
  /** The resync after this scheduler's own connection came back, while it runs. */
  private reconnectResync: Promise<unknown> | null = null;
  /** What an operator should know about how this scheduler started (e.g. no JetStream for its log). */
  readonly warnings: string[] = [];

  private constructor(
    readonly cluster: string,
    readonly transport: NatsTransport,
    readonly actor: SchedulerActor,
    readonly log: LogSink | null,
    private readonly service: Service | null,
    /** What the restart re-ran, when the scheduler resumed from its log (after the snapshot it restored, if any), and how long it took (ms). */
    readonly resumed: {
      records: number;
      inputs: number;
      completed: number;
      snapshot: number | undefined;
      timings: { snapshot: number; claim: number; rebuild: number };
    } | null,
    private readonly onError: ((error: unknown) => void) | undefined,
  ) {}

  static async start(opts: SchedulerProcessOptions): Promise<SchedulerProcess> {
    checkClusterName(opts.cluster);
    let config = loadConfig({ overrides: opts.config ?? {}, ...(opts.configFile !== undefined ? { file: opts.configFile } : {}) });
    const s = subjects(opts.cluster);
    const transport = await NatsTransport.connect({
      name: `natsched-scheduler-${opts.cluster}`,
      ...opts.nats,
      ...(opts.resend !== undefined ? { resend: opts.resend } : {}),
      ...(opts.onError ? { onError: opts.onError } : {}),
    });
    let log: LogSink | null = null;
    let started: SchedulerProcess | null = null;
    let opened: OpenedLog | null = null;
    try {
      if (await answers(transport, s.query, { op: "status" }, 500)) {
        throw new NatschedError("BAD_OPTION", `a scheduler for cluster ${opts.cluster} is already running on this NATS server`);
      }
      let actorTransport: Transport = transport;
      let firstSeq = 0;
      let resumed: ResumedScheduler | null = null;
      let choice = opts.log ?? "auto";
      const warnings: string[] = [];
      if (choice === "auto") {
        const js = await jetStreamAvailability(transport.nc);
        if (js.available) choice = { jetstream: true };
        else {
          choice = join(tmpdir(), `natsched-${opts.cluster}-${Date.now()}.natlog`);
          warnings.push(
            `no JetStream on ${transport.nc.getServer()} (${js.reason}): the event log goes to the file ${choice}, which a scheduler started again cannot resume from; ` +
              `if this scheduler dies, the next one starts a new run: clients resubmit what they can and fail the rest (scattered data) with SchedulerRestartedError. ` +
              `For recovery run nats-server with JetStream (-js); --log <path> or --no-log choose a file or no log without this warning`,
          );
        }
      }
      if (typeof choice === "object") {
        opened = await openSchedulerLog({
          transport,
          cluster: opts.cluster,
          ...(choice.replicas !== undefined ? { replicas: choice.replicas } : {}),
          snapshots: opts.snapshots !== false,
          onLogFailed: (error) => started?.logFailed(error),
          ...(opts.onError ? { onError: opts.onError } : {}),
          ...(opts.beforeResume ? { beforeResume: opts.beforeResume } : {}),
        });
        log = opened.sink;
        firstSeq = opened.firstSeq;
        resumed = opened.resumed;
        if (resumed !== null) config = resumed.core.config;
        actorTransport = new LogGatedTransport(transport, opened.sink, opts.onError);
      } else {
        log = choice === false ? null : await FileLogSink.open(choice, { meta: { cluster: opts.cluster }, format: opts.logFormat });
      }
      const actor = new SchedulerActor({
        cluster: opts.cluster,
        transport: actorTransport,
        config,
        clock: realClock,
        log,
        firstSeq,
        ...(resumed !== null ? { resume: resumed } : {}),
        ...(opts.onError ? { onError: opts.onError } : {}),
        ...(opts.onMembership ? { onMembership: opts.onMembership } : {}),
      });
      actor.start();
      opened?.stopAnnouncing(true);
      const service =
        opts.service === false
          ? null
          : await registerService(transport.nc, {
              kind: "scheduler",
              cluster: opts.cluster,
              name: "scheduler",
              statusSubject: `natsched.${opts.cluster}.status.scheduler`,
              stats: () => schedulerStats(opts.cluster, actor),
            });
      const summary =
        resumed === null
          ? null
          : { records: resumed.records, inputs: resumed.inputs, completed: resumed.unlogged.length, snapshot: resumed.snapshot?.recordSeq, timings: opened!.timings };
      started = new SchedulerProcess(opts.cluster, transport, actor, log, service, summary, opts.onError);
      started.warnings.push(...warnings);
      const running = started;
      const resyncOptions: ResyncOptions = {
        cluster: opts.cluster,
        transport: actorTransport,
        actor,
        clock: realClock,
        workerTtl: config.workerTtl,
        stopped: () => running.closing !== undefined,
        ...(opts.onError ? { onError: opts.onError } : {}),
      };
      started.workerReturns = serveWorkerReturns(resyncOptions);
      // Back from a lost connection: what the workers reported meanwhile went to nobody, and
      // reports to clients may have been lost (the re-send covers 2 s before the drop was
      // noticed). The same catching up as after a restart settles both.
      started.stopResyncOnReconnect = transport.onReconnect(() => {
        if (running.closing !== undefined || running.reconnectResync !== null) return;
        running.reconnectResync = resyncAfterRestart(resyncOptions)
          .catch((error: unknown) => opts.onError?.(error))
          .finally(() => (running.reconnectResync = null));
      });
      if (opened !== null && opts.snapshots !== false) {
        started.snapshots = new SchedulerSnapshots({
          nc: transport.nc,
          jsm: await logStreamManager(transport.nc),
          js: jetstream(transport.nc),
          cluster: opts.cluster,
          actor,
          sink: opened.sink,
          logCreated: opened.logCreated,
          ...(resumed?.snapshot !== undefined ? { lastSnapshot: resumed.snapshot.recordSeq } : {}),
          ...(typeof opts.snapshots === "object" ? { policy: opts.snapshots } : {}),
          ...(opts.onError ? { onError: opts.onError } : {}),
        });
      }
      if (resumed !== null) {
        started.resynced = resyncAfterRestart(resyncOptions);
        started.resynced.catch((error: unknown) => opts.onError?.(error));
      } else {
        // A new run: workers of a run before (stopped cleanly, or without a log in JetStream) register again.
        started.stopAnnouncing = announceNewRun(transport, opts.cluster, opts.onError, actor.core.run);
      }
      return started;
    } catch (error) {
      opened?.stopAnnouncing(false);
      started?.snapshots?.stop();
      await log?.close().catch(() => undefined);
      await transport.close();
      throw error;
    }
  }

  get logPath(): string | undefined {
    return this.log?.location;
  }

  /** Resolves with the error once the process has closed because its log refused a write (never otherwise). */
  get failed(): Promise<unknown> {
    return this.failure;
  }

  private failureResolve!: (error: unknown) => void;
  private readonly failure = new Promise<unknown>((resolve) => (this.failureResolve = resolve));

  /**
   * The log stopped taking records (another scheduler writes this cluster's log, or
   * JetStream refused a write): nothing this scheduler decides from now on can be stored,
   * and its messages are held back by the log's gate, so it leaves.
   */
  private logFailed(error: unknown): void {
    this.onError?.(error);
    void this.close()
      .catch(() => undefined)
      .then(() => this.failureResolve(error));
  }

  /** Stop serving, record the close, flush the log and leave NATS. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.stopAnnouncing();
      this.snapshots?.stop();
      this.workerReturns?.unsubscribe();
      this.stopResyncOnReconnect();
      await this.service?.stop().catch(() => undefined);
      this.actor.close();
      // Flushed before leaving NATS: a log in JetStream is written on this connection,
      // and what the scheduler said last is held until its records are stored.
      const flushed = await this.log?.flush().then(
        () => undefined,
        (error: unknown) => error,
      );
      await this.transport.close();
      await this.log?.close();
      if (flushed !== undefined) throw flushed;
    })();
    return this.closing;
  }
}

export function schedulerStats(cluster: string, actor: SchedulerActor) {
  const core = actor.core;
  let processing = 0;
  for (const ws of core.running) processing += ws.processing.size;
  return {
    cluster,
    state: core.state,
    tasks: tasksByState(core),
    workers: core.running.length,
    threads: core.totalNthreads,
    processing,
    queued: core.queued.size,
    noWorker: core.unrunnable.size,
    clients: core.clients.size,
    // Running totals since this process started (the rest are gauges).
    totals: { ...actor.totals },
    // Work stealing's per-level counters (docs/stealing.md), null with stealing off.
    stealing: stealingSummary(core),
    bandwidth: core.bandwidth,
  };
}

export function checkClusterName(cluster: string): void {
  if (typeof cluster !== "string" || !/^[A-Za-z0-9_-]+$/.test(cluster)) {
    throw new BadOptionError("cluster", `cluster names use letters, digits, '-' and '_', got ${JSON.stringify(cluster)}`);
  }
}
