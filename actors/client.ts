import { randomFillSync } from "node:crypto";
import { checkKeys, checkTimeout, describeValue, typeName } from "../machines/client/arguments.js";
import { AsCompleted, waitFutures, type AsCompletedOptions, type WaitOptions, type WaitResult } from "./client-waits.js";
import { progress, type ProgressOptions } from "./progress.js";
import { ClientCore, type KeyStatus } from "../machines/client/core.js";
import { timerName, type ClientFailure, type ClientInput, type ClientInstruction, type ClientKeysAnswer, type ClientQuery, type ClientStimulus } from "../machines/client/inputs.js";
import { BadOptionError, CancelledError, ClosedError, NatschedError, ProtocolError, SchedulerRestartedError, TimeoutError } from "../machines/errors.js";
import { tokenize } from "../machines/graph/index.js";
import { PROTOCOL_VERSION, type ClientToScheduler, type Envelope, type ErrorInfo, type SchedulerToClient, type TaskSpec } from "../machines/protocol.js";
import type { SchedulerReply } from "../machines/scheduler/inputs.js";
import { microtask } from "../transport/microtask.js";
import { subjects, type Subjects } from "../transport/subjects.js";
import type { Msg, Subscription, Transport } from "../transport/types.js";
import type { LogSink } from "../log/types.js";
import { encodeArgs } from "./args.js";
import { ClientRecording } from "./client-recording.js";
import { realClock, type Clock } from "./host/clock.js";
import { fetchData, HolderRefusedError } from "./data-plane/fetch.js";
import { graphToSpecs, type Graph } from "./graph-spec.js";
import { isAnnouncement, refuseRequest } from "./publish-only.js";
import { RESUMING_EVERY_MS, RESUMING_MISSED, resumingSubject, type ResumingAnnouncement } from "./resuming.js";
import { scatterByContent, scatterExplicit, type ScatterHost } from "./scatter.js";
import { checkRetries, checkSubmitOptions, specOptions, type SubmitOptions } from "./submit-options.js";
import { clientReportProblem, envelopeProblem } from "./validate-ops.js";
import { errorFromInfo, taskError } from "./wire-errors.js";
import { withTime } from "./host/with-time.js";

export type { SubmitOptions };

export interface WorkerSummary {
  name: string;
  id: string;
  state: string;
  nthreads: number;
  host: string;
  processing: number;
  occupancy: number;
  nbytes: number;
  keys: number;
}

/**
 * A handle on a task's result. Holding it keeps the result alive on the cluster; call
 * `release()` (or drop it: a collected Future releases itself) to let the cluster free it.
 */
export class Future<T = unknown> {
  private released = false;

  constructor(
    readonly key: string,
    private readonly client: Client,
  ) {
    client.retain(key, this);
  }

  get status(): KeyStatus {
    return this.client.keyStatus(this.key);
  }

  done(): boolean {
    return this.status !== "pending";
  }

  /**
   * The result, fetched from a worker that holds it. Rejects with TaskFailedError if the task
   * failed, TimeoutError after `timeout` milliseconds (default: no limit).
   */
  result(opts: { timeout?: number } = {}): Promise<T> {
    return this.client.gather(this, opts) as Promise<T>;
  }

