import { KeyExistsError, ProtocolError, UnknownFunctionError } from "../machines/errors.js";
import {
  EXECUTOR_LOST,
  PROTOCOL_VERSION,
  type Envelope,
  type ErrorInfo,
  type RegisterWorkerOp,
  type SchedulerToWorker,
  type WorkerHeartbeatOp,
  type WorkerToScheduler,
} from "../machines/protocol.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInit, WorkerInput } from "../machines/worker/inputs.js";
import type { SchedulerReply } from "../machines/scheduler/inputs.js";
import type { LogSink } from "../log/types.js";
import { microtask } from "../transport/microtask.js";
import { subjects, type Subjects } from "../transport/subjects.js";
import type { Msg, Subscription, Transport } from "../transport/types.js";
import { decodeArgs } from "./args.js";
import { fetchData, type FetchedData } from "./data-plane/fetch.js";
import { DataServer, PutDataRefused } from "./data-plane/server.js";
import type { Clock } from "./host/clock.js";
import { withBuiltins, type TaskFunctions } from "./functions.js";
import { ThreadPool } from "./executor/thread-pool.js";
import { ExecutionStopped } from "./executor/execution-stopped.js";
import { ExecutorLost } from "./executor/executor-lost.js";
import { Outbox } from "./outbox.js";
import { ActorRecorder } from "./host/recorder.js";
import { stampCause } from "./host/causes.js";
import { sizeof } from "./sizeof.js";
import { envelopeProblem, workerOpProblem } from "./validate-ops.js";
import { withTime } from "./host/with-time.js";
import { boundStack } from "../machines/error-stack.js";
import { HostSampler } from "./host/host-sampler.js";
import { ReportHold } from "./host/report-hold.js";
import { realTimers } from "./host/host-timers.js";

export interface WorkerActorOptions {
  cluster: string;
  transport: Transport;
  name: string;
  /** This incarnation's id; defaults to a random one. */
  id?: string;
  nthreads: number;
  host?: string;
  resources?: Record<string, number>;
  functions: TaskFunctions;
  /**
   * The functions that run on this worker's executor threads (its `nthreads` of them), by
   * name -> the URL of the module that exports them; the others run on its event loop.
   */
  threadFunctions?: ReadonlyMap<string, string>;
  clock: Clock;
  log: LogSink | null;
  /**
   * The recorder of an earlier incarnation of this worker name, so that the actor's log
   * continues its sequence (one actor name, one gap-free sequence) instead of restarting at 0.
   */
  recorder?: ActorRecorder;
  transferIncomingCountLimit: number;
  heartbeatInterval: number;
  /** Transfer bandwidth assumed until one is measured (bytes/s); default config.bandwidth's 100e6. */
  bandwidth?: number;
  /** Milliseconds to wait for a peer's data. */
  transferTimeout?: number;
  /**
   * Seconds scattered data may stay unconfirmed before the worker asks the scheduler who has
   * it (config.scatterLease, default 60); Infinity: never.
   */
  scatterLease?: number;
  /** Bytes of heap each executor thread may use (config.executorThreadMemory); default Node's own limit. */
  executorThreadMemory?: number;
  /**
   * Seconds a report of a finished task may be held to go with later ones, on a wire only
   * (config.reportHold; actors/host/report-hold.ts). Default 0: every report goes at once.
   */
  reportHold?: number;
  onError?: (error: unknown) => void;
}

type WorkerOp = Omit<WorkerInput, "t">;

const OK: SchedulerReply = { ok: true };

/**
 * Hosts a worker core: runs the task functions it asks for, keeps results in its data
 * store, serves them to peers and clients on `natsched.<cluster>.data.<name>`, fetches
 * dependencies from peers, and talks to the scheduler in batched envelopes.
 */
