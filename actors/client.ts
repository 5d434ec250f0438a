import { randomFillSync } from "node:crypto";
import { BadOptionError, ClosedError, NatschedError, ProtocolError, SchedulerRestartedError, TimeoutError } from "../machines/errors.js";
import { tokenize } from "../machines/graph/index.js";
import { reservedKeyProblem } from "../machines/graph/reserved-keys.js";
import {
  PROTOCOL_VERSION,
  type ClientHeartbeatOp,
  type ClientToScheduler,
  type Envelope,
  type ErrorInfo,
  type SchedulerToClient,
  type TaskSpec,
} from "../machines/protocol.js";
import type { SchedulerReply } from "../machines/scheduler/inputs.js";
import { microtask } from "../transport/microtask.js";
import { subjects, type Subjects } from "../transport/subjects.js";
import type { Msg, Payload, Subscription, Transport } from "../transport/types.js";
import { encodeArgs } from "./args.js";
import { fetchData, HolderRefusedError, type FetchedData } from "./data-plane/fetch.js";
import { graphToSpecs, type Graph } from "./graph-spec.js";
import { isAnnouncement, refuseRequest } from "./publish-only.js";
import { scatterByContent, scatterExplicit, type ScatterHost } from "./scatter.js";
import { checkSubmitOptions, specOptions, type SubmitOptions } from "./submit-options.js";
import { clientReportProblem, envelopeProblem } from "./validate-ops.js";
import { errorFromInfo, taskError } from "./wire-errors.js";
import { RESUMING_EVERY_MS, RESUMING_MISSED, resumingSubject, type ResumingAnnouncement } from "./resuming.js";

export type { SubmitOptions };

type KeyStatus = "pending" | "finished" | "error" | "cancelled";

interface KeyState {
  status: KeyStatus;
  /** Futures alive for this key in this client. */
  refs: number;
  holders: string[];
  error: Error | null;
  /** Who waits for this key's outcome; null while nobody does (most keys: a gather waits on many with one waiter). */
  waiters: Waiter[] | null;
}

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
}

const NO_WAITERS: readonly Waiter[] = [];

/** The key's waiters, handed over: the key has none left. */
function takeWaiters(st: KeyState): readonly Waiter[] {
  const waiters = st.waiters;
  if (waiters === null) return NO_WAITERS;
  st.waiters = null;
  return waiters;
}

function addWaiter(st: KeyState, waiter: Waiter): void {
  if (st.waiters === null) st.waiters = [waiter];
  else st.waiters.push(waiter);
}

function removeWaiter(st: KeyState, waiter: Waiter): void {
  const at = st.waiters === null ? -1 : st.waiters.indexOf(waiter);
  if (at >= 0) st.waiters!.splice(at, 1);
}

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
}

const DEFAULT_HEARTBEAT_INTERVAL = 0.5;

/**
 * Submits work to a cluster and collects results, Dask's Client in TypeScript. The same
 * client works on every transport: in-process (LocalCluster) and NATS.
 */
export class Client {
  readonly id: string;
  private readonly subjects: Subjects;
  private readonly keys = new Map<string, KeyState>();
  private readonly registry = new FinalizationRegistry<string>((key) => this.unretain(key, null));
  private pending: { op: ClientToScheduler; resolve: (r: SchedulerReply) => void; reject: (e: Error) => void }[] = [];
  private flushScheduled = false;
  private toRelease = new Set<string>();
  private subscription: Subscription | null = null;
  private announcements: Subscription | null = null;
  private resumingAnnouncements: Subscription | null = null;
  /** When a resuming scheduler last said so (Date.now(); 0: none lately), and how often it says it. */
  private resumingHeard = 0;
  private resumingEvery = RESUMING_EVERY_MS;
  /** When this client started listening for them, and when it last heard one (Date.now()). */
  private listeningSince = 0;
  private lastResuming = 0;
  /** Requests pausing between tries: woken when a resumed scheduler serves. */
  private readonly pauses = new Set<() => void>();
  private stopWatchingReconnects: (() => void) | null = null;
  /**
   * The scheduler's run as this client last heard it (client-keys answers carry it): a
   * client back from a lost connection compares, to find out about a new run whose
   * announcements it missed.
   */
  private knownRun: number | undefined = undefined;
  /**
   * The specs of the tasks this client submitted, each kept while a future of this client
   * holds its key or a kept spec depends on it: what it resubmits when the scheduler starts
   * a new run without its state (see `reconcile`).
   */
  private readonly specs = new Map<string, TaskSpec>();
  /** How many kept specs depend on a key (only keys some kept spec depends on are here). */
  private readonly specDependents = new Map<string, number>();
  /** The keys of each submission (update-graph, update-data) the scheduler has not answered yet. */
  private readonly inFlight = new Set<readonly string[]>();
  private reconciling = false;
  private reconcileAgain: false | "always" | "if-new-run" = false;
  private closedFlag = false;
  private heartbeat: ReturnType<typeof setInterval> | null = null;