  /** Resolves when the task is done (finished, erred or cancelled), or after `timeout` milliseconds, without fetching data. */
  wait(opts: { timeout?: number } = {}): Promise<void> {
    let timeout: number | undefined;
    try {
      timeout = checkTimeout(opts);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return this.client.waitFor(this.key, timeout).catch(() => undefined);
  }

  /**
   * Cancel the task (Dask's Future.cancel): this future, and this client's futures of tasks
   * depending on it, reject with CancelledError (code CANCELLED) at once; the cluster lets go
   * of what only this client wanted. Resolves once the scheduler took the cancel.
   */
  cancel(): Promise<void> {
    return this.client.cancel(this);
  }

  /** @internal */
  belongsTo(client: Client): boolean {
    return this.client === client;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.client.unretain(this.key, this);
  }

  toString(): string {
    return `<Future ${this.status} key=${this.key}>`;
  }
}

export interface ClientOptions {
  cluster: string;
  transport: Transport;
  /** Client id; a random one by default. */
  id?: string;
  /** Milliseconds to wait for the scheduler to answer a request. */
  requestTimeout?: number;
  /**
   * Milliseconds from its first try that a request waits, past `requestTimeout`, for a
   * scheduler that keeps saying it is resuming from its log (actors/resuming.ts). Default
   * 300000 (5 minutes).
   */
  resumeWait?: number;
  /**
   * Seconds between heartbeats to the scheduler, which releases the futures of a client it
   * has not heard from for `clientReleaseGrace`. Default 0.5 (the default heartbeatInterval).
   */
  heartbeatInterval?: number;
  /** Called once the client has closed (its host drops what it kept for it). */
  onClosed?: () => void;
  /**
   * Where the client records itself as actor `client.<id>` (docs/log-format.md): its start,
   * every input its core takes, its futures' transitions, its stop. Default none.
   */
  log?: LogSink | null;
  /** The seq of the client's first record in `log` (a client id whose log goes on). Default 0. */
  logFirstSeq?: number;
  /** The clock its inputs are stamped with (seconds). Default: the real one. */
  clock?: Clock;
}

const DEFAULT_HEARTBEAT_INTERVAL = 0.5;

/**
 * Submits work to a cluster and collects results, Dask's Client in TypeScript. The same
 * client works on every transport: in-process (LocalCluster) and NATS.
 *
 * The host of a ClientCore (machines/client/core.ts), which decides what the client does:
 * this class checks the user's arguments, turns calls, messages and timers into the core's
 * stimuli stamped with the time, and carries out its instructions (sends, queries, fetches
 * from workers, timers, settling promises).
 */
export class Client {
  readonly id: string;
  private readonly subjects: Subjects;
  private readonly core: ClientCore;
  private readonly registry = new FinalizationRegistry<string>((key) => this.unretain(key, null));
  private subscription: Subscription | null = null;
  private announcements: Subscription | null = null;
  private resumingAnnouncements: Subscription | null = null;
  private stopWatchingReconnects: (() => void) | null = null;
  private transportClosedSeen = false;
  /** The host's ids of calls, waits, gathers and scatters (one counter for all). */
  private nextId = 1;
  private readonly calls = new Map<number, Settle<SchedulerReply>>();
  private readonly waits = new Map<number, Settle<void>>();
  /** Each gather's promise, and the values its fetches brought. */
  private readonly gathers = new Map<number, Settle<Map<string, unknown>> & { values: Map<string, unknown> }>();
  private readonly timers = new Map<string, { handle: ReturnType<typeof setTimeout>; repeat: boolean }>();
  /** The error of each failure the core handed out: one per failure, so a key's waits reject with the same error. */
  private readonly errors = new WeakMap<ClientFailure, unknown>();
  private readonly clock: Clock;
  /** Null when nothing is recorded. */
  private readonly recording: ClientRecording | null;
  /**
   * Futures made (or released) since the core's last input, in order: the core takes them
   * as one input before anything else reaches it or is read from it (at the latest at the
   * next microtask), so a map of 10,000 tasks is one retain, not 10,000 inputs to record.
   */
  private refChanges: { op: "retain" | "release"; keys: string[] } | null = null;
  private refsFlushScheduled = false;

  /**
   * A client of a cluster on NATS (scheduler and workers as processes): the same API as
   * `LocalCluster.client()`. Loaded lazily so the embedded runtime does not pull in NATS.
   */
  static async connect(opts: import("./process/connect-client.js").ConnectClientOptions): Promise<Client> {
    const { connectClient } = await import("./process/connect-client.js");
    return connectClient(opts);
  }

  constructor(private readonly opts: ClientOptions) {
    if (opts.id !== undefined) checkClientId(opts.id);
    this.id = opts.id ?? randomClientId();
    const every = opts.heartbeatInterval;
    if (every !== undefined && !(typeof every === "number" && every > 0)) throw new BadOptionError("heartbeatInterval", `must be a number of seconds > 0, got ${String(every)}`);
    const resumeWait = opts.resumeWait;
    if (resumeWait !== undefined && !(typeof resumeWait === "number" && resumeWait >= 0)) throw new BadOptionError("resumeWait", `must be a number of milliseconds >= 0, got ${String(resumeWait)}`);
    this.subjects = subjects(opts.cluster);
    this.clock = opts.clock ?? realClock;
    const init = {
      id: this.id,
      cluster: opts.cluster,
      opsSubject: this.subjects.clientOps(this.id),
      requestTimeout: this.requestTimeout,
      resumeWait: resumeWait ?? 300_000,
      heartbeatEvery: (every ?? DEFAULT_HEARTBEAT_INTERVAL) * 1000,
      resumingEvery: RESUMING_EVERY_MS,
      resumingMissed: RESUMING_MISSED,
    };
    this.recording = ClientRecording.open(opts.log ?? null, init, this.clock.now(), opts.logFirstSeq);
    this.core = new ClientCore(init, this.recording);
  }

  get closed(): boolean {
    return this.core.closed;
  }

  /** Subscribe to the scheduler's reports and announce this client (does not wait). */
  attach(): this {
    if (this.subscription !== null) return this;
    this.subscription = this.opts.transport.subscribe(this.subjects.client(this.id), (msg) => this.receive(msg));
    // A scheduler that starts a new run (restarted without a log to resume from) knows nothing of this client.
    this.announcements = this.opts.transport.subscribe(this.subjects.announce, (msg) => {
      if (refuseRequest(this.opts.transport, msg, "announcements of a scheduler's new run")) return;
      if (!isAnnouncement(msg.data, "scheduler-started")) return;
      const run = (msg.data as { run?: unknown }).run;
      this.feed(Number.isSafeInteger(run) ? { op: "scheduler-started", run: run as number } : { op: "scheduler-started" });
    });
    this.resumingAnnouncements = this.opts.transport.subscribe(resumingSubject(this.opts.cluster), (msg) => {
      if (refuseRequest(this.opts.transport, msg, "announcements of a resuming scheduler")) return;
      this.heardResuming(msg.data);
    });
    this.feed({ op: "attach" });
    // It announces the new run three times in 5 s; a client whose connection was down all
    // that time asks when it is back, and reconciles if the run is not the one it knew.
    this.stopWatchingReconnects = this.opts.transport.onReconnect?.(() => this.feed({ op: "reconnected" })) ?? null;
    return this;
  }