export class WorkerActor {
  readonly core: WorkerCore;
  readonly recorder: ActorRecorder;
  readonly store = new Map<string, unknown>();
  /**
   * Running totals since the worker started: tasks it computed and that failed here; data it
   * received (fetched from peers, and scattered to it) and served (to peers and clients), in
   * bytes as measured (the sizes the scheduler is told, not the wire's).
   */
  readonly totals: WorkerTotals = { tasksCompleted: 0, tasksErred: 0, bytesFetched: 0, bytesScattered: 0, bytesServed: 0, keysServed: 0 };
  readonly id: string;
  /** When this incarnation started (register-worker's `started`: the scheduler keeps the later of two incarnations). */
  started = 0;
  private readonly subjects: Subjects;
  private readonly outbox: Outbox<WorkerToScheduler | WorkerHeartbeatOp>;
  /** Reports held to go together (config reportHold), on a wire; null: each goes at once. */
  private readonly reports: ReportHold | null;
  private readonly functions: TaskFunctions;
  private readonly subscriptions: Subscription[] = [];
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  /** Memory and event-loop delay for the heartbeats: started with them, stopped at close. */
  private sampler: HostSampler | null = null;
  /** The bandwidth estimate last reported in worker-metrics. */
  private reportedBandwidth = -1;
  private dataServer: DataServer | null = null;
  /** Scattered keys waiting for their lease check -> the put-data that stored them (its number). */
  private readonly leased = new Map<string, number>();
  private puts = 0;
  /** Each put-data's lease: its keys still unconfirmed, and the timer of their check. */
  private readonly leases = new Map<number, { keys: Set<string>; timer: ReturnType<typeof setTimeout> }>();
  /** The executor threads, if any function runs on them. */
  readonly pool: ThreadPool | null;
  private readonly threadFunctions: ReadonlyMap<string, string>;
  private closed = false;
  private readonly onClosed: (() => void)[] = [];

  constructor(private readonly opts: WorkerActorOptions) {
    this.id = opts.id ?? `${opts.name}-${Math.random().toString(16).slice(2, 10)}`;
    this.subjects = subjects(opts.cluster);
    this.functions = withBuiltins(opts.functions);
    this.threadFunctions = opts.threadFunctions ?? new Map();
    const modules = [...new Set(this.threadFunctions.values())];
    const memory = opts.executorThreadMemory;
    const resourceLimits = memory !== undefined && Number.isFinite(memory) ? { maxOldGenerationSizeMb: Math.max(1, Math.floor(memory / 2 ** 20)) } : undefined;
    this.pool = this.threadFunctions.size > 0 ? new ThreadPool({ size: opts.nthreads, modules, ...(resourceLimits !== undefined ? { resourceLimits } : {}) }) : null;
    this.recorder = opts.recorder ?? new ActorRecorder(`worker.${opts.name}`, opts.log);
    // Across a wire, what the worker says in one event-loop iteration (the results of the
    // tasks it ran then) goes as one message: fewer messages and wake-ups per task.
    this.outbox = new Outbox(opts.transport, `worker.${opts.name}`, { turn: opts.transport.wire !== undefined ? "immediate" : "microtask" });
    const { recorder, outbox, store } = this;
    // This worker's own subject to the scheduler: ops naming another worker are refused there.
    const schedulerSubject = this.subjects.workerOps(opts.name);
    const hold = opts.reportHold ?? 0;
    // In process a message costs a function call: nothing to save by holding it.
    this.reports = hold > 0 && opts.transport.wire !== undefined ? new ReportHold(hold, realTimers(opts.clock), (op) => outbox.send(schedulerSubject, op)) : null;
    // The core's init is also the start record's (log/start-init.ts): what replay rebuilds it from.
    const init: WorkerInit = { name: opts.name, id: this.id, nthreads: opts.nthreads, transferIncomingCountLimit: opts.transferIncomingCountLimit };
    if (opts.bandwidth !== undefined) init.bandwidth = opts.bandwidth;
    init.fetchByHolder = true;
    // In process, tasks on this thread: the scheduler runs here too, and a round trip is this
    // thread's own work (adaptive saturation then gives Dask's count: docs/scheduling.md).
    if (opts.transport.wire === undefined && this.pool === null) init.roundTrips = false;
    this.core = new WorkerCore(init, {
      toScheduler: (op) => {
        const stamped = stampCause(op, recorder);
        if (this.reports === null) outbox.send(schedulerSubject, stamped);
        else this.reports.offer(stamped, this.core);
      },
      execute: (key, func, args) => microtask(() => this.execute(key, func, args)),
      gather: (from, keys) => void this.gather(from, keys),
      freeData: (key) => store.delete(key),
      transition: (machine, id, event, from, to, why) => {
        if (machine === "wtask") {
          if (event === "DONE" && to === "memory") this.totals.tasksCompleted++;
          else if (event === "FAIL" && to === "error") this.totals.tasksErred++;
          // Confirmed or gone: nothing left to check with the scheduler for that key.
          if (this.leased.size > 0 && (event === "CONFIRM" || to !== "memory")) this.unlease(id);
          // Freed while it ran: once this input is handled (a compute-task in the same envelope
          // may resume it), an execution on a thread nothing wants any more is stopped.
          if (event === "FREE" && to === "cancelled" && this.pool !== null) microtask(() => this.stopUnwanted(id));
        }
        recorder.transition(machine, id, event, from, to, why);
      },
    });
  }

