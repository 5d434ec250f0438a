/** A worker as its own process on NATS: what `natsched worker` runs. */
import { hostname } from "node:os";
import type { Service } from "./services.js";
import type { Config } from "../../machines/config.js";
import { BadOptionError, LogForeignMessageError } from "../../machines/errors.js";
import { ActorRecorder } from "../host/recorder.js";
import { FileLogSink, type LogFileFormat } from "../../log/file-log.js";
import { JetStreamLogSink } from "../../log/jetstream-log.js";
import { functionsHeaderMeta } from "../function-hashes.js";
import { writerMeta } from "../../log/package-version.js";
import type { LogProblem, LogSink } from "../../log/types.js";
import { NatsTransport } from "../../transport/nats.js";
import type { NatsConnectOptions } from "../../transport/nats-connect.js";
import type { ResendOptions } from "../../transport/nats-resend.js";
import { subjects } from "../../transport/subjects.js";
import type { Subscription } from "../../transport/types.js";
import { realClock } from "../host/clock.js";
import { loadConfig } from "../config-loader.js";
import { withBuiltins } from "../functions.js";
import { checkExecutor, resolveFunctions, threadFunctions, type Executor, type FunctionsOption } from "../function-modules.js";
import { WorkerActor } from "../worker-actor.js";
import { checkClusterName } from "./scheduler-process.js";
import { registerService } from "./services.js";
import { announceReturns, answerMissing, followNewRuns, ReportJournal, serveResync } from "./worker-resync.js";
import { answers, waitUntilAnswered } from "./wait-for.js";

export interface WorkerProcessOptions {
  nats: NatsConnectOptions;
  cluster: string;
  name: string;
  nthreads: number;
  /** As LocalCluster's `functions`: an object, a module path or `file:` URL, or a list. */
  functions: FunctionsOption;
  /** Where module functions run: "threads" (the default: `nthreads` executor threads) or "loop". */
  executor?: Executor;
  resources?: Record<string, number>;
  /** Host name for `hosts` restrictions; default os.hostname(). */
  host?: string;
  /**
   * This worker's own event log: a file path, or `{ jetstream: true }` for the cluster's log
   * in JetStream (subject natsched.<cluster>.log.worker.<name>). Default none.
   */
  log?: string | { jetstream: true };
  /** A log file's format (docs/log-format.md): "binary" (the default) or "jsonl". */
  logFormat?: LogFileFormat;
  /** false: no config file at all. */
  configFile?: string | false;
  config?: Partial<Config>;
  /** Milliseconds to wait for a scheduler to answer; default forever. */
  schedulerTimeout?: number;
  service?: boolean;
  resend?: ResendOptions | false;
  onError?: (error: unknown) => void;
  /** Told once while the worker waits for the scheduler to appear. */
  onWaiting?: () => void;
  /** Told each time the worker registered again, with a scheduler that started a new run. */
  onReregistered?: () => void;
}

export class WorkerProcess {
  private closing: Promise<void> | undefined;

  private constructor(
    readonly transport: NatsTransport,
    readonly actor: WorkerActor,
    readonly log: LogSink | null,
    private readonly service: Service | null,
    /** Serving resync requests, and following new runs of the scheduler (worker-resync.ts). */
    private readonly resync: Subscription[],
  ) {}