  /** `attach`, then wait until the scheduler has answered. */
  async connect(): Promise<this> {
    this.attach();
    await this.call((call) => ({ op: "join", call }));
    return this;
  }

  // ---- submitting ----------------------------------------------------------------------

  /** Run `func(...args)` on the cluster. Futures among the arguments become dependencies. */
  submit<T = unknown>(func: string, args: readonly unknown[] = [], options: SubmitOptions = {}): Future<T> {
    this.assertOpen();
    if (typeof func !== "string" || func.length === 0) throw new BadOptionError("func", "must be the name of a registered function");
    if (!Array.isArray(args)) throw new BadOptionError("args", "must be an array");
    checkSubmitOptions(options);
    const encoded = encodeArgs(args, (v) => this.refOf(v));
    const key = options.key ?? (options.pure === false ? randomKey(func, 16) : `${func}-${tokenize(func, encoded.args)}`);
    const spec: TaskSpec = { key, func, args: encoded.args, deps: encoded.deps, ...specOptions(options) };
    const future = new Future<T>(key, this);
    this.submitTasks([spec], [key]);
    return future;
  }

  /** `submit` for each element: one task per item, submitted as one graph. */
  map<T = unknown>(func: string, items: Iterable<unknown>, options: Omit<SubmitOptions, "key"> & { keys?: string[] } = {}): Future<T>[] {
    this.assertOpen();
    if (typeof func !== "string" || func.length === 0) throw new BadOptionError("func", "must be the name of a registered function");
    if (items === null || items === undefined || typeof (items as Partial<Iterable<unknown>>)[Symbol.iterator] !== "function" || typeof items === "string") {
      throw new BadOptionError("items", `map takes an array (or another iterable) of items, one task each, got ${describeValue(items)}`);
    }
    if (typeof options !== "object" || options === null) throw new BadOptionError("options", "must be an object");
    const { keys: explicitKeys, ...rest } = options;
    checkSubmitOptions(rest);
    const list = Array.isArray(items) ? (items as readonly unknown[]) : [...items];
    if (explicitKeys !== undefined) checkKeys(explicitKeys, list.length, "map");
    const specs: TaskSpec[] = [];
    const plain = Object.keys(specOptions(rest)).length === 0;
    for (let i = 0; i < list.length; i++) {
      const item = list[i];
      // A primitive argument encodes as itself (the common case: map over numbers or strings).
      const encoded = item === null || (typeof item !== "object" && typeof item !== "function") ? { args: [item], deps: [] } : encodeArgs([item], (v) => this.refOf(v));
      const key = explicitKeys?.[i] ?? (rest.pure === false ? randomKey(func, 16) : `${func}-${tokenize(func, encoded.args)}`);
      specs.push(plain ? { key, func, args: encoded.args, deps: encoded.deps } : { key, func, args: encoded.args, deps: encoded.deps, ...specOptions(rest) });
    }
    const futures = specs.map((spec) => new Future<T>(spec.key, this));
    // Random keys (pure: false) are 128 bits each: no two alike, nothing to fold.
    if (explicitKeys === undefined && rest.pure === false) this.submitTasks(specs, specs.map((s) => s.key));
    else {
      const unique = new Map(specs.map((s) => [s.key, s]));
      this.submitTasks([...unique.values()], [...unique.keys()]);
    }
    return futures;
  }

  /**
   * A graph of named tasks, Dask style: `{ "x": ["inc", 1], "y": ["add", "x", 10] }`. A
   * string argument naming another key of the graph is a dependency; a value that is not
   * `[functionName, ...args]` is literal data. Returns futures for every key (or `keys`).
   */
  persist(graph: Graph, opts: { keys?: string[]; priority?: number; retries?: number } = {}): Record<string, Future> {
    this.assertOpen();
    if (typeof opts !== "object" || opts === null) throw new BadOptionError("options", "must be an object");
    if (opts.priority !== undefined && !Number.isFinite(opts.priority)) throw new BadOptionError("priority", "must be a finite number");
    checkRetries(opts.retries);
    const specs = graphToSpecs(graph, (v) => this.refOf(v), opts.priority);
    if (opts.retries !== undefined && opts.retries > 0) for (const spec of specs) spec.retries = opts.retries;
    if (opts.keys !== undefined && (!Array.isArray(opts.keys) || opts.keys.some((k) => typeof k !== "string"))) {
      throw new BadOptionError("keys", `must be an array of keys of the graph, got ${describeValue(opts.keys)}`);
    }
    const outputs = opts.keys ?? specs.map((s) => s.key);
    for (const key of outputs) if (!Object.prototype.hasOwnProperty.call(graph, key)) throw new BadOptionError("keys", `${key} is not a key of the graph`);
    const futures: Record<string, Future> = {};
    for (const key of outputs) futures[key] = new Future(key, this);
    this.submitTasks(specs, outputs);
    return futures;
  }