  get name(): string {
    return this.opts.name;
  }

  /** Subscribe, register with the scheduler, start heartbeats. */
  async start(): Promise<void> {
    const { transport } = this.opts;
    this.started = this.opts.clock.now();
    this.recorder.startWorker(this.started, this.core.init);
    this.subscriptions.push(transport.subscribe(this.subjects.worker(this.name), (msg) => this.receive(msg)));
    this.subscriptions.push(transport.subscribe(this.subjects.workerData(this.name), (msg) => this.serveData(msg)));
    const envelope: Envelope<WorkerToScheduler> = {
      v: PROTOCOL_VERSION,
      from: `worker.${this.name}`,
      ops: [
        {
          op: "register-worker",
          name: this.name,
          id: this.id,
          nthreads: this.opts.nthreads,
          host: this.opts.host ?? "localhost",
          resources: this.opts.resources ?? {},
          functions: Object.keys(this.functions),
          holding: this.core.holding(),
          started: this.started,
          ...this.registrationFlags(),
        },
      ],
    };
    const reply = (await transport.request(this.subjects.workerOps(this.name), envelope, { timeout: 10_000 })) as {
      replies: { ok: boolean; run?: unknown; error?: ErrorInfo }[];
    };
    const answer = reply.replies[0];
    if (!answer?.ok) throw new Error(`worker ${this.name}: registration refused: ${answer?.error?.message ?? "no answer"}`);
    const run = typeof answer.run === "number" && Number.isFinite(answer.run) ? { run: answer.run } : {};
    this.feed({ op: "registered", ...run, t: this.opts.clock.now() });
    const every = this.opts.heartbeatInterval * 1000;
    if (Number.isFinite(every) && every > 0) {
      this.sampler ??= HostSampler.acquire();
      this.heartbeat = setInterval(() => this.beat(), every);
      this.heartbeat.unref();
    }
  }

  /** A heartbeat, with the worker's metrics when it has something to report (executions running, a new bandwidth estimate). */
  private beat(): void {
    const scheduler = this.subjects.workerOps(this.name);
    this.outbox.send(scheduler, { op: "heartbeat", name: this.name, id: this.id, ...(this.sampler !== null ? { host: this.sampler.sample(this.opts.heartbeatInterval * 500) } : {}) });
    if (this.closed || this.core.state !== "running") return;
    if (this.core.runningCount === 0 && this.core.bandwidth === this.reportedBandwidth) return;
    this.reportedBandwidth = this.core.bandwidth;
    this.outbox.send(scheduler, this.core.metrics(this.opts.clock.now()));
  }

  /** A scheduler announced a new run, `run`, which this worker registers with: the run before is left. */
  enterRun(run: number): void {
    this.feed({ op: "new-run", run, t: this.opts.clock.now() });
  }

  /** What a registration says of how this worker reports: no round trips (in process), or the hold on its reports. */
  registrationFlags(): Pick<RegisterWorkerOp, "roundTrips" | "reportHold"> {
    if (this.core.init.roundTrips === false) return { roundTrips: false };
    return this.reports !== null ? { reportHold: this.reports.seconds } : {};
  }

  /** What this worker says it holds as it registers again (the keys are claimed until the scheduler answers). */
  holdingToRegisterAgain(): { key: string; nbytes: number }[] {
    this.feed({ op: "register-again", t: this.opts.clock.now() });
    return this.core.holding();
  }

  feed(input: WorkerInput): void {
    if (this.closed) return;
    this.recorder.input(input);
    this.core.handle(input);
    this.reports?.afterInput(this.core);
  }