  static async start(opts: WorkerProcessOptions): Promise<WorkerProcess> {
    checkClusterName(opts.cluster);
    if (typeof opts.name !== "string" || !/^[A-Za-z0-9_-]+$/.test(opts.name)) {
      throw new BadOptionError("name", `worker names use letters, digits, '-' and '_', got ${JSON.stringify(opts.name)}`);
    }
    if (!Number.isSafeInteger(opts.nthreads) || opts.nthreads < 1) throw new BadOptionError("nthreads", "must be a whole number >= 1");
    const executor = checkExecutor(opts.executor);
    const resolved = await resolveFunctions(opts.functions);
    const config = loadConfig({ overrides: opts.config ?? {}, ...(opts.configFile !== undefined ? { file: opts.configFile } : {}) });
    const s = subjects(opts.cluster);
    const transport = await NatsTransport.connect({
      name: `natsched-worker-${opts.cluster}-${opts.name}`,
      waitForServer: true,
      ...opts.nats,
      ...(opts.resend !== undefined ? { resend: opts.resend } : {}),
      ...(opts.onError ? { onError: opts.onError } : {}),
    });
    let log: LogSink | null = null;
    let actor: WorkerActor | null = null;
    // Remembers the worker's reports, for a scheduler that restarts (worker-resync.ts).
    const journal = new ReportJournal(transport, s.workerOps(opts.name));
    try {
      if (await answers(transport, s.workerData(opts.name), { op: "get-data", keys: [], who: "natsched-worker-start" }, 500)) {
        throw new BadOptionError("name", `a worker named ${opts.name} is already serving cluster ${opts.cluster}`);
      }
      await waitUntilAnswered(transport, s.query, { op: "status" }, {
        ...(opts.schedulerTimeout !== undefined ? { timeoutMs: opts.schedulerTimeout } : {}),
        ...(opts.onWaiting ? { onWait: opts.onWaiting } : {}),
      });
      let recorder: ActorRecorder | undefined;
      if (typeof opts.log === "object") {
        // Foreign messages on its log subject are skipped and reported (log/jetstream-chain.ts).
        const foreign = (p: LogProblem) => opts.onError?.(new LogForeignMessageError(p.actor ?? "", p.streamSeq ?? 0, p.message));
        const sink = await JetStreamLogSink.open({ nc: transport.nc, cluster: opts.cluster, onForeign: foreign, ...(opts.onError ? { onError: opts.onError } : {}) });
        log = sink;
        // A name used before continues its log where the last incarnation left it.
        const actorName = `worker.${opts.name}`;
        const claim = await sink.claim(actorName);
        for (const p of claim.foreign) foreign(p);
        // The stream's header names the build of whoever created it: this worker's goes in its start record.
        recorder = new ActorRecorder(actorName, sink, claim.nextSeq, { ...writerMeta(), ...functionsHeaderMeta(resolved) });
      } else if (opts.log !== undefined) {
        log = await FileLogSink.open(opts.log, { meta: { cluster: opts.cluster, worker: opts.name, ...functionsHeaderMeta(resolved) }, format: opts.logFormat });
      }
      actor = new WorkerActor({
        cluster: opts.cluster,
        transport: journal,
        ...(recorder !== undefined ? { recorder } : {}),
        name: opts.name,
        nthreads: opts.nthreads,
        host: opts.host ?? hostname(),
        resources: opts.resources ?? {},
        functions: resolved.functions,
        threadFunctions: threadFunctions(resolved, executor),
        clock: realClock,
        log,
        transferIncomingCountLimit: config.transferIncomingCountLimit,
        heartbeatInterval: config.heartbeatInterval,
        bandwidth: config.bandwidth,
        scatterLease: config.scatterLease,
        executorThreadMemory: config.executorThreadMemory,
        reportHold: config.reportHold,
        ...(opts.onError ? { onError: opts.onError } : {}),
      });
      journal.attach(actor);
      await actor.start();
      const started = actor;
      const host = opts.host ?? hostname();
      const info = { nthreads: opts.nthreads, host, resources: opts.resources ?? {}, functions: Object.keys(withBuiltins(resolved.functions)) };
      const onError = opts.onError ?? ((error: unknown) => console.error(`natsched worker ${opts.name}:`, error));
      const rejoin = { transport, cluster: opts.cluster, actor: started, info, onRegistered: () => opts.onReregistered?.(), onError };
      const resync = [
        serveResync(transport, opts.cluster, started, journal),
        followNewRuns(rejoin),
        announceReturns(rejoin),
        answerMissing(rejoin),
      ];
      const service =
        opts.service === false
          ? null
          : await registerService(transport.nc, {
              kind: "worker",
              cluster: opts.cluster,
              name: opts.name,
              statusSubject: `natsched.${opts.cluster}.status.worker.${opts.name}`,
              stats: () => workerStats(opts.cluster, started),
            });
      return new WorkerProcess(transport, started, log, service, resync);
    } catch (error) {
      actor?.close({ abrupt: true, reason: "start failed" });
      await log?.close().catch(() => undefined);
      await transport.close();
      throw error;
    }
  }

  get name(): string {
    return this.actor.name;
  }

  /**
   * Leave gracefully (what SIGTERM does): ask the scheduler to retire this worker, so the
   * data only it holds is copied to other workers first, and wait until it says close, at
   * most `timeoutMs` (default 5 s, under the shutdown's forced exit); then close.
   */
  async retire(reason = "shutdown", timeoutMs = 5_000): Promise<void> {
    if (this.closing === undefined) await this.actor.retire(reason, timeoutMs);
    await this.close(reason);
  }

  /** Unregister from the scheduler, stop serving, leave NATS. Idempotent. */
  close(reason = "shutdown"): Promise<void> {
    this.closing ??= (async () => {
      await this.service?.stop().catch(() => undefined);
      for (const sub of this.resync) sub.unsubscribe();
      this.actor.close({ reason });
      // A log in JetStream is written on this connection: flushed before leaving NATS.
      await this.log?.flush().catch(() => undefined);
      await this.transport.close();
      await this.log?.close();
    })();
    return this.closing;
  }
}

export function workerStats(cluster: string, actor: WorkerActor) {
  const tasks: Record<string, number> = {};
  let nbytes = 0;
  for (const ts of actor.core.tasks.values()) {
    tasks[ts.state] = (tasks[ts.state] ?? 0) + 1;
    if (ts.state === "memory" && ts.nbytes > 0) nbytes += ts.nbytes;
  }
  return {
    cluster,
    name: actor.name,
    id: actor.id,
    state: actor.core.state,
    nthreads: actor.core.init.nthreads,
    executing: actor.core.executing,
    tasks,
    stored: actor.store.size,
    nbytes,
    // Running totals since this process started (the rest are gauges).
    totals: { ...actor.totals },
  };
}