  /** `persist`, then gather: resolves with `{ key: result }` and releases the futures. */
  async compute(graph: Graph, opts: { keys?: string[]; priority?: number; retries?: number; timeout?: number } = {}): Promise<Record<string, unknown>> {
    checkTimeout(opts);
    const futures = this.persist(graph, opts);
    try {
      const values = await this.gather(Object.values(futures), opts.timeout !== undefined ? { timeout: opts.timeout } : {});
      const out: Record<string, unknown> = {};
      Object.keys(futures).forEach((key, i) => (out[key] = values[i]));
      return out;
    } finally {
      for (const f of Object.values(futures)) f.release();
    }
  }

  /** Put local data on workers (round-robin, or on `workers`) and get futures for it. */
  async scatter<T = unknown>(values: readonly T[], opts: { workers?: string[]; keys?: string[] } = {}): Promise<Future<T>[]> {
    this.assertOpen();
    if (!Array.isArray(values)) throw new BadOptionError("values", `scatter takes an array of values, got ${describeValue(values)}`);
    if (typeof opts !== "object" || opts === null) throw new BadOptionError("options", "must be an object");
    if (opts.keys !== undefined) checkKeys(opts.keys, values.length, "scatter");
    let targets = opts.workers === undefined ? undefined : typeof opts.workers === "string" ? [opts.workers] : opts.workers;
    if (targets !== undefined && (!Array.isArray(targets) || targets.some((w) => typeof w !== "string" || w.length === 0))) {
      throw new BadOptionError("workers", `must be a worker name or an array of worker names, got ${describeValue(opts.workers)}`);
    }
    if (values.length === 0) return [];
    if (targets === undefined || targets.length === 0) targets = (await this.workers()).map((w) => w.name);
    else {
      const known = (await this.workers()).map((w) => w.name).sort();
      const unknown = targets.filter((w) => !known.includes(w));
      if (unknown.length > 0) {
        throw new BadOptionError(
          "workers",
          `no worker named ${unknown.map((w) => JSON.stringify(w)).join(", ")} in cluster ${JSON.stringify(this.opts.cluster)} (its workers: ${known.length === 0 ? "none" : known.join(", ")})`,
        );
      }
    }
    if (targets.length === 0) throw new NatschedError("NO_WORKERS", "scatter: no workers in the cluster");
    const explicit = opts.keys !== undefined;
    const keys = values.map((v, i) => opts.keys?.[i] ?? `${typeName(v)}-${tokenize(v)}`);
    // Before anything is registered: the scheduler's reports may overtake its reply.
    const futures = keys.map((key) => new Future<T>(key, this));
    const host = this.scatterHost();
    const scatter = this.nextId++;
    this.feed({ op: "scatter-start", scatter, keys });
    let failure: Error | null = null;
    try {
      if (explicit) {
        const byWorker = new Map<string, Map<string, unknown>>();
        values.forEach((v, i) => {
          const w = targets![i % targets!.length]!;
          let batch = byWorker.get(w);
          if (batch === undefined) byWorker.set(w, (batch = new Map()));
          batch.set(keys[i]!, v);
        });
        failure = await scatterExplicit(host, byWorker);
      } else {
        // One copy per distinct value, on the worker its first position falls to (the next one each round).
        const byKey = new Map<string, unknown>();
        const position = new Map<string, number>();
        values.forEach((v, i) => {
          if (byKey.has(keys[i]!)) return;
          byKey.set(keys[i]!, v);
          position.set(keys[i]!, i);
        });
        await scatterByContent(host, byKey, (key, round) => targets![(position.get(key)! + round) % targets!.length]!);
      }
    } catch (error) {
      failure = error as Error;
    } finally {
      this.feed({ op: "scatter-end", scatter });
    }
    if (failure !== null) {
      // Nothing of a failed scatter stays wanted by this client.
      for (const f of futures) f.release();
      throw failure;
    }
    return futures;
  }

  private scatterHost(): ScatterHost {
    return {
      transport: this.opts.transport,
      subjects: this.subjects,
      id: this.id,
      requestTimeout: this.requestTimeout,
      updateData: (data) => this.call((call) => ({ op: "update-data", call, data })),
    };
  }

  // ---- collecting ----------------------------------------------------------------------

  /** Results of futures, in the same shape: a Future, an array, or an object of futures. */
  gather(futures: Future, opts?: { timeout?: number }): Promise<unknown>;
  gather(futures: readonly Future[], opts?: { timeout?: number }): Promise<unknown[]>;
  gather(futures: Record<string, Future>, opts?: { timeout?: number }): Promise<Record<string, unknown>>;
  async gather(futures: Future | readonly Future[] | Record<string, Future>, opts: { timeout?: number } = {}): Promise<unknown> {
    this.assertOpen();
    const timeout = checkTimeout(opts);
    if (futures instanceof Future) {
      checkFuture(futures, "futures", this);
      return (await this.fetch([futures.key], timeout)).get(futures.key);
    }
    if (Array.isArray(futures)) {
      futures.forEach((f, i) => checkFuture(f, `futures[${i}]`, this));
      const values = await this.fetch(futures.map((f) => f.key), timeout);
      return futures.map((f) => values.get(f.key));
    }
    if (typeof futures !== "object" || futures === null || Object.getPrototypeOf(futures) !== Object.prototype && Object.getPrototypeOf(futures) !== null) {
      throw new BadOptionError("futures", `gather takes a Future, an array of futures or an object of futures, got ${describeValue(futures)}`);
    }
    const entries = Object.entries(futures as Record<string, Future>);
    for (const [name, f] of entries) checkFuture(f, `futures.${name}`, this);
    const values = await this.fetch(entries.map(([, f]) => f.key), timeout);
    return Object.fromEntries(entries.map(([name, f]) => [name, values.get(f.key)]));
  }