  /**
   * The scheduler's ops, published. Sent as a request (natsched's scheduler never does), it is
   * answered as the scheduler answers its own: `{replies}`, one per op, or `{replies: [], error}`.
   */
  private receive(msg: Msg): void {
    const envelope = msg.data as Envelope<SchedulerToWorker>;
    const malformed = msg.problem ?? envelopeProblem(envelope);
    if (malformed !== undefined) {
      // A body the transport could not read, it has reported already.
      if (msg.problem === undefined) this.opts.onError?.(new ProtocolError(`worker ${this.name}: dropped a malformed message on ${msg.subject}: ${malformed}`));
      if (msg.reply !== undefined) this.opts.transport.publish(msg.reply, { replies: [], error: `malformed envelope: ${malformed}` });
      return;
    }
    const replies: SchedulerReply[] | null = msg.reply !== undefined ? [] : null;
    let closeReason: string | undefined;
    for (const op of envelope.ops) {
      const problem = workerOpProblem(op);
      if (problem !== undefined) {
        this.opts.onError?.(new ProtocolError(`worker ${this.name}: dropped an op from ${String(envelope.from)}: ${problem}`));
        replies?.push({ ok: false, error: { name: "ProtocolError", message: problem, code: "PROTOCOL" } });
        continue;
      }
      try {
        this.feed(withTime(op, this.opts.clock.now()) as WorkerInput);
        replies?.push(OK);
      } catch (error) {
        this.opts.onError?.(error);
        replies?.push({ ok: false, error: { name: "InternalError", message: String((error as Error)?.message ?? error) } });
      }
      // The scheduler ended this worker's retirement: its data is safe elsewhere.
      if (op.op === "close-worker") {
        closeReason = op.reason;
        break;
      }
    }
    if (msg.reply !== undefined && !this.opts.transport.closed) this.opts.transport.publish(msg.reply, { replies });
    if (closeReason !== undefined) this.close({ reason: closeReason });
  }

  /**
   * Ask the scheduler to retire this worker gracefully (retire-worker); resolves once it
   * said close-worker and the worker closed, or after `timeoutMs` (the caller then closes it).
   */
  retire(reason: string, timeoutMs: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(true);
    this.reports?.release();
    this.outbox.send(this.subjects.workerOps(this.name), { op: "retire-worker", name: this.name, id: this.id, reason });
    this.outbox.flush();
    return this.closedWithin(timeoutMs);
  }

