import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Config } from "../machines/config.js";
import { BadOptionError, ClosedError } from "../machines/errors.js";
import { FileLogSink, type LogFileFormat } from "../log/file-log.js";
import { LogTap } from "../log/log-tap.js";
import { dashboardStarter, type EmbeddedDashboard } from "./dashboard-hook.js";
import { functionsHeaderMeta } from "./function-hashes.js";
import { LOG_FORMAT_FRAMES, type LogSink } from "../log/types.js";
import { MemoryBus } from "../transport/memory.js";
import type { Transport } from "../transport/types.js";
import { Client } from "./client.js";
import { realClock, type Clock } from "./host/clock.js";
import { loadConfig } from "./config-loader.js";
import { checkExecutor, resolveFunctions, threadFunctions, type Executor, type FunctionsOption, type ResolvedFunctions } from "./function-modules.js";
import type { ActorRecorder } from "./host/recorder.js";
import { SchedulerActor } from "./scheduler-actor.js";
import { WorkerActor } from "./worker-actor.js";

export interface WorkerSpec {
  name: string;
  nthreads?: number;
  host?: string;
  resources?: Record<string, number>;
  /** Where this worker runs module functions (default: the cluster's `executor`). */
  executor?: Executor;
}

export interface LocalClusterOptions {
  /** Cluster name, used in subjects (`natsched.<name>.*`). */
  name?: string;
  /** A number of workers, or one spec per worker. Default 2. */
  workers?: number | WorkerSpec[];
  /** Threads per worker when `workers` is a number. Default 1. */
  threadsPerWorker?: number;
  /**
   * Task functions, registered by name on every worker: an object of name -> function (run on
   * each worker's event loop), a module path or `file:` URL whose function exports are the
   * functions (run on each worker's `nthreads` executor threads), `{ module, executor }`, or a
   * list of these.
   */
  functions: FunctionsOption;
  /** Where workers run module functions: "threads" (the default) or "loop". */
  executor?: Executor;
  /**
   * The event log: `{ path, format, keep }`, a LogSink, or false for none. Default: a file in
   * the temp dir, deleted by `close()` unless `keep: true` (then its path is printed on stderr
   * at close); a file at a `path` you name is always kept. `format`: "binary" (the default:
   * frames, version 2) or "jsonl" (a JSON line per record, version 1); docs/log-format.md.
   */
  log?: { path?: string; format?: LogFileFormat; keep?: boolean } | LogSink | false;
  /** Policy settings, over the config file and NATSCHED_* variables. */
  config?: Partial<Config>;
  /** Config file to read (false: none). Default: natsched.config.json/.yaml in the cwd. */
  configFile?: string | false;
  clock?: Clock;
  /**
   * A dashboard in the browser over this cluster as it runs (true, or where to listen:
   * default 127.0.0.1 and a free port); its URL is `cluster.dashboardUrl`. Read-only.
   */
  dashboard?: boolean | { port?: number; host?: string };
  /** Called with errors actors survived (malformed messages, task bookkeeping faults). */
  onError?: (error: unknown) => void;
}

/**
 * A scheduler and workers in this process over the in-process bus: the embedded default,
 * no server needed. The same actors run over NATS as separate processes.
 */
export class LocalCluster {
  readonly workers = new Map<string, WorkerActor>();
  /** One recorder per worker name, kept across incarnations: a name's log sequence never restarts. */
  private readonly recorders = new Map<string, ActorRecorder>();
  private readonly clients = new Set<Client>();
  private readonly transports: Transport[] = [];
  private closedFlag = false;
  private dashboard: EmbeddedDashboard | undefined;

  private constructor(
    readonly name: string,
    readonly config: Config,
    readonly bus: MemoryBus,
    readonly scheduler: SchedulerActor,
    readonly log: LogSink | null,
    private readonly opts: LocalClusterOptions,
    private readonly resolved: ResolvedFunctions,
    private readonly clock: Clock,
  ) {}