  /**
   * Cancel futures (Dask's Client.cancel, without `force`; docs/protocol.md, "Cancel"): they
   * reject with CancelledError (code CANCELLED) at once, and so do this client's futures of
   * tasks depending on them. The scheduler releases what only this client wanted: a task
   * waiting or queued is dropped, one processing is freed on its worker (which drops its
   * outcome). Keys other clients want go on for them. A cancelled key can be submitted again.
   * Resolves once the scheduler took the cancel.
   */
  async cancel(futures: Future | readonly Future[]): Promise<void> {
    this.assertOpen();
    const list = futures instanceof Future ? [futures] : futures;
    if (!Array.isArray(list)) throw new BadOptionError("futures", `cancel takes a Future or an array of futures, got ${describeValue(futures)}`);
    list.forEach((f, i) => checkFuture(f, futures instanceof Future ? "futures" : `futures[${i}]`, this));
    const reply = await this.call((call) => ({ op: "cancel", call, keys: list.map((f) => f.key) }));
    if (!reply.ok) throw errorFromInfo(reply.error);
  }

  /**
   * Waits for `futures` (Dask's `wait`): resolves with `{ done, notDone }` once `returnWhen`
   * holds (ALL_COMPLETED by default, FIRST_COMPLETED, FIRST_EXCEPTION); erred futures count as
   * done. Rejects with TimeoutError after `timeout` ms.
   */
  wait<T>(futures: readonly Future<T>[], opts: WaitOptions = {}): Promise<WaitResult<T>> {
    this.assertOpen();
    if (!Array.isArray(futures)) return Promise.reject(new BadOptionError("futures", `wait takes an array of futures, got ${describeValue(futures)}`));
    try {
      futures.forEach((f, i) => checkFuture(f, `futures[${i}]`, this));
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return waitFutures(futures, opts);
  }

  /**
   * The futures in the order they complete (Dask's `as_completed`), an async iterable:
   * `for await (const f of client.asCompleted(fs)) ...`; `.add(future)` takes more while
   * iterating. `withResults` yields `[future, result]`.
   */
  asCompleted<T>(futures: Iterable<Future<T>> = [], opts: AsCompletedOptions = {}): AsCompleted<T> {
    this.assertOpen();
    const list = [...futures];
    list.forEach((f, i) => checkFuture(f, `futures[${i}]`, this));
    return new AsCompleted(list, opts);
  }

  /** A progress bar per task prefix until every future is done (Dask's `progress`); see actors/progress.ts. */
  progress(futures: readonly Future[], opts: ProgressOptions = {}): Promise<void> {
    this.assertOpen();
    futures.forEach((f, i) => checkFuture(f, `futures[${i}]`, this));
    return progress(futures, opts);
  }

  /**
   * Run these futures' tasks, and what they depend on, to completion even after this client
   * releases the futures or closes (Dask's fire_and_forget). Once a task is done (finished or
   * erred) the cluster forgets it as it forgets any key nobody wants. A task already done is
   * left alone. Resolves once the scheduler took it; send it before releasing the futures.
   */
  fireAndForget(futures: Future | readonly Future[]): Promise<void> {
    this.assertOpen();
    const list = futures instanceof Future ? [futures] : futures;
    if (!Array.isArray(list)) throw new BadOptionError("futures", `fireAndForget takes a Future or an array of futures, got ${describeValue(futures)}`);
    list.forEach((f, i) => checkFuture(f, futures instanceof Future ? "futures" : `futures[${i}]`, this));
    const taken = this.call((call) => ({ op: "fire-and-forget", call, keys: list.map((f) => f.key) })).then((reply) => {
      if (!reply.ok) throw errorFromInfo(reply.error);
    });
    // Called and not awaited, as fire-and-forget mostly is, a failure must not crash the process.
    taken.catch(() => undefined);
    return taken;
  }

  /** The cluster's workers as the scheduler sees them. */
  async workers(): Promise<WorkerSummary[]> {
    const reply = (await this.opts.transport.request(this.subjects.query, { op: "workers" }, { timeout: this.requestTimeout })) as { workers: WorkerSummary[] };
    return reply.workers;
  }

  /** The values of `keys`, fetched from their holders once they are done (the core's gather). */
  private fetch(keys: string[], timeout?: number): Promise<Map<string, unknown>> {
    return new Promise((resolve, reject) => {
      const gather = this.nextId++;
      this.gathers.set(gather, { resolve, reject, values: new Map() });
      this.feed({ op: "gather", gather, keys, timeout });
    });
  }

  /** Resolve when `key` is finished; reject if it erred or was cancelled. */
  waitFor(key: string, timeout?: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const wait = this.nextId++;
      this.waits.set(wait, { resolve, reject });
      this.feed({ op: "wait", wait, keys: [key], timeout });
    });
  }