  /** Resolves true once the worker is closed, false if `timeoutMs` passes first. */
  closedWithin(timeoutMs: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.onClosed.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Answers peers and clients on the data subject; across a wire values are serialized and chunked. */
  private serveData(msg: Msg): void {
    this.dataServer ??= new DataServer({
      transport: this.opts.transport,
      transferTimeout: this.opts.transferTimeout ?? 30_000,
      lookup: (key) => {
        if (!this.store.has(key)) return undefined;
        const value = this.store.get(key);
        const nbytes = this.core.tasks.get(key)?.nbytes ?? sizeof(value);
        this.totals.keysServed++;
        this.totals.bytesServed += nbytes;
        return { value, nbytes };
      },
      accept: (entries) => this.acceptScatter(entries),
      ...(this.opts.onError ? { onError: this.opts.onError } : {}),
    });
    this.dataServer.handle(msg);
  }

  /**
   * A client's put-data, all or nothing: refused (nothing stored) if it names a reserved key
   * or a key this worker already has (WorkerCore.putDataRefusal; the core logs the refusal),
   * else stored and handed to the core as unconfirmed scattered data, whose lease starts now.
   */
  private acceptScatter(entries: [string, unknown][]): Record<string, number> {
    const keys = entries.map(([key, value]) => ({ key, nbytes: sizeof(value) }));
    const names = keys.map((k) => k.key);
    const refusal = this.core.putDataRefusal(names);
    if (refusal !== null) {
      this.feed({ op: "put-data", keys, t: this.opts.clock.now() });
      if (refusal.reserved.length > 0) {
        throw new PutDataRefused(new ProtocolError(`put-data: ${refusal.reserved.map((k) => JSON.stringify(k)).join(", ")}: not a task key (a property name of every JavaScript object); nothing was stored`), refusal.reserved);
      }
      throw new PutDataRefused(new KeyExistsError(refusal.existing, `put-data on worker ${this.name}`), refusal.existing);
    }
    // Data the core does not track (it never should): not overwritten either.
    const stray = names.filter((key) => this.store.has(key));
    if (stray.length > 0) throw new PutDataRefused(new KeyExistsError(stray, `put-data on worker ${this.name}`), stray);
    for (let i = 0; i < entries.length; i++) {
      this.store.set(names[i]!, entries[i]![1]);
      this.totals.bytesScattered += keys[i]!.nbytes;
    }
    this.feed({ op: "put-data", keys, t: this.opts.clock.now() });
    this.startLease(names);
    return Object.fromEntries(keys.map((k) => [k.key, k.nbytes]));
  }

  /** After `scatterLease`, what of `keys` is still unconfirmed is checked with the scheduler. */
  private startLease(keys: string[], put = ++this.puts): void {
    const seconds = this.opts.scatterLease ?? 60;
    if (!Number.isFinite(seconds) || this.closed) return;
    const timer = setTimeout(() => {
      const lease = this.leases.get(put);
      this.leases.delete(put);
      if (lease !== undefined) void this.checkLease([...lease.keys], put);
    }, seconds * 1000);
    timer.unref?.();
    const lease = this.leases.get(put);
    if (lease !== undefined) clearTimeout(lease.timer);
    this.leases.set(put, { keys: new Set(keys), timer });
    for (const key of keys) this.leased.set(key, put);
  }

  /** `key` needs no lease check any more (confirmed, or no longer held as scattered data). */
  private unlease(key: string): void {
    const put = this.leased.get(key);
    if (put === undefined) return;
    this.leased.delete(key);
    const lease = this.leases.get(put);
    if (lease === undefined) return;
    lease.keys.delete(key);
    if (lease.keys.size > 0) return;
    clearTimeout(lease.timer);
    this.leases.delete(put);
  }

  /**
   * The scheduler says which of `keys` (scattered by put-data number `put`, still unconfirmed)
   * it counts here; the answer goes to the core as an input (scatter-lease), so a replay makes
   * the same decisions. No answer (no scheduler now): asked again one lease later; data is
   * released only on the scheduler's word.
   */
  private async checkLease(keys: string[], put: number): Promise<void> {
    const pending = keys.filter((key) => this.leased.get(key) === put && this.core.tasks.get(key)?.scattered === true);
    for (const key of keys) if (this.leased.get(key) === put && !pending.includes(key)) this.leased.delete(key);
    if (pending.length === 0 || this.closed) return;
    let whoHas: Record<string, unknown>;
    try {
      const reply = (await this.opts.transport.request(this.subjects.query, { op: "who-has", keys: pending }, { timeout: this.opts.transferTimeout ?? 30_000 })) as { whoHas?: unknown } | null;
      if (typeof reply?.whoHas !== "object" || reply.whoHas === null) throw new ProtocolError(`who-has: malformed answer ${JSON.stringify(reply)?.slice(0, 80)}`);
      whoHas = reply.whoHas as Record<string, unknown>;
    } catch {
      this.startLease(pending, put);
      return;
    }
    if (this.closed) return;
    const held: string[] = [];
    const unclaimed: string[] = [];
    for (const key of pending) {
      if (this.leased.get(key) !== put) continue;
      this.leased.delete(key);
      const holders = Object.hasOwn(whoHas, key) ? whoHas[key] : undefined;
      (Array.isArray(holders) && holders.includes(this.name) ? held : unclaimed).push(key);
    }
    if (held.length + unclaimed.length > 0) this.finish({ op: "scatter-lease", held, unclaimed, t: this.opts.clock.now() });
  }

  /** Runs a task; a function that returns a promise finishes when it settles (no promise is made for the others). */
  private execute(key: string, func: string, encodedArgs: unknown[]): void {
    // Own properties only: "constructor" or "toString" name no task function.
    const fn = Object.hasOwn(this.functions, func) ? this.functions[func] : undefined;
    const start = this.opts.clock.now();
    if (typeof fn !== "function") {
      this.finish({ op: "execute-failed", key, error: errorInfo(new UnknownFunctionError(func, key)), start, stop: start, t: start });
      return;
    }
    const module = this.pool !== null ? this.threadFunctions.get(func) : undefined;
    let result: unknown;
    try {
      const args = decodeArgs(encodedArgs, (k) => this.store.get(k));
      // On a thread the loop stays free; the core sees the same execute-done or -failed.
      result = module !== undefined ? this.pool!.run(key, module, func, args) : fn(...args);
    } catch (error) {
      this.executeFailed(key, start, error);
      return;
    }
    if (isThenable(result)) {
      Promise.resolve(result).then(
        (value) => this.executeDone(key, start, value),
        (error: unknown) => {
          // Stopped as unwanted, then asked for again before the stop was reported: run it anew.
          if (error instanceof ExecutionStopped && this.core.taskState(key) === "resumed") this.execute(key, func, encodedArgs);
          else this.executeFailed(key, start, error);
        },
      );
    } else {
      this.executeDone(key, start, result);
    }
  }

  /**
   * Terminates the thread running `key` if the core says nothing wants its outcome (docs/executors.md,
   * "Cancelled tasks"); the pool starts a fresh thread in its place, and the failure reported
   * for it takes the task to released. A function on the loop cannot be stopped: it runs on.
   */
  private stopUnwanted(key: string): void {
    if (this.closed || this.pool === null || !this.core.executionUnwanted(key)) return;
    this.pool.stop(key, new ExecutionStopped(key));
  }

  private executeDone(key: string, start: number, result: unknown): void {
    const stop = this.opts.clock.now();
    if (this.closed) return;
    let nbytes: number;
    try {
      this.store.set(key, result);
      nbytes = sizeof(result);
    } catch (error) {
      this.executeFailed(key, start, error);
      return;
    }
    this.finish({ op: "execute-done", key, nbytes, start, stop, t: stop });
  }

  private executeFailed(key: string, start: number, error: unknown): void {
    const stop = this.opts.clock.now();
    const info = errorInfo(error);
    // Only a thread that really died is a lost executor; a task's own error cannot pose as one.
    if (info.code === EXECUTOR_LOST && !(error instanceof ExecutorLost)) delete info.code;
    this.finish({ op: "execute-failed", key, error: info, start, stop, t: stop });
  }

  private finish(input: WorkerInput): void {
    if (this.closed) return;
    try {
      this.feed(input);
    } catch (error) {
      this.opts.onError?.(error);
    }
  }

  private async gather(from: string, keys: string[]): Promise<void> {
    let reply: FetchedData;
    try {
      reply = await fetchData(this.opts.transport, this.subjects.workerData(from), keys, this.name, this.opts.transferTimeout ?? 30_000);
    } catch (error) {
      this.finish({ op: "gather-failed", from, keys, reason: String((error as Error)?.message ?? error), t: this.opts.clock.now() });
      return;
    }
    if (this.closed) return;
    const received: { key: string; nbytes: number }[] = [];
    const missing: string[] = [];
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const nbytes = reply.nbytes[i]!;
      if (nbytes < 0) {
        missing.push(key);
        continue;
      }
      this.store.set(key, reply.values[i]);
      received.push({ key, nbytes });
      this.totals.bytesFetched += nbytes;
    }
    this.finish({ op: "gather-done", from, received, missing, t: this.opts.clock.now() });
  }