  /**
   * A client of a cluster on NATS (scheduler and workers as processes): the same API as
   * `LocalCluster.client()`. Loaded lazily so the embedded runtime does not pull in NATS.
   */
  static async connect(opts: import("./process/connect-client.js").ConnectClientOptions): Promise<Client> {
    const { connectClient } = await import("./process/connect-client.js");
    return connectClient(opts);
  }

  constructor(private readonly opts: ClientOptions) {
    // The id is a token of the client's subjects (natsched.<cluster>.client.<id>, .scheduler.client.<id>).
    if (opts.id !== undefined && (typeof opts.id !== "string" || !/^[A-Za-z0-9_-]+$/.test(opts.id))) {
      throw new BadOptionError("id", `client ids use letters, digits, '-' and '_', got ${JSON.stringify(opts.id)}`);
    }
    this.id = opts.id ?? `client-${randomHex(8)}`;
    const every = opts.heartbeatInterval;
    if (every !== undefined && !(typeof every === "number" && every > 0)) throw new BadOptionError("heartbeatInterval", `must be a number of seconds > 0, got ${String(every)}`);
    const resumeWait = opts.resumeWait;
    if (resumeWait !== undefined && !(typeof resumeWait === "number" && resumeWait >= 0)) throw new BadOptionError("resumeWait", `must be a number of milliseconds >= 0, got ${String(resumeWait)}`);
    this.subjects = subjects(opts.cluster);
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Subscribe to the scheduler's reports and announce this client (does not wait). */
  attach(): this {
    if (this.subscription !== null) return this;
    this.subscription = this.opts.transport.subscribe(this.subjects.client(this.id), (msg) => this.receive(msg));
    // A scheduler that starts a new run (restarted without a log to resume from) knows nothing of this client.
    this.announcements = this.opts.transport.subscribe(this.subjects.announce, (msg) => {
      if (refuseRequest(this.opts.transport, msg, "announcements of a scheduler's new run")) return;
      if (isAnnouncement(msg.data, "scheduler-started")) this.scheduleReconcile();
    });
    this.resumingAnnouncements = this.opts.transport.subscribe(resumingSubject(this.opts.cluster), (msg) => {
      if (refuseRequest(this.opts.transport, msg, "announcements of a resuming scheduler")) return;
      this.heardResuming(msg.data);
    });
    this.listeningSince = Date.now();
    // It announces the new run three times in 5 s; a client whose connection was down all
    // that time asks when it is back, and reconciles if the run is not the one it knew.
    this.stopWatchingReconnects = this.opts.transport.onReconnect?.(() => this.scheduleReconcile(true)) ?? null;
    void this.call({ op: "client-join", client: this.id })
      .then(() => this.learnRun())
      .catch(() => undefined);
    this.startHeartbeat();
    return this;
  }

  /** Tell the scheduler this client is still here, so it keeps the futures (Dask's heartbeat-client). */
  private startHeartbeat(): void {
    const every = (this.opts.heartbeatInterval ?? DEFAULT_HEARTBEAT_INTERVAL) * 1000;
    if (!Number.isFinite(every)) return;
    const envelope: Envelope<ClientToScheduler | ClientHeartbeatOp> = { v: PROTOCOL_VERSION, from: this.id, ops: [{ op: "heartbeat-client", client: this.id }] };
    this.heartbeat = setInterval(() => {
      if (this.closedFlag || this.opts.transport.closed) return this.stopHeartbeat();
      try {
        this.opts.transport.publish(this.subjects.clientOps(this.id), envelope);
      } catch {
        this.stopHeartbeat();
      }
    }, every);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat !== null) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /** `attach`, then wait until the scheduler has answered. */
  async connect(): Promise<this> {
    this.attach();
    await this.call({ op: "client-join", client: this.id });
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
    this.sendGraph([spec], [key]);
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
    if (explicitKeys === undefined && rest.pure === false) this.sendGraph(specs, specs.map((s) => s.key));
    else {
      const unique = new Map(specs.map((s) => [s.key, s]));
      this.sendGraph([...unique.values()], [...unique.keys()]);
    }
    return futures;
  }

  /**
   * A graph of named tasks, Dask style: `{ "x": ["inc", 1], "y": ["add", "x", 10] }`. A
   * string argument naming another key of the graph is a dependency; a value that is not
   * `[functionName, ...args]` is literal data. Returns futures for every key (or `keys`).
   */
  persist(graph: Graph, opts: { keys?: string[]; priority?: number } = {}): Record<string, Future> {
    this.assertOpen();
    if (typeof opts !== "object" || opts === null) throw new BadOptionError("options", "must be an object");
    if (opts.priority !== undefined && !Number.isFinite(opts.priority)) throw new BadOptionError("priority", "must be a finite number");
    const specs = graphToSpecs(graph, (v) => this.refOf(v), opts.priority);
    if (opts.keys !== undefined && (!Array.isArray(opts.keys) || opts.keys.some((k) => typeof k !== "string"))) {
      throw new BadOptionError("keys", `must be an array of keys of the graph, got ${describeValue(opts.keys)}`);
    }
    const outputs = opts.keys ?? specs.map((s) => s.key);
    for (const key of outputs) if (!Object.prototype.hasOwnProperty.call(graph, key)) throw new BadOptionError("keys", `${key} is not a key of the graph`);
    const futures: Record<string, Future> = {};
    for (const key of outputs) futures[key] = new Future(key, this);
    this.sendGraph(specs, outputs);
    return futures;
  }

  /** `persist`, then gather: resolves with `{ key: result }` and releases the futures. */
  async compute(graph: Graph, opts: { keys?: string[]; priority?: number; timeout?: number } = {}): Promise<Record<string, unknown>> {
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
    this.inFlight.add(keys);
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
      this.inFlight.delete(keys);
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
      updateData: (data) => this.call({ op: "update-data", client: this.id, data }),
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

  /** The cluster's workers as the scheduler sees them. */
  async workers(): Promise<WorkerSummary[]> {
    const reply = (await this.opts.transport.request(this.subjects.query, { op: "workers" }, { timeout: this.requestTimeout })) as { workers: WorkerSummary[] };
    return reply.workers;
  }

  private async fetch(keys: string[], timeout?: number): Promise<Map<string, unknown>> {
    const unique = [...new Set(keys)];
    const deadline = timeout === undefined ? undefined : Date.now() + timeout;
    const out = new Map<string, unknown>();
    // Per key, the holders that refused to send it (HolderRefusedError), and why.
    const refusals = new Map<string, { by: Set<string>; error: Error }>();
    let remaining = unique;
    for (let attempt = 0; remaining.length > 0; attempt++) {
      await this.waitForAll(remaining, deadline === undefined ? undefined : deadline - Date.now());
      const byHolder = new Map<string, string[]>();
      // A key whose holders were dropped meanwhile (a new run of the scheduler) waits again.
      const holderless: string[] = [];
      for (const key of remaining) {
        const st = this.keys.get(key);
        if (st === undefined || st.holders.length === 0) {
          holderless.push(key);
          continue;
        }
        const holder = st.holders[attempt % st.holders.length]!;
        let list = byHolder.get(holder);
        if (list === undefined) byHolder.set(holder, (list = []));
        list.push(key);
      }
      const failed: { key: string; holder: string }[] = [];
      await Promise.all(
        [...byHolder].map(async ([holder, hk]) => {
          let reply: FetchedData;
          try {
            reply = await fetchData(this.opts.transport, this.subjects.workerData(holder), hk, this.id, this.requestTimeout);
          } catch (error) {
            for (const key of hk) {
              failed.push({ key, holder });
              if (!(error instanceof HolderRefusedError)) continue;
              const refused = refusals.get(key) ?? { by: new Set<string>(), error };
              refused.by.add(holder);
              refusals.set(key, refused);
            }
            return;
          }
          const { values, nbytes } = reply;
          for (let i = 0; i < hk.length; i++) {
            if (nbytes[i]! >= 0) out.set(hk[i]!, values[i]);
            else failed.push({ key: hk[i]!, holder });
          }
        }),
      );
      remaining = [...holderless, ...(await this.dropFailedHolders(failed))];
      if (remaining.length === 0) break;
      // Every holder the scheduler names refused to send it: asking again would get the same.
      for (const key of remaining) {
        const refused = refusals.get(key);
        const holders = this.keys.get(key)?.holders ?? [];
        if (refused !== undefined && holders.length > 0 && holders.every((h) => refused.by.has(h))) throw refused.error;
      }
      // Holders that keep failing to deliver must not outlast the caller's timeout.
      const backoff = Math.min(50 * 2 ** attempt, 1000);
      if (deadline !== undefined && Date.now() + backoff >= deadline) {
        throw new TimeoutError(`result${remaining.length === 1 ? ` of ${remaining[0]}` : `s of ${remaining.length} keys`} after ${timeout} ms (the workers said to hold ${remaining.length === 1 ? "it" : "them"} did not deliver)`);
      }
      await new Promise((resolve) => setTimeout(resolve, backoff));
    }
    return out;
  }

  /**
   * Forget holders that did not deliver (by name: a report may have replaced the list
   * meanwhile). A key left without holders asks the scheduler who has it now; if nobody
   * does, it waits for the scheduler's next report (the data is being recomputed).
   */
  private async dropFailedHolders(failed: { key: string; holder: string }[]): Promise<string[]> {
    const keys = new Set<string>();
    for (const { key, holder } of failed) {
      const st = this.keys.get(key);
      if (st === undefined) continue;
      st.holders = st.holders.filter((h) => h !== holder);
      keys.add(key);
    }
    const orphans = [...keys].filter((key) => {
      const st = this.keys.get(key)!;
      return st.status === "finished" && st.holders.length === 0;
    });
    if (orphans.length === 0) return [...keys];
    let whoHas: Record<string, string[]> = {};
    try {
      whoHas = ((await this.opts.transport.request(this.subjects.query, { op: "who-has", keys: orphans }, { timeout: this.requestTimeout })) as { whoHas?: Record<string, string[]> }).whoHas ?? {};
    } catch {
      // No answer: wait for the scheduler's next report instead.
    }
    let lost = false;
    for (const key of orphans) {
      const st = this.keys.get(key);
      if (st === undefined || st.holders.length > 0) continue;
      st.holders = whoHas[key] ?? [];
      if (st.holders.length === 0) {
        st.status = "pending";
        lost = true;
      }
    }
    // Usually being recomputed; but a scheduler that started a new run may not know the key at all.
    if (lost) this.scheduleReconcile();
    return [...keys];
  }

  /** Resolve when `key` is finished; reject if it erred or was cancelled. */
  waitFor(key: string, timeout?: number): Promise<void> {
    const st = this.keys.get(key);
    if (st === undefined) return Promise.reject(new NatschedError("CANCELLED", `no future for ${key} in this client`));
    if (st.status === "finished" && st.holders.length > 0) return Promise.resolve();
    if (st.status === "error" || st.status === "cancelled") return Promise.reject(st.error!);
    return new Promise<void>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiter = {
        resolve: () => {
          if (timer) clearTimeout(timer);
          resolve();
        },
        reject: (e: Error) => {
          if (timer) clearTimeout(timer);
          reject(e);
        },
      };
      addWaiter(st, waiter);
      if (timeout !== undefined) {
        timer = setTimeout(() => {
          removeWaiter(st, waiter);
          reject(new TimeoutError(`result of ${key} after ${timeout} ms`));
        }, Math.max(0, timeout));
      }
    });
  }