  keyStatus(key: string): KeyStatus {
    this.flushRefs();
    return this.core.status(key);
  }

  /** The specs kept for resubmission after a new run of the scheduler (tests look). */
  private get specs(): ReadonlyMap<string, TaskSpec> {
    this.flushRefs();
    return this.core.keptSpecs();
  }

  // ---- reference counting --------------------------------------------------------------

  /** @internal */
  retain(key: string, future: Future): void {
    this.changeRefs("retain", key);
    this.registry.register(future, key, future);
  }

  /** @internal */
  unretain(key: string, future: Future | null): void {
    if (future !== null) this.registry.unregister(future);
    this.changeRefs("release", key);
  }

  private changeRefs(op: "retain" | "release", key: string): void {
    const pending = this.refChanges;
    if (pending !== null && pending.op === op) {
      pending.keys.push(key);
      return;
    }
    this.flushRefs();
    this.refChanges = { op, keys: [key] };
    if (this.refsFlushScheduled) return;
    this.refsFlushScheduled = true;
    microtask(() => {
      this.refsFlushScheduled = false;
      this.flushRefs();
    });
  }

  /** The futures made or released meanwhile, to the core. */
  private flushRefs(): void {
    const pending = this.refChanges;
    if (pending === null) return;
    this.refChanges = null;
    this.stamped(pending);
  }

  // ---- the core's host -----------------------------------------------------------------

  private submitTasks(tasks: TaskSpec[], wants: string[]): void {
    this.feed({ op: "submit", tasks, wants });
  }

  /** A call the scheduler answers (`make` names it with its id): resolves with the reply. */
  private call(make: (call: number) => ClientStimulus): Promise<SchedulerReply> {
    return new Promise((resolve, reject) => {
      const call = this.nextId++;
      this.calls.set(call, { resolve, reject });
      this.feed(make(call));
    });
  }

  /** Stamp `stimulus` with the time, feed it to the core (after the futures made or released before it), and carry out what it says. */
  private feed(stimulus: ClientStimulus): void {
    this.flushRefs();
    this.stamped(stimulus);
  }

  private stamped(stimulus: ClientStimulus): void {
    const t = this.clock.now();
    if (!this.transportClosedSeen && this.opts.transport.closed) {
      this.transportClosedSeen = true;
      this.step({ op: "transport-closed" }, t);
    }
    this.step(stimulus, t);
  }

  /** The core takes time in milliseconds; the log (and replay) in seconds: see client-recording.ts. */
  private step(stimulus: ClientStimulus, t: number): void {
    this.recording?.input(stimulus, t);
    this.execute(this.core.handle(withTime(stimulus, t * 1000) as ClientInput));
  }

  private execute(instructions: readonly ClientInstruction[]): void {
    for (const i of instructions) {
      switch (i.do) {
        case "schedule-flush":
          microtask(() => this.feed({ op: "flush" }));
          break;
        case "request":
          this.request(i.request, i.ops, i.timeout, i.attempt);
          break;
        case "publish":
          try {
            this.opts.transport.publish(this.subjects.clientOps(this.id), { v: PROTOCOL_VERSION, from: this.id, ops: i.ops });
          } catch {
            this.feed({ op: "heartbeat-failed" });
          }
          break;
        case "query":
          this.query(i.query, i.body);
          break;
        case "fetch":
          this.fetchFrom(i.gather, i.holder, i.keys);
          break;
        case "set-timer": {
          const timer = i.timer;
          const name = timerName(timer);
          const fire = (): void => {
            if (i.repeat === undefined) this.timers.delete(name);
            this.feed({ op: "timer", timer });
          };
          const handle = i.repeat ? setInterval(fire, i.ms) : setTimeout(fire, i.ms);
          // Heartbeats do not keep a process alive; a pending result does.
          if (timer.kind === "heartbeat") handle.unref();
          this.timers.set(name, { handle, repeat: i.repeat === true });
          break;
        }
        case "clear-timer": {
          const name = timerName(i.timer);
          const timer = this.timers.get(name);
          if (timer === undefined) break;
          if (timer.repeat) clearInterval(timer.handle);
          else clearTimeout(timer.handle);
          this.timers.delete(name);
          break;
        }
        case "answer-call":
          take(this.calls, i.call)?.resolve(i.reply);
          break;
        case "fail-call":
          take(this.calls, i.call)?.reject(this.errorOf(i.failure));
          break;
        case "resolve-wait":
          take(this.waits, i.wait)?.resolve();
          break;
        case "reject-wait":
          take(this.waits, i.wait)?.reject(this.errorOf(i.failure));
          break;
        case "resolve-gather": {
          const gather = take(this.gathers, i.gather);
          gather?.resolve(gather.values);
          break;
        }
        case "reject-gather":
          take(this.gathers, i.gather)?.reject(this.errorOf(i.failure));
          break;
      }
    }
  }

