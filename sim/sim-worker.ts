import type { ErrorInfo, RegisterWorkerOp } from "../machines/protocol.js";
import { WorkerCore } from "../machines/worker/core.js";
import type { WorkerInput } from "../machines/worker/inputs.js";
import type { ActorRecorder } from "../actors/host/recorder.js";
import { stampCause } from "../actors/host/causes.js";
import { ReportHold } from "../actors/host/report-hold.js";
import { simTimers } from "./sim-timers.js";
import { withTime } from "../actors/host/with-time.js";
import type { SimKernel } from "./kernel.js";
import type { SimObservations } from "./observations.js";
import type { PlannedTask, PlannedWorker } from "./plan.js";
import { SIM_FUNCTION } from "./scenario.js";
import { SCHEDULER_ADDRESS, workerAddress } from "./sim-scheduler.js";

export interface SimWorkerContext {
  kernel: SimKernel;
  /** Bytes per second between workers: what transfers actually take. */
  bandwidth: number;
  /** What workers assume until they measure a transfer (config.bandwidth). */
  assumedBandwidth: number;
  /** Seconds between a worker's heartbeats, which carry its metrics (config.heartbeatInterval). */
  heartbeatInterval: number;
  /** Seconds a thread is held per execution before the task's duration starts (hostCosts.taskStart). */
  taskStart: number;
  /** Seconds the worker's mail is held after it takes steal requests (hostCosts.stealAnswer). */
  stealAnswer: number;
  tasks: ReadonlyMap<string, PlannedTask>;
  observations: SimObservations;
  /** The live incarnation of a worker, by name. */
  peer(name: string): SimWorker | undefined;
  transferIncomingCountLimit: number;
  /** The incarnation closed (it retired, or closed after its retirement timed out). */
  closed(worker: SimWorker): void;
  /** Seconds after a put-data its data still unconfirmed is checked with the scheduler (config.scatterLease). */
  scatterLease: number;
  /** The scheduler's who-has query: the holders it counts for `key`. */
  whoHas(key: string): string[];
  /** Runs of each task that ended failing so far, over every worker (SimTaskSpec.failures). */
  failedRuns: Map<string, number>;
  /** Runs of each task started so far, over every worker (SimTaskSpec.runs). */
  startedRuns: Map<string, number>;
}

/**
 * One incarnation of a worker, hosting the worker core on the virtual clock. Instead of
 * running functions it waits each task's scenario duration; instead of moving bytes it
 * waits latency + bytes / bandwidth per transfer (transfers do not share bandwidth).
 * A killed incarnation drops everything still pending.
 */
export class SimWorker {
  readonly core: WorkerCore;
  /** Reports held to go together (SimWorkerSpec.reportHold); null: each goes at once. */
  private readonly reports: ReportHold | null;
  /**
   * The keys its data store holds, as a worker actor's `store`: a result is put there when
   * its execution, transfer or scatter delivers it, and leaves only when the core frees it.
   */
  readonly stored = new Set<string>();
  private live = true;
  /** The heartbeat timer: armed while there is something to report (see reportMetrics). */
  private heartbeatArmed = false;
  private reportedBandwidth: number;
  /** When this incarnation started (virtual time): register-worker's `started`. */
  readonly started: number;

  constructor(
    readonly spec: PlannedWorker,
    readonly id: string,
    private readonly recorder: ActorRecorder,
    private readonly ctx: SimWorkerContext,
  ) {
    const address = workerAddress(spec.name);
    const { kernel } = ctx;
    this.started = kernel.now;
    // As a worker on NATS holds its reports (WorkerActor, config reportHold), on the virtual clock.
    this.reports = spec.reportHold > 0 ? new ReportHold(spec.reportHold, simTimers(kernel), (op) => kernel.send(address, SCHEDULER_ADDRESS, op)) : null;
    // The core's init is also the start record's (log/start-init.ts): what replay rebuilds it from.
    this.core = new WorkerCore(
      { name: spec.name, id, nthreads: spec.nthreads, transferIncomingCountLimit: ctx.transferIncomingCountLimit, bandwidth: ctx.assumedBandwidth, fetchByHolder: true, ...(spec.roundTrips ? {} : { roundTrips: false as const }) },
      {
        toScheduler: (op) => {
          const stamped = stampCause(op, recorder);
          if (this.reports === null) kernel.send(address, SCHEDULER_ADDRESS, stamped);
          else this.reports.offer(stamped, this.core);
        },
        execute: (key) => this.execute(key),
        gather: (from, keys) => this.gather(from, keys),
        freeData: (key) => this.stored.delete(key),
        transition: (machine, id, event, from, to, why) => recorder.transition(machine, id, event, from, to, why),
      },
    );
    this.reportedBandwidth = ctx.assumedBandwidth;
  }