  /**
   * `waitFor` over many keys with one promise and one waiter shared by all of them: it
   * settles like Promise.all of the per-key waits (the first failure rejects it).
   */
  private waitForAll(keys: readonly string[], timeout?: number): Promise<void> {
    if (keys.length === 1) return this.waitFor(keys[0]!, timeout);
    const waiting: KeyState[] = [];
    for (const key of keys) {
      const st = this.keys.get(key);
      if (st === undefined) return Promise.reject(new NatschedError("CANCELLED", `no future for ${key} in this client`));
      if (st.status === "error" || st.status === "cancelled") return Promise.reject(st.error!);
      if (!(st.status === "finished" && st.holders.length > 0)) waiting.push(st);
    }
    if (waiting.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let left = waiting.length;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settle = (): void => {
        if (timer) clearTimeout(timer);
        left = -1;
      };
      const waiter = {
        resolve: () => {
          if (left > 0 && --left === 0) {
            settle();
            resolve();
          }
        },
        reject: (e: Error) => {
          if (left <= 0) return;
          settle();
          reject(e);
        },
      };
      for (const st of waiting) addWaiter(st, waiter);
      if (timeout !== undefined) {
        timer = setTimeout(() => {
          if (left <= 0) return;
          left = -1;
          for (const st of waiting) removeWaiter(st, waiter);
          reject(new TimeoutError(`results of ${waiting.length} keys after ${timeout} ms`));
        }, Math.max(0, timeout));
      }
    });
  }

  keyStatus(key: string): KeyStatus {
    return this.keys.get(key)?.status ?? "cancelled";
  }

  // ---- reference counting --------------------------------------------------------------

  /** @internal */
  retain(key: string, future: Future): void {
    let st = this.keys.get(key);
    if (st === undefined) this.keys.set(key, (st = { status: "pending", refs: 0, holders: [], error: null, waiters: null }));
    st.refs += 1;
    if (this.toRelease.size > 0) this.toRelease.delete(key);
    this.registry.register(future, key, future);
  }

  /** @internal */
  unretain(key: string, future: Future | null): void {
    if (future !== null) this.registry.unregister(future);
    const st = this.keys.get(key);
    if (st === undefined) return;
    st.refs -= 1;
    if (st.refs > 0) return;
    this.keys.delete(key);
    this.forgetSpec(key);
    for (const w of takeWaiters(st)) w.reject(new NatschedError("CANCELLED", `future for ${key} was released`));
    if (this.closedFlag) return;
    this.toRelease.add(key);
    this.scheduleFlush();
  }

  // ---- scheduler plumbing --------------------------------------------------------------

  private sendGraph(tasks: TaskSpec[], wants: string[]): void {
    this.keepSpecs(tasks);
    this.inFlight.add(wants);
    const op: ClientToScheduler = { op: "update-graph", client: this.id, tasks, wants };
    void this.call(op)
      .then(
        (reply) => {
          if (!reply.ok) this.failKeys(wants, errorFromInfo(reply.error));
        },
        (error: Error) => this.failKeys(wants, error),
      )
      .finally(() => this.inFlight.delete(wants));
  }

  /** Keep the specs of a submission (see `specs`); one no future and no kept spec needs is dropped at once. */
  private keepSpecs(tasks: readonly TaskSpec[]): void {
    const added: TaskSpec[] = [];
    for (const spec of tasks) {
      if (this.specs.has(spec.key)) continue;
      this.specs.set(spec.key, spec);
      added.push(spec);
    }
    for (const spec of added) {
      if (spec.deps.length === 0) continue;
      for (const dep of spec.deps.length === 1 ? spec.deps : new Set(spec.deps)) {
        if (this.specs.has(dep)) this.specDependents.set(dep, (this.specDependents.get(dep) ?? 0) + 1);
      }
    }
    for (const spec of added) this.forgetSpec(spec.key);
  }

  /** Drop `key`'s spec if no future holds it and no kept spec needs it, and so on down its dependencies. */
  private forgetSpec(key: string): void {
    // The usual call (a submission's key, which its future holds) ends here, without a stack.
    if (this.keys.has(key)) return;
    const stack = [key];
    while (stack.length > 0) {
      const k = stack.pop()!;
      if (this.keys.has(k) || this.specDependents.has(k)) continue;
      const kept = this.specs.get(k);
      if (kept === undefined) continue;
      this.specs.delete(k);
      for (const dep of kept.deps.length < 2 ? kept.deps : new Set(kept.deps)) {
        const n = this.specDependents.get(dep);
        if (n === undefined) continue;
        if (n > 1) this.specDependents.set(dep, n - 1);
        else this.specDependents.delete(dep);
        stack.push(dep);
      }
    }
  }

  /** `ifNewRun`: only if the scheduler's run is another than the one this client knew (a reconnect). */
  private scheduleReconcile(ifNewRun = false): void {
    if (this.closedFlag) return;
    if (this.reconciling) {
      if (!ifNewRun) this.reconcileAgain = "always";
      else if (this.reconcileAgain === false) this.reconcileAgain = "if-new-run";
      return;
    }
    this.reconciling = true;
    void this.reconcile(ifNewRun)
      .catch(() => undefined) // no answer: the scheduler's next announcement asks again
      .finally(() => {
        this.reconciling = false;
        const again = this.reconcileAgain;
        if (again !== false) {
          this.reconcileAgain = false;
          this.scheduleReconcile(again === "if-new-run");
        }
      });
  }

  /** Ask the scheduler which run it is serving (a client-keys question about no keys). */
  private async learnRun(): Promise<void> {
    if (this.knownRun !== undefined || this.closedFlag) return;
    const answer = (await this.opts.transport.request(this.subjects.query, { op: "client-keys", client: this.id, keys: [] }, { timeout: this.requestTimeout })) as { run?: unknown } | null;
    if (this.knownRun === undefined && typeof answer?.run === "number") this.knownRun = answer.run;
  }

  /**
   * A scheduler announced a new run: it restarted without a log to resume from (or the
   * announcement repeats one this client already knows). Ask it which of this client's keys
   * it holds for it; for each one it does not (and whose submission is not on its way):
   * resubmit the task, with whatever of the graph below it the scheduler does not know, so
   * the future completes on the new run; a key that cannot be computed again (data this
   * client scattered, or a task depending on such data) fails with SchedulerRestartedError.
   * Results of the old run are gone with it (the new run has the workers free them), so
   * finished futures are computed again too. Erred and cancelled futures keep their outcome.
   */
  private async reconcile(ifNewRun = false): Promise<void> {
    if (this.keys.size === 0) {
      // Nothing to bring back; learn the run this client now talks to.
      if (ifNewRun) this.knownRun = undefined;
      await this.learnRun();
      return;
    }
    const asked = [...new Set([...this.keys.keys(), ...this.specs.keys()])];
    const answer = (await this.opts.transport.request(this.subjects.query, { op: "client-keys", client: this.id, keys: asked }, { timeout: this.requestTimeout })) as {
      known?: Record<string, string>;
      wanted?: unknown;
      run?: unknown;
      reports?: unknown;
    } | null;
    if (this.closedFlag || typeof answer !== "object" || answer === null || !Array.isArray(answer.wanted)) return;
    const run = typeof answer.run === "number" ? answer.run : undefined;
    const known0 = this.knownRun;
    if (run !== undefined) this.knownRun = run;
    if (ifNewRun && (run === undefined || known0 === undefined || run === known0)) {
      // Back from a lost connection to the run it knew (or to a scheduler that does not say):
      // the scheduler kept this client's futures (or released them after its grace, and says
      // so with key-cancelled). Reports sent while the connection was down are lost: take them
      // again, for the keys still waiting for one.
      if (Array.isArray(answer.reports)) {
        this.applyReports((answer.reports as SchedulerToClient[]).filter((op) => clientReportProblem(op) === undefined && this.keys.get(op.key)?.status === "pending"));
      }
      return;
    }
    const known = new Set(Object.keys(answer.known ?? {}));
    const wanted = new Set(answer.wanted as string[]);
    const submitted = new Set<string>();
    for (const keys of this.inFlight) for (const key of keys) submitted.add(key);
    const lost: string[] = [];
    for (const [key, st] of this.keys) {
      if (wanted.has(key) || submitted.has(key) || st.status === "error" || st.status === "cancelled") continue;
      lost.push(key);
    }
    if (lost.length === 0) return;

    // Which lost keys can be computed again: null, or the scattered key it cannot do without.
    const verdict = new Map<string, string | null>();
    const check = (root: string): string | null => {
      const stack = [root];
      const visiting = new Set<string>();
      while (stack.length > 0) {
        const key = stack[stack.length - 1]!;
        if (verdict.has(key)) {
          stack.pop();
          continue;
        }
        const kept = key === root || !known.has(key) ? this.specs.get(key) : undefined;
        if (kept === undefined) {
          verdict.set(key, known.has(key) ? null : key);
          stack.pop();
          continue;
        }
        visiting.add(key);
        let waiting = false;
        let missing: string | null = null;
        for (const dep of kept.deps) {
          if (known.has(dep)) continue;
          const v = verdict.get(dep);
          if (v === undefined) {
            if (visiting.has(dep)) missing ??= dep; // a cycle (a graph the scheduler refused): cannot be resubmitted
            else {
              stack.push(dep);
              waiting = true;
            }
          } else if (v !== null) missing ??= v;
        }
        if (waiting) continue;
        visiting.delete(key);
        verdict.set(key, missing);
        stack.pop();
      }
      return verdict.get(root)!;
    };

    const again: string[] = [];
    for (const key of lost) {
      const missing = known.has(key) && !this.specs.has(key) ? null : check(key);
      const st = this.keys.get(key)!;
      if (missing === null) {
        again.push(key);
        // Whatever it held lived in the old run: wait for the new run's report.
        if (st.status === "finished") st.status = "pending";
        st.holders = [];
        continue;
      }
      st.status = "error";
      st.error = new SchedulerRestartedError(key, this.opts.cluster, missing);
      for (const w of takeWaiters(st)) w.reject(st.error);
    }
    if (again.length === 0) return;
    // The specs to send: the resubmitted tasks and, below them, every task the scheduler does not know.
    const tasks: TaskSpec[] = [];
    const sent = new Set<string>();
    const resubmitted = new Set(again);
    const stack = [...again];
    while (stack.length > 0) {
      const key = stack.pop()!;
      if (sent.has(key)) continue;
      sent.add(key);
      const kept = this.specs.get(key);
      if (kept === undefined || (known.has(key) && !resubmitted.has(key))) continue;
      tasks.push(kept);
      for (const dep of kept.deps) if (!known.has(dep)) stack.push(dep);
    }
    this.sendGraph(tasks, again);
  }

  private failKeys(keys: string[], error: Error): void {
    for (const key of keys) {
      const st = this.keys.get(key);
      if (st === undefined || st.status !== "pending") continue;
      st.status = "error";
      st.error = error;
      for (const w of takeWaiters(st)) w.reject(error);
    }
  }

  private call(op: ClientToScheduler): Promise<SchedulerReply> {
    return new Promise((resolve, reject) => {
      this.pending.push({ op, resolve, reject });
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    microtask(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.opts.transport.closed) return;
    const batch = this.pending;
    this.pending = [];
    const ops: ClientToScheduler[] = [];
    if (this.toRelease.size > 0) {
      ops.push({ op: "release-keys", client: this.id, keys: [...this.toRelease] });
      this.toRelease.clear();
    }
    for (const p of batch) ops.push(p.op);
    if (ops.length === 0) return;
    const envelope: Envelope<ClientToScheduler> = { v: PROTOCOL_VERSION, from: this.id, ops };
    const offset = ops.length - batch.length;
    this.requestScheduler(envelope).then(
      (data) => {
        const replies = (data as { replies?: SchedulerReply[] }).replies ?? [];
        batch.forEach((p, i) => p.resolve(replies[offset + i] ?? { ok: false, error: { name: "ProtocolError", message: "no reply" } }));
      },
      (error: Error) => batch.forEach((p) => p.reject(error)),
    );
  }

  /**
   * The scheduler's answer to `envelope`. While no scheduler serves (one restarting: the
   * request gets "no responders", so it was delivered to nobody and is safe to send again),
   * it is sent again with backoff, until `requestTimeout` from the first try, or longer while
   * a resuming scheduler keeps saying so (`waitUntil`); then it fails with TimeoutError. Any
   * other failure is the caller's.
   */
  private async requestScheduler(envelope: Envelope<ClientToScheduler>): Promise<Payload> {
    const transport = this.opts.transport;
    const first = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        // The last try near the deadline still gets a moment to be answered.
        return await transport.request(this.subjects.clientOps(this.id), envelope, { timeout: Math.max(250, this.waitUntil(first) - Date.now()) });
      } catch (error) {
        // A closing client's last word (client-leave) is not worth waiting for.
        if (this.closedFlag || !(error instanceof ProtocolError && /no responders/.test(error.message))) throw error;
        const left = this.waitUntil(first) - Date.now();
        if (left <= 0) {
          const waited = this.lastResuming >= first ? `${Date.now() - first} ms (it said it was resuming until ${new Date(this.lastResuming).toISOString()})` : `${this.requestTimeout} ms`;
          throw new TimeoutError(`no scheduler of cluster ${JSON.stringify(this.opts.cluster)} answered within ${waited} (no responders on ${this.subjects.clientOps(this.id)})`);
        }
        await this.pause(Math.min(50 * 2 ** attempt, 1000, left));
        if (this.closedFlag || transport.closed) throw new ClosedError("client");
      }
    }
  }

  /**
   * Until when a request first tried at `first` waits: `requestTimeout` after it, or, while a
   * resuming scheduler keeps announcing itself, RESUMING_MISSED announcements after the last
   * one heard, up to `resumeWait` after it.
   */
  private waitUntil(first: number): number {
    const base = first + this.requestTimeout;
    // A client that has not listened for a whole interval yet gives a resuming scheduler the chance to say so.
    const until = this.resumingHeard === 0 ? this.listeningSince + this.resumingEvery + 100 : this.resumingHeard + RESUMING_MISSED * this.resumingEvery;
    return Math.max(base, Math.min(first + (this.opts.resumeWait ?? 300_000), until));
  }

  private heardResuming(data: unknown): void {
    const said = data as Partial<ResumingAnnouncement> | null;
    if (typeof said !== "object" || said === null) return;
    if (said.op === "scheduler-resuming") {
      this.resumingHeard = this.lastResuming = Date.now();
      const every = (said as { every?: unknown }).every;
      if (typeof every === "number" && every > 0 && every <= 60_000) this.resumingEvery = every;
    } else if (said.op === "scheduler-resumed") {
      this.resumingHeard = 0;
      for (const wake of [...this.pauses]) wake();
    }
  }

  /** Waits `ms`, or less if a resumed scheduler says it serves. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.pauses.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.pauses.add(wake);
    });
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
    this.applyReports(reports);
    if (msg.reply !== undefined) this.opts.transport.publish(msg.reply, { replies });
  }

  private applyReports(ops: readonly SchedulerToClient[]): void {
    for (const op of ops) {
      const st = this.keys.get(op.key);
      if (st === undefined) continue;
      if (op.op === "key-in-memory") {
        st.status = "finished";
        st.holders = op.workers;
        st.error = null;
        for (const w of takeWaiters(st)) w.resolve();
      } else {
        st.status = op.op === "key-erred" ? "error" : "cancelled";
        st.error = op.op === "key-erred" ? taskError(op.key, op.failedKey, op.error) : new NatschedError("CANCELLED", `task ${op.key} was cancelled: ${op.reason}`);
        for (const w of takeWaiters(st)) w.reject(st.error);
      }
    }
  }

  private refOf(value: unknown): string | undefined {
    if (value instanceof Future) {
      if (!this.keys.has(value.key)) throw new BadOptionError("args", `future ${value.key} was released`);
      return value.key;
    }
    return undefined;
  }

  private get requestTimeout(): number {
    return this.opts.requestTimeout ?? 30_000;
  }

  private assertOpen(): void {
    if (this.closedFlag || this.opts.transport.closed) throw new ClosedError("client");
  }

  /** Release every future and leave; pending results reject with ClosedError. */
  async close(): Promise<void> {
    if (this.closedFlag) return;
    const leave = this.opts.transport.closed ? Promise.resolve() : this.call({ op: "client-leave", client: this.id }).catch(() => undefined);
    this.closedFlag = true;
    this.stopHeartbeat();
    const error = new ClosedError("client");
    for (const st of this.keys.values()) for (const w of takeWaiters(st)) w.reject(error);
    this.keys.clear();
    await leave;
    this.subscription?.unsubscribe();
    this.announcements?.unsubscribe();
    this.resumingAnnouncements?.unsubscribe();
    this.stopWatchingReconnects?.();
    this.specs.clear();
    this.specDependents.clear();
    this.inFlight.clear();
    this.opts.onClosed?.();
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

/** What `value` is, for a message: `number 5`, `an array`, `null`, `a Map`. */
function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return `an object (${(value as object).constructor?.name ?? "no prototype"})`;
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value} ${String(value)}`;
}

function checkFuture(value: unknown, where: string, client: Client): void {
  if (!(value instanceof Future)) throw new BadOptionError("futures", `${where} is not a Future, got ${describeValue(value)}`);
  if (!value.belongsTo(client)) throw new BadOptionError("futures", `${where} (${value.key}) is a future of another client`);
}

/** A `timeout` option: milliseconds, a finite number >= 0, or absent. */
function checkTimeout(opts: { timeout?: number } | undefined): number | undefined {
  if (opts === undefined) return undefined;
  if (typeof opts !== "object" || opts === null) throw new BadOptionError("options", "must be an object");
  const timeout = opts.timeout;
  if (timeout === undefined) return undefined;
  if (typeof timeout !== "number" || !(timeout >= 0) || !Number.isFinite(timeout)) {
    throw new BadOptionError("timeout", `milliseconds, a finite number >= 0, got ${describeValue(timeout)}`);
  }
  return timeout;
}

/** Explicit keys of `map` or `scatter`: one non-empty string per item, no two the same. */
function checkKeys(keys: unknown, items: number, call: string): void {
  if (!Array.isArray(keys)) throw new BadOptionError("keys", `${call}: must be an array of keys, one per item, got ${describeValue(keys)}`);
  if (keys.length !== items) throw new BadOptionError("keys", `${call}: ${keys.length} key(s) for ${items} item(s): give one key per item`);
  const seen = new Set<string>();
  keys.forEach((key, i) => {
    if (typeof key !== "string" || key.length === 0) throw new BadOptionError("keys", `${call}: keys[${i}] must be a non-empty string, got ${describeValue(key)}`);
    if (seen.has(key)) throw new BadOptionError("keys", `${call}: key ${JSON.stringify(key)} is given twice`);
    const reserved = reservedKeyProblem(key);
    if (reserved !== undefined) throw new BadOptionError("keys", `${call}: ${reserved}`);
    seen.add(key);
  });
}

function typeName(value: unknown): string {
  if (Array.isArray(value)) return "array";
  if (value === null) return "null";
  if (typeof value === "object") return (value as object).constructor?.name?.toLowerCase() || "object";
  return typeof value;
}

export type { ErrorInfo };