  private request(request: number, ops: readonly ClientToScheduler[], timeout: number, attempt: number): void {
    const recording = this.recording;
    const sent = recording === null ? (ops as ClientToScheduler[]) : ops.map((op) => recording.stamp(op));
    const envelope: Envelope<ClientToScheduler> = { v: PROTOCOL_VERSION, from: this.id, ops: sent };
    new Promise((resolve) => resolve(this.opts.transport.request(this.subjects.clientOps(this.id), envelope, { timeout }))).then(
      (data) => this.feed({ op: "answered", request, attempt, replies: (data as { replies?: SchedulerReply[] } | null)?.replies ?? [] }),
      (error: unknown) => {
        const noResponders = error instanceof ProtocolError && /no responders/.test(error.message);
        this.feed({ op: "request-failed", request, attempt, noResponders, failure: this.failureOf(error) });
      },
    );
  }

  private query(query: number, body: ClientQuery): void {
    new Promise((resolve) => resolve(this.opts.transport.request(this.subjects.query, body, { timeout: this.requestTimeout }))).then(
      (answer) => {
        if (body.op === "client-keys") return this.feed({ op: "client-keys", query, answer: readClientKeys(answer) });
        const whoHas = (answer as { whoHas?: unknown } | null)?.whoHas;
        this.feed({ op: "who-has", query, whoHas: typeof whoHas === "object" && whoHas !== null ? (whoHas as Record<string, string[]>) : {} });
      },
      () => this.feed({ op: "query-failed", query }),
    );
  }

  /** A gather's fetch from one holder: the values it sends are kept for the gather, the rest reported. */
  private fetchFrom(gather: number, holder: string, keys: string[]): void {
    fetchData(this.opts.transport, this.subjects.workerData(holder), keys, this.id, this.requestTimeout).then(
      ({ values, nbytes }) => {
        const kept = this.gathers.get(gather)?.values;
        const missing: string[] = [];
        for (let i = 0; i < keys.length; i++) {
          if (nbytes[i]! >= 0) kept?.set(keys[i]!, values[i]);
          else missing.push(keys[i]!);
        }
        this.feed({ op: "fetched", gather, holder, keys, missing });
      },
      (error: unknown) => this.feed({ op: "fetch-failed", gather, holder, keys, refused: error instanceof HolderRefusedError ? this.failureOf(error) : undefined }),
    );
  }

  /** An error the host met, described for the core (and kept: the core's failure rejects with it). */
  private failureOf(error: unknown): ClientFailure {
    const e = error as Partial<NatschedError> | null;
    const failure: ClientFailure = {
      kind: "host",
      error: { name: typeof e?.name === "string" ? e.name : "Error", message: typeof e?.message === "string" ? e.message : String(error), ...(typeof e?.code === "string" ? { code: e.code } : {}) },
    };
    this.errors.set(failure, error);
    return failure;
  }

  /** The typed error a failure of the core stands for. */
  private errorOf(failure: ClientFailure): unknown {
    if (this.errors.has(failure)) return this.errors.get(failure);
    const error = failureError(failure);
    this.errors.set(failure, error);
    return error;
  }

  private heardResuming(data: unknown): void {
    const said = data as Partial<ResumingAnnouncement> | null;
    if (typeof said !== "object" || said === null) return;
    if (said.op === "scheduler-resuming") {
      const every = (said as { every?: unknown }).every;
      this.feed({ op: "scheduler-resuming", every: typeof every === "number" ? every : undefined });
    } else if (said.op === "scheduler-resumed") this.feed({ op: "scheduler-resumed" });
  }

  /**
   * The scheduler's reports, published. Each op is checked first (an op that is not a report
   * is dropped: it must not settle a future). A request (the scheduler never sends one) is
   * answered as the scheduler answers its own: `{replies}`, one per op, or `{replies: [], error}`.
   */
  private receive(msg: Msg): void {
    const envelope = msg.data as Envelope<SchedulerToClient>;
    const malformed = msg.problem ?? envelopeProblem(envelope);
    if (malformed !== undefined) {
      if (msg.reply !== undefined) this.opts.transport.publish(msg.reply, { replies: [], error: `malformed envelope: ${malformed}` });
      return;
    }
    const reports: SchedulerToClient[] = [];
    const replies: SchedulerReply[] | null = msg.reply !== undefined ? [] : null;
    for (const op of envelope.ops) {
      const problem = clientReportProblem(op);
      if (problem === undefined) reports.push(op);
      replies?.push(problem === undefined ? { ok: true } : { ok: false, error: { name: "ProtocolError", message: problem, code: "PROTOCOL" } });
    }
    if (reports.length > 0) this.feed({ op: "reports", ops: reports });
    if (msg.reply !== undefined) this.opts.transport.publish(msg.reply, { replies });
  }

  private refOf(value: unknown): string | undefined {
    if (value instanceof Future) {
      this.flushRefs();
      if (!this.core.holds(value.key)) throw new BadOptionError("args", `future ${value.key} was released`);
      return value.key;
    }
    return undefined;
  }

  private get requestTimeout(): number {
    return this.opts.requestTimeout ?? 30_000;
  }

  private assertOpen(): void {
    if (this.core.closed || this.opts.transport.closed) throw new ClosedError("client");
  }