  get name(): string {
    return this.spec.name;
  }

  get alive(): boolean {
    return this.live;
  }

  /** Start taking mail; the registration the scheduler should see. */
  start(): RegisterWorkerOp {
    const { kernel } = this.ctx;
    this.recorder.startWorker(kernel.now, this.core.init);
    const address = workerAddress(this.name);
    kernel.open(address, (_from, ops) => {
      // A victim's answers leave once its host gets to them (hostCosts.stealAnswer).
      if (this.ctx.stealAnswer > 0 && ops.some((op) => (op as { op: string }).op === "steal-request")) kernel.holdUntil(address, kernel.now + this.ctx.stealAnswer);
      for (const op of ops) {
        this.feed(withTime(op as object, kernel.now) as WorkerInput);
        // The scheduler ended this worker's retirement (WorkerActor.receive): it closes, and
        // takes nothing more of the message.
        if ((op as { op: string }).op === "close-worker") {
          this.close((op as { reason: string }).reason);
          break;
        }
      }
    });
    return this.registration(false);
  }

  /** The register-worker this incarnation sends; `holding` when it registers again. */
  private registration(again: boolean): RegisterWorkerOp {
    const { name, nthreads, host, resources } = this.spec;
    const op: RegisterWorkerOp = { op: "register-worker", name, id: this.id, nthreads, host, resources: { ...resources }, functions: [SIM_FUNCTION], started: this.started };
    if (again) op.holding = this.core.holding();
    if (!this.spec.roundTrips) op.roundTrips = false;
    if (this.reports !== null) op.reportHold = this.reports.seconds;
    return op;
  }

  /** Vanish without a word, as a crash would. */
  kill(): void {
    this.stop("killed");
  }

  /**
   * Leave gracefully (LocalCluster.removeWorker, a worker process on SIGTERM): ask the
   * scheduler to retire this worker, and close when it says close-worker, or after
   * `timeout` seconds.
   */
  retire(timeout: number): void {
    if (!this.live) return;
    const { kernel } = this.ctx;
    this.reports?.release();
    kernel.send(workerAddress(this.name), SCHEDULER_ADDRESS, { op: "retire-worker", name: this.name, id: this.id, reason: "removed" });
    if (Number.isFinite(timeout)) kernel.at(kernel.now + timeout, () => this.close("removed (retirement timed out)"));
  }

  /** WorkerActor.close: the core closes, the scheduler is told (unregister-worker), the worker stops. */
  close(reason: string): void {
    if (!this.live) return;
    const { kernel } = this.ctx;
    this.feed({ op: "close", t: kernel.now });
    this.reports?.release();
    kernel.send(workerAddress(this.name), SCHEDULER_ADDRESS, { op: "unregister-worker", name: this.name, id: this.id, reason });
    this.stop(reason);
    this.ctx.closed(this);
  }

  /**
   * Register again with what it holds (actors/process/worker-resync.ts): the scheduler removed
   * this incarnation while it was alive, and told it so (worker-missing) or its reconnect was
   * answered known: false; or a scheduler announced a new run (`run`), which the worker
   * enters first.
   */
  registerAgain(run?: number): void {
    if (!this.live) return;
    if (run !== undefined) this.feed({ op: "new-run", run, t: this.ctx.kernel.now });
    this.feed({ op: "register-again", t: this.ctx.kernel.now });
    this.ctx.kernel.send(workerAddress(this.name), SCHEDULER_ADDRESS, this.registration(true));
  }

  private stop(reason: string): void {
    this.live = false;
    // A crash loses what was held, as unsent messages; a graceful close sent it first.
    this.reports?.drop();
    this.ctx.kernel.close(workerAddress(this.name));
    this.stored.clear();
    this.recorder.stop(this.ctx.kernel.now, reason);
  }

  feed(input: WorkerInput): void {
    if (!this.live) return;
    // A put-data the core refuses (a key this worker has) stores nothing and starts no lease:
    // WorkerActor's data server hands it to the core only for the log (STALE, scatter-refused).
    const stored = input.op === "put-data" && this.core.putDataRefusal(input.keys.map((k) => k.key)) === null;
    if (stored) for (const { key } of input.keys) this.stored.add(key);
    this.recorder.input(input);
    this.core.handle(input);
    this.reports?.afterInput(this.core);
    if (stored) this.startLease(input.keys.map((k) => k.key));
    this.armHeartbeat();
  }