  static async start(opts: LocalClusterOptions): Promise<LocalCluster> {
    if (typeof opts !== "object" || opts === null) throw new BadOptionError("options", "LocalCluster.start takes an options object");
    checkExecutor(opts.executor);
    const specs = workerSpecs(opts);
    const resolved = await resolveFunctions(opts.functions);
    const config = loadConfig({ overrides: opts.config ?? {}, file: opts.configFile });
    const name = opts.name ?? `local-${Math.random().toString(16).slice(2, 8)}`;
    if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new BadOptionError("name", "cluster names use letters, digits, '-' and '_'");
    const clock = opts.clock ?? realClock;
    const start = opts.dashboard ? dashboardStart() : undefined;
    const file = await openLogSink(opts.log, name, functionsHeaderMeta(resolved));
    // The dashboard follows a binary log file from a thread of its own; any other log it taps.
    const followed = start && file instanceof FileLogSink && file.formatVersion === LOG_FORMAT_FRAMES ? file.location : undefined;
    const tap = start && followed === undefined ? new LogTap(file) : undefined;
    const log = tap ?? file;
    const bus = new MemoryBus({ ...(opts.onError ? { onError: opts.onError } : {}) });
    const schedulerTransport = bus.connect("scheduler");
    const scheduler = new SchedulerActor({ cluster: name, transport: schedulerTransport, config, clock, log, ...(opts.onError ? { onError: opts.onError } : {}) });
    scheduler.start();
    const cluster = new LocalCluster(name, config, bus, scheduler, log, opts, resolved, clock);
    cluster.transports.push(schedulerTransport);
    try {
      if (start) cluster.dashboard = await start(followed !== undefined ? { logFile: followed } : { tap: tap! }, { cluster: name, ...dashboardPlace(opts.dashboard) });
      for (const spec of specs) await cluster.addWorker(spec);
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /** Where the event log is written, if it is a file. */
  get logPath(): string | undefined {
    const sink = this.log instanceof LogTap ? this.log.inner : this.log;
    return sink instanceof FileLogSink ? sink.location : undefined;
  }

  /** The dashboard's URL, when started with `dashboard`. */
  get dashboardUrl(): string | undefined {
    return this.dashboard?.url;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** A new client connected to this cluster. */
  client(): Client {
    if (this.closedFlag) throw new ClosedError("cluster");
    const transport = this.bus.connect("client");
    // A closed client and its connection are dropped: a service that makes clients as it goes keeps none.
    const client: Client = new Client({
      cluster: this.name,
      transport,
      heartbeatInterval: this.config.heartbeatInterval,
      log: this.log,
      clock: this.clock,
      onClosed: () => {
        this.clients.delete(client);
        void transport.close();
      },
    });
    client.attach();
    this.clients.add(client);
    return client;
  }

  async addWorker(spec: WorkerSpec): Promise<WorkerActor> {
    if (this.closedFlag) throw new ClosedError("cluster");
    if (this.workers.has(spec.name)) throw new BadOptionError("workers", `a worker named ${spec.name} already exists`);
    const worker = new WorkerActor({
      cluster: this.name,
      transport: this.connect(`worker.${spec.name}`),
      name: spec.name,
      nthreads: spec.nthreads ?? this.opts.threadsPerWorker ?? 1,
      ...(spec.host !== undefined ? { host: spec.host } : {}),
      ...(spec.resources !== undefined ? { resources: spec.resources } : {}),
      functions: this.resolved.functions,
      threadFunctions: threadFunctions(this.resolved, checkExecutor(spec.executor, "workers.executor") ?? this.opts.executor),
      clock: this.clock,
      log: this.log,
      ...(this.recorders.has(spec.name) ? { recorder: this.recorders.get(spec.name)! } : {}),
      transferIncomingCountLimit: this.config.transferIncomingCountLimit,
      bandwidth: this.config.bandwidth,
      heartbeatInterval: this.config.heartbeatInterval,
      scatterLease: this.config.scatterLease,
      executorThreadMemory: this.config.executorThreadMemory,
      reportHold: this.config.reportHold,
      ...(this.opts.onError ? { onError: this.opts.onError } : {}),
    });
    this.workers.set(spec.name, worker);
    this.recorders.set(spec.name, worker.recorder);
    await worker.start();
    return worker;
  }

  private connect(name: string): Transport {
    const transport = this.bus.connect(name);
    this.transports.push(transport);
    return transport;
  }

  /** Resolves once every message sent so far inside the cluster has been delivered. */
  flush(): Promise<void> {
    return this.transports[0]!.flush();
  }

  /**
   * Retire a worker gracefully (Dask's retire_workers): the scheduler places its tasks
   * elsewhere and copies the data only it holds to other workers, then tells it to close.
   * Resolves once it closed; after `timeout` ms (default 30 s) it is closed anyway, and
   * what was not handed over by then is lost (recomputed when needed, if it can be).
   */
  async removeWorker(name: string, opts: { timeout?: number } = {}): Promise<void> {
    const worker = this.workers.get(name);
    if (worker === undefined) throw new BadOptionError("worker", `no worker named ${name}`);
    const timeout = opts.timeout ?? 30_000;
    if (!Number.isFinite(timeout) || timeout < 0) throw new BadOptionError("timeout", "must be a number of milliseconds >= 0");
    this.workers.delete(name);
    if (!(await worker.retire("removed", timeout))) worker.close({ reason: "removed (retirement timed out)" });
    await this.flush();
  }

  /** Kill a worker without warning, as a crash would: the scheduler finds out on its own. */
  killWorker(name: string): void {
    const worker = this.workers.get(name);
    if (worker === undefined) throw new BadOptionError("worker", `no worker named ${name}`);
    this.workers.delete(name);
    worker.close({ abrupt: true, reason: "killed" });
    this.scheduler.feed({ op: "worker-lost", name, id: worker.id, reason: "killed", t: this.clock.now() });
  }

  async close(): Promise<void> {
    if (this.closedFlag) return;
    this.closedFlag = true;
    try {
      await this.stopAll();
    } finally {
      await this.dashboard?.close();
      await this.disposeTempLog();
    }
  }

  /** A temp log nobody named: deleted, or its path printed when the user asked to keep it. */
  private async disposeTempLog(): Promise<void> {
    const option = this.opts.log as { path?: string; keep?: boolean } | undefined;
    const path = this.logPath;
    if (path === undefined || (option !== undefined && (typeof (option as LogSink).append === "function" || option.path !== undefined))) return;
    if (option?.keep === true) process.stderr.write(`natsched: cluster ${this.name}: event log kept at ${path}\n`);
    else await rm(path, { force: true });
  }

  private async stopAll(): Promise<void> {
    await Promise.all([...this.clients].map((c) => c.close().catch(() => undefined)));
    await this.flush();
    for (const worker of this.workers.values()) worker.close({ reason: "cluster closed" });
    this.workers.clear();
    await this.flush();
    this.scheduler.close();
    await this.flush();
    await Promise.all(this.transports.map((t) => t.close()));
    await this.log?.close();
  }
}

function dashboardStart() {
  const start = dashboardStarter();
  if (start === undefined) throw new BadOptionError("dashboard", 'the dashboard comes with the package\'s entry point: import { LocalCluster } from "natsched"');
  return start;
}

function dashboardPlace(option: LocalClusterOptions["dashboard"]): { port?: number; host?: string } {
  if (option === true) return {};
  if (typeof option !== "object" || option === null) throw new BadOptionError("dashboard", "true, or { port, host }");
  return { ...(option.port !== undefined ? { port: option.port } : {}), ...(option.host !== undefined ? { host: option.host } : {}) };
}

function workerSpecs(opts: LocalClusterOptions): WorkerSpec[] {
  const w = opts.workers ?? 2;
  if (typeof w === "number") {
    if (!Number.isInteger(w) || w < 0) throw new BadOptionError("workers", "must be a whole number >= 0 or a list of worker specs");
    const nthreads = opts.threadsPerWorker ?? 1;
    if (!Number.isInteger(nthreads) || nthreads < 1) throw new BadOptionError("threadsPerWorker", "must be a whole number >= 1");
    return Array.from({ length: w }, (_, i) => ({ name: `worker-${i}`, nthreads }));
  }
  if (!Array.isArray(w)) throw new BadOptionError("workers", "must be a number or a list of worker specs");
  const names = new Set<string>();
  for (const spec of w) {
    if (typeof spec?.name !== "string" || !/^[A-Za-z0-9_-]+$/.test(spec.name)) throw new BadOptionError("workers", `bad worker name ${JSON.stringify(spec?.name)} (letters, digits, '-', '_')`);
    if (names.has(spec.name)) throw new BadOptionError("workers", `duplicate worker name ${spec.name}`);
    names.add(spec.name);
    if (spec.nthreads !== undefined && (!Number.isInteger(spec.nthreads) || spec.nthreads < 1)) throw new BadOptionError("workers", `${spec.name}: nthreads must be a whole number >= 1`);
  }
  return w;
}

async function openLogSink(option: LocalClusterOptions["log"], cluster: string, functions: Record<string, unknown>): Promise<LogSink | null> {
  if (option === false) return null;
  if (option !== undefined && typeof (option as LogSink).append === "function") return option as LogSink;
  const file = option as { path?: string; format?: LogFileFormat } | undefined;
  const path = file?.path ?? join(tmpdir(), `natsched-${cluster}-${Date.now()}.natlog`);
  return FileLogSink.open(path, { meta: { cluster, ...functions }, format: file?.format });
}