  /** Release every future and leave; pending results reject with ClosedError. */
  async close(): Promise<void> {
    if (this.core.closed) return;
    let leave: Promise<unknown> = Promise.resolve();
    if (this.opts.transport.closed) this.feed({ op: "close" });
    else leave = this.call((call) => ({ op: "close", call })).catch(() => undefined);
    await leave;
    this.recording?.stop(this.clock.now());
    this.subscription?.unsubscribe();
    this.announcements?.unsubscribe();
    this.resumingAnnouncements?.unsubscribe();
    this.stopWatchingReconnects?.();
    this.opts.onClosed?.();
  }
}

interface Settle<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

function take<T>(map: Map<number, T>, id: number): T | undefined {
  const value = map.get(id);
  map.delete(id);
  return value;
}

/** A client-keys answer as the core reads it; the reports in it are checked as the client's own are. */
function readClientKeys(answer: unknown): ClientKeysAnswer | null {
  if (typeof answer !== "object" || answer === null) return null;
  const a = answer as { known?: unknown; wanted?: unknown; run?: unknown; reports?: unknown };
  const read: ClientKeysAnswer = { known: Object.keys(a.known ?? {}) };
  if (Array.isArray(a.wanted)) read.wanted = a.wanted as string[];
  if (typeof a.run === "number") read.run = a.run;
  if (Array.isArray(a.reports)) read.reports = (a.reports as unknown[]).filter((op) => clientReportProblem(op) === undefined) as SchedulerToClient[];
  return read;
}

/** The error the user gets for a failure of the core. */
function failureError(failure: ClientFailure): Error {
  switch (failure.kind) {
    case "task-failed":
      return taskError(failure.key, failure.failedKey, failure.error);
    case "cancelled":
      return new CancelledError(failure.key, failure.reason);
    case "released":
      return new NatschedError("CANCELLED", `future for ${failure.key} was released`);
    case "no-future":
      return new NatschedError("CANCELLED", `no future for ${failure.key} in this client`);
    case "closed":
      return new ClosedError("client");
    case "scheduler-restarted":
      return new SchedulerRestartedError(failure.key, failure.cluster, failure.lostKey);
    case "timeout":
      return new TimeoutError(failure.what);
    case "refused":
    case "host":
      return errorFromInfo(failure.error);
  }
}

/** Random bytes drawn a pool at a time: one hex string per key without a loop of Math.random. */
const RANDOM_POOL = Buffer.alloc(4096);
let randomUsed = RANDOM_POOL.length;

function randomBytesAt(bytes: number): number {
  if (randomUsed + bytes > RANDOM_POOL.length) {
    randomFillSync(RANDOM_POOL);
    randomUsed = 0;
  }
  randomUsed += bytes;
  return randomUsed - bytes;
}

/** The id is a token of the client's subjects (natsched.<cluster>.client.<id>, .scheduler.client.<id>) and of its actor's name. */
export function checkClientId(id: unknown): asserts id is string {
  if (typeof id !== "string" || !/^[A-Za-z0-9_-]+$/.test(id)) throw new BadOptionError("id", `client ids use letters, digits, '-' and '_', got ${JSON.stringify(id)}`);
}

/** A client id nobody else has: `client-` and 16 random hex digits. */
export function randomClientId(): string {
  return `client-${randomHex(8)}`;
}

function randomHex(bytes: number): string {
  const at = randomBytesAt(bytes);
  return RANDOM_POOL.toString("hex", at, at + bytes);
}

const KEY_SCRATCH = Buffer.alloc(256);
const HEX_DIGITS = Buffer.from("0123456789abcdef", "latin1");

/**
 * `${prefix}-${randomHex(bytes)}`, built as one flat string: a concatenation would be a
 * rope, which every later character-by-character read (the event log's capture, hashing)
 * pays for again.
 */
function randomKey(prefix: string, bytes: number): string {
  if (prefix.length * 3 + 1 + 2 * bytes > KEY_SCRATCH.length) return `${prefix}-${randomHex(bytes)}`;
  let p = KEY_SCRATCH.write(prefix, 0, "latin1");
  // Only an ASCII prefix is copied faithfully this way.
  for (let i = 0; i < p; i++) if (KEY_SCRATCH[i]! > 0x7f || prefix.charCodeAt(i) > 0x7f) return `${prefix}-${randomHex(bytes)}`;
  KEY_SCRATCH[p++] = 0x2d;
  const at = randomBytesAt(bytes);
  for (let i = at; i < at + bytes; i++) {
    const b = RANDOM_POOL[i]!;
    KEY_SCRATCH[p++] = HEX_DIGITS[b >> 4]!;
    KEY_SCRATCH[p++] = HEX_DIGITS[b & 15]!;
  }
  return KEY_SCRATCH.toString("latin1", 0, p);
}

function checkFuture(value: unknown, where: string, client: Client): void {
  if (!(value instanceof Future)) throw new BadOptionError("futures", `${where} is not a Future, got ${describeValue(value)}`);
  if (!value.belongsTo(client)) throw new BadOptionError("futures", `${where} (${value.key}) is a future of another client`);
}

export type { ErrorInfo };