  /**
   * The worker actor's scatter lease: `scatterLease` seconds after a put-data, what of it is
   * still unconfirmed is checked with the scheduler's who-has, and the answer fed to the core
   * (scatter-lease): kept if the scheduler counts it here, dropped if not.
   */
  private startLease(keys: string[]): void {
    const { kernel, scatterLease } = this.ctx;
    if (!Number.isFinite(scatterLease)) return;
    kernel.at(kernel.now + scatterLease, () => {
      const held: string[] = [];
      const unclaimed: string[] = [];
      for (const key of keys) {
        if (this.core.tasks.get(key)?.scattered !== true) continue;
        (this.ctx.whoHas(key).includes(this.name) ? held : unclaimed).push(key);
      }
      if (held.length + unclaimed.length > 0) this.feed({ op: "scatter-lease", held, unclaimed, t: kernel.now });
    });
  }

  /**
   * The worker actor's heartbeat, on virtual time: at k * heartbeatInterval it sends its
   * metrics (worker-metrics) while executions run or its bandwidth estimate has news.
   * Only armed then, so that an idle run ends.
   */
  private armHeartbeat(): void {
    if (this.heartbeatArmed || !this.somethingToReport()) return;
    const { kernel, heartbeatInterval } = this.ctx;
    if (!(heartbeatInterval > 0 && Number.isFinite(heartbeatInterval))) return;
    this.heartbeatArmed = true;
    kernel.at((Math.floor(kernel.now / heartbeatInterval) + 1) * heartbeatInterval, () => {
      this.heartbeatArmed = false;
      if (!this.live || this.core.state !== "running" || !this.somethingToReport()) return;
      this.reportedBandwidth = this.core.bandwidth;
      kernel.send(workerAddress(this.name), SCHEDULER_ADDRESS, this.core.metrics(kernel.now));
      this.armHeartbeat();
    });
  }

  private somethingToReport(): boolean {
    return this.core.runningCount > 0 || this.core.bandwidth !== this.reportedBandwidth;
  }

  /** Size of a result this worker holds, or undefined. */
  holding(key: string): number | undefined {
    const ts = this.core.tasks.get(key);
    return ts !== undefined && ts.state === "memory" ? ts.nbytes : undefined;
  }

  private execute(key: string): void {
    const { kernel, observations } = this.ctx;
    const task = this.ctx.tasks.get(key);
    if (task === undefined) throw new Error(`simulator: worker ${this.name} was asked to run ${key}, which is not a task of the scenario`);
    // The thread is taken now; the function starts once the host has started it.
    const taken = kernel.now;
    const start = taken + this.ctx.taskStart;
    const run = this.ctx.startedRuns.get(key) ?? 0;
    this.ctx.startedRuns.set(key, run + 1);
    const stop = start + (task.runs?.[run] ?? task.duration);
    observations.executionStarted(key);
    kernel.at(stop, () => {
      if (!this.live) return;
      observations.executionEnded(key, this.name, taken, stop);
      const failed = this.ctx.failedRuns.get(key) ?? 0;
      const fails = task.error !== undefined && (task.failures === undefined || failed < task.failures);
      if (!fails) {
        this.stored.add(key);
        this.feed({ op: "execute-done", key, nbytes: task.nbytes, start, stop, t: stop });
      } else {
        this.ctx.failedRuns.set(key, failed + 1);
        const error: ErrorInfo = { name: "SimulatedError", message: task.error! };
        this.feed({ op: "execute-failed", key, error, start, stop, t: stop });
      }
    });
  }

  /**
   * The peer answers with what it holds when asked; the bytes arrive latency +
   * bytes / bandwidth later, unless the peer died in between.
   */
  private gather(from: string, keys: string[]): void {
    const { kernel, observations } = this.ctx;
    const requested = kernel.now;
    const peer = this.ctx.peer(from);
    if (peer === undefined) {
      kernel.at(requested + kernel.latency, () => {
        this.feed({ op: "gather-failed", from, keys, reason: `no worker ${from}`, t: kernel.now });
      });
      return;
    }
    const received: { key: string; nbytes: number }[] = [];
    const missing: string[] = [];
    let bytes = 0;
    for (const key of keys) {
      const nbytes = peer.holding(key);
      if (nbytes === undefined) {
        missing.push(key);
      } else {
        received.push({ key, nbytes });
        bytes += Math.max(nbytes, 0);
      }
    }
    const end = requested + kernel.latency + bytes / this.ctx.bandwidth;
    kernel.at(end, () => {
      if (!this.live) return;
      if (!peer.alive) {
        this.feed({ op: "gather-failed", from, keys, reason: `${from} died during the transfer`, t: end });
        return;
      }
      for (const { key, nbytes } of received) {
        observations.transferred({ key, from, to: this.name, nbytes, start: requested, end });
        this.stored.add(key);
      }
      this.feed({ op: "gather-done", from, received, missing, t: end });
    });
  }
}