  /** Leave the cluster: tell the scheduler (unless `abrupt`), stop serving, record the stop. */
  close(opts: { abrupt?: boolean; reason?: string } = {}): void {
    if (this.closed) return;
    const t = this.opts.clock.now();
    if (!opts.abrupt) {
      this.feed({ op: "close", t });
      this.reports?.release();
      this.outbox.send(this.subjects.workerOps(this.name), { op: "unregister-worker", name: this.name, id: this.id, reason: opts.reason ?? "closed" });
      this.outbox.flush();
    }
    this.closed = true;
    // An abrupt close is a crash: what was held is lost with it, as unsent messages are.
    this.reports?.drop();
    void this.pool?.close();
    if (this.heartbeat !== null) clearInterval(this.heartbeat);
    this.sampler?.release();
    this.sampler = null;
    for (const { timer } of this.leases.values()) clearTimeout(timer);
    this.leases.clear();
    this.leased.clear();
    for (const sub of this.subscriptions) sub.unsubscribe();
    this.subscriptions.length = 0;
    this.store.clear();
    this.recorder.stop(t, opts.reason);
    for (const notify of this.onClosed.splice(0)) notify();
  }
}

export interface WorkerTotals {
  /** Tasks this worker computed (their function returned). */
  tasksCompleted: number;
  /** Tasks whose function threw here. */
  tasksErred: number;
  /** Bytes of dependencies fetched from peers. */
  bytesFetched: number;
  /** Bytes of data clients scattered to this worker. */
  bytesScattered: number;
  /** Bytes (and keys) served to peers and clients by get-data. */
  bytesServed: number;
  keysServed: number;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as PromiseLike<unknown>).then === "function";
}

export function errorInfo(error: unknown): ErrorInfo {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const stack = error.stack;
    return { name: error.name, message: error.message, ...(typeof code === "string" ? { code } : {}), ...(typeof stack === "string" ? { stack: boundStack(stack) } : {}) };
  }
  return { name: "Error", message: String(error) };
}
