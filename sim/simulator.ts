import { BadOptionError } from "../machines/errors.js";
import type { TaskSpec, UpdateDataOp } from "../machines/protocol.js";
import type { WorkerCore } from "../machines/worker/core.js";
import { CompactLogSink } from "../log/compact-log.js";
import { MemoryLogSink, NullLogSink } from "../log/memory-log.js";
import type { LogRecord, LogSink } from "../log/types.js";
import { ActorRecorder } from "../actors/host/recorder.js";
import { NetworkFaults } from "./faults.js";
import type { HostCosts } from "./host-costs.js";
import { SimKernel } from "./kernel.js";
import { SimObservations } from "./observations.js";
import { SimClients } from "./sim-clients.js";
import type { Plan, PlannedData, PlannedEvent, PlannedSubmission, PlannedTask, PlannedWorker } from "./plan.js";
import { Prng } from "./prng.js";
import { SIM_CLIENT, SIM_FUNCTION, type Scenario, type SimObserver, type SimOptions, type SimResult, type SimTaskResult, type SimView } from "./scenario.js";
import { readNumber } from "./scenario-fields.js";
import { SCHEDULER_ADDRESS, SimScheduler, workerAddress } from "./sim-scheduler.js";
import { SimWorker, type SimWorkerContext } from "./sim-worker.js";
import { planScenario, withEarlierDeps } from "./validate-scenario.js";

/**
 * Runs a scenario on the unchanged scheduler and worker cores, on a virtual clock, and
 * reports what happened. Deterministic: the same scenario (seed included) gives the same
 * result and the same log. Throws typed errors for a malformed scenario.
 */
export function simulate(scenario: Scenario, options: SimOptions = {}): SimResult {
  const plan = planScenario(scenario);
  const probes = (options.probes ?? []).map(({ at, probe }, i) => {
    if (typeof probe !== "function") throw new BadOptionError(`probes[${i}].probe`, "must be a function");
    return { at: readNumber(at, `probes[${i}].at`, { min: 0 }), probe };
  });
  const restarts = plan.timeline.some((event) => event.kind === "restart-scheduler");
  if (options.log !== undefined && restarts) {
    throw new BadOptionError("log", "a restart-scheduler action rebuilds the scheduler from its log, which must be kept in memory: leave the log option out");
  }
  // The default log is kept compactly and built into records when `result.log` is first read;
  // an observer, and a scheduler restarting from it, read the log as it grows, so they get
  // one of plain records.
  const log =
    options.log === false
      ? new NullLogSink()
      : options.log !== undefined
        ? options.log
        : options.observer === undefined && !restarts
          ? new CompactLogSink({ location: "simulation" })
          : new MemoryLogSink({ location: "simulation", copy: false });
  return new Simulation(plan, log).run(probes, options.observer);
}

class Simulation {
  private readonly kernel: SimKernel;
  private readonly prng: Prng;
  private readonly observations = new SimObservations();
  private readonly scheduler: SimScheduler;
  private readonly workers = new Map<string, SimWorker>();
  /** One recorder per worker name, so a restarted worker's records continue its sequence. */
  private readonly recorders = new Map<string, ActorRecorder>();
  private readonly workerContext: SimWorkerContext;
  private readonly clients: SimClients;
  /** Clients the scheduler has taken a client-join from (and no client-leave since). */
  private readonly joined = new Set<string>();
  private readonly computableKeys = new Map<string, boolean>();
  private dependents: Map<string, string[]> | null = null;

  constructor(
    private readonly plan: Plan,
    private readonly log: LogSink,
  ) {
    this.kernel = new SimKernel(plan.latency, plan.faults === null ? null : new NetworkFaults(plan.faults, plan.seed), hostDelays(plan.hostCosts, workerDelays(plan.timeline)));
    this.prng = new Prng(plan.seed);
    this.scheduler = new SimScheduler(this.kernel, plan.config, this.log, (name, id) => this.workers.get(name)?.id === id, plan.hostCosts);
    this.clients = new SimClients(this.kernel);
    this.workerContext = {
      kernel: this.kernel,
      bandwidth: plan.bandwidth,
      assumedBandwidth: plan.config.bandwidth,
      heartbeatInterval: plan.config.heartbeatInterval,
      taskStart: plan.hostCosts.taskStart,
      stealAnswer: plan.hostCosts.stealAnswer,
      tasks: plan.tasks,
      observations: this.observations,
      peer: (name) => this.workers.get(name),
      transferIncomingCountLimit: plan.config.transferIncomingCountLimit,
      closed: (worker) => {
        if (this.workers.get(worker.name) === worker) this.workers.delete(worker.name);
      },
      scatterLease: plan.config.scatterLease,
      whoHas: (key) => [...(this.scheduler.core.tasks.get(key)?.whoHas ?? [])].map((ws) => ws.name),
      failedRuns: new Map(),
      startedRuns: new Map(),
    };
  }

  run(probes: { at: number; probe: (view: SimView) => void }[], observer?: SimObserver): SimResult {
    const turn = observer?.turn;
    if (turn !== undefined) this.kernel.onTurn = () => turn(this.view(), this.records());
    this.kernel.onMail = observer?.mail ?? null;
    this.scheduler.start();
    this.scheduler.feed({ op: "client-join", client: SIM_CLIENT, t: 0 });
    this.joined.add(SIM_CLIENT);
    for (const event of this.plan.timeline) this.kernel.at(event.at, () => this.apply(event));
    for (const { at, probe } of probes) this.kernel.at(at, () => probe(this.view()));
    this.kernel.run();
    return this.result();
  }

  private apply(event: PlannedEvent): void {
    switch (event.kind) {
      case "join":
        return this.join(event.worker);
      case "place-data":
        return this.placeData(event.data);
      case "submit":
        return this.submit(event.submission);
      case "kill":
        return this.kill(event.worker);
      case "balance":
        this.scheduler.feed({ op: "balance", t: this.kernel.now });
        return;
      case "restart-scheduler":
        this.scheduler.restart(this.records());
        return;
      case "release":
        this.clients.release(event.client, event.keys);
        this.scheduler.receive([{ op: "release-keys", client: event.client, keys: event.keys, t: this.kernel.now }]);
        return;
      case "cancel": {
        const keys = this.clients.cancel(event.client, event.keys, (key) => this.dependentsOf(key));
        this.scheduler.receive([{ op: "cancel-keys", client: event.client, keys, t: this.kernel.now }]);
        return;
      }
      case "fire-and-forget":
        this.scheduler.receive([{ op: "fire-and-forget", client: event.client, keys: event.keys, t: this.kernel.now }]);
        return;
      case "client-leave":
        this.clients.leave(event.client);
        this.joined.delete(event.client);
        this.scheduler.receive([{ op: "client-leave", client: event.client, t: this.kernel.now }]);
        return;
      case "retire":
        this.workers.get(event.worker)?.retire(event.timeout);
        return;
      case "lose":
        return this.lose(event.worker, event.back);
      case "scatter":
        return this.scatter(event.client, event.data, event.on);
      case "stop-scheduler":
        this.scheduler.stop();
        // The next run knows no client.
        this.joined.clear();
        return;
      case "start-scheduler":
        return this.startNewRun();
    }
  }

  /**
   * A scheduler starts a new run and announces itself (announceNewRun): each live worker hears
   * it one latency later and registers again with what it holds (followNewRuns); each client
   * hears it, asks which of its keys the new run holds (client-keys, a round trip), and
   * resubmits the rest (Client.reconcile).
   */
  private startNewRun(): void {
    this.scheduler.startNewRun();
    const { kernel } = this;
    const run = this.scheduler.core.run;
    for (const worker of this.workers.values()) {
      kernel.at(kernel.now + kernel.latency, () => {
        if (this.workers.get(worker.name) === worker) worker.registerAgain(run);
      });
    }
    for (const client of this.clients.names()) kernel.at(kernel.now + 2 * kernel.latency, () => this.reconcile(client));
  }

  private reconcile(client: string): void {
    if (!this.scheduler.up) return;
    const t = this.kernel.now;
    const wanted = new Set([...(this.scheduler.core.clients.get(client) ?? [])].map((ts) => ts.key));
    const again = this.clients.reconcile(client, wanted, (key) => this.computable(key));
    if (again.length === 0) return;
    const tasks = withEarlierDeps(again.map((key) => this.plan.tasks.get(key)!), this.plan.tasks).map(taskSpec);
    this.joinClient(client, t);
    this.scheduler.receive([{ op: "update-graph", client, tasks, wants: again, t }]);
  }

  /** The scenario's tasks that depend on `key` directly. */
  private dependentsOf(key: string): readonly string[] {
    if (this.dependents === null) {
      this.dependents = new Map();
      for (const task of this.plan.tasks.values()) {
        for (const dep of task.deps) {
          let list = this.dependents.get(dep);
          if (list === undefined) this.dependents.set(dep, (list = []));
          list.push(task.key);
        }
      }
    }
    return this.dependents.get(key) ?? [];
  }

  /** A task of the scenario whose inputs are all tasks too (scattered data cannot be made again). */
  private computable(key: string): boolean {
    let known = this.computableKeys.get(key);
    if (known === undefined) {
      const task = this.plan.tasks.get(key);
      known = task !== undefined && task.deps.every((dep) => this.computable(dep));
      this.computableKeys.set(key, known);
    }
    return known;
  }

  /**
   * The scheduler's liveness check removes a worker it has not heard from (SchedulerActor's
   * tick feeds worker-lost), though the worker lives on; `back` seconds later the worker
   * registers again with what it holds.
   */
  private lose(name: string, back: number): void {
    const worker = this.workers.get(name);
    if (worker === undefined) return;
    const { kernel } = this;
    this.scheduler.feed({ op: "worker-lost", name, id: worker.id, reason: "no heartbeat (lost)", t: kernel.now });
    kernel.at(kernel.now + back, () => {
      if (this.workers.get(name) === worker) worker.registerAgain();
    });
  }

  /**
   * Client.scatter by content, in one round: keys the scheduler holds in memory are shared
   * where they are (an `existing` entry naming a holder); each other key is put on the first
   * worker of `on` the scheduler has running (one that already has the key refuses the put, as its data server
   * does, and the entry names it as `existing`), then everything is registered with
   * update-data. The client holds futures only if the scheduler accepts.
   */
  private scatter(client: string, data: { key: string; nbytes: number }[], on: string[]): void {
    const t = this.kernel.now;
    // The client stores on workers the scheduler lists (its running workers), as Client.scatter.
    const target = on
      .map((name) => this.workers.get(name))
      .find((w) => w !== undefined && this.scheduler.core.workers.get(w.name)?.id === w.id && this.scheduler.core.workers.get(w.name)?.state === "running");
    const entries: UpdateDataOp["data"] = [];
    const puts: { key: string; nbytes: number }[] = [];
    for (const { key, nbytes } of data) {
      const ts = this.scheduler.core.tasks.get(key);
      const holder = ts === undefined ? undefined : ts.whoHas.values().next().value;
      if (holder !== undefined) {
        entries.push({ key, nbytes: 0, workers: [holder.name], existing: true });
      } else if (target !== undefined) {
        if (target.core.putDataRefusal([key]) === null) {
          puts.push({ key, nbytes });
          entries.push({ key, nbytes, workers: [target.name] });
        } else {
          // The worker has the key: its data server refuses the put (KEY_EXISTS), handing it
          // to the core for the log only, and the client names the key there as existing.
          target.feed({ op: "put-data", keys: [{ key, nbytes }], t });
          entries.push({ key, nbytes: 0, workers: [target.name], existing: true });
        }
      }
    }
    // No worker to put data on: the client's scatter fails (NO_WORKERS), nothing is sent.
    if (entries.length === 0) return;
    if (puts.length > 0) target!.feed({ op: "put-data", keys: puts, t });
    this.joinClient(client, t);
    const reply = this.scheduler.request({ op: "update-data", client, data: entries, t });
    // Refused (KEY_EXISTS): the client's scatter fails, and it holds no future for the keys.
    if (reply.ok) this.clients.want(client, entries.map((e) => e.key));
  }

  /** The client's client-join, if the scheduler does not know the client (yet, or since it left). */
  private joinClient(client: string, t: number): void {
    if (this.joined.has(client)) return;
    this.joined.add(client);
    this.scheduler.receive([{ op: "client-join", client, t }]);
  }

  /** The scheduler registers the worker now; the worker hears back one latency later. */
  private join(spec: PlannedWorker): void {
    const worker = new SimWorker(spec, `${spec.name}-${this.prng.hex(8)}`, this.recorderFor(spec.name), this.workerContext);
    this.workers.set(spec.name, worker);
    const { kernel } = this;
    this.scheduler.receive([{ ...worker.start(), t: kernel.now }]);
    // The answer names the run the worker registered with.
    const run = this.scheduler.core.run;
    kernel.at(kernel.now + kernel.latency, () => worker.feed({ op: "registered", run, t: kernel.now }));
  }

  /** The worker dies; the scheduler finds out through its liveness check, as a live one does. */
  private kill(name: string): void {
    const worker = this.workers.get(name)!;
    this.workers.delete(name);
    worker.kill();
    this.scheduler.workerDied(name, worker.id);
  }

  /** Like a client's scatter: data put on the workers, then the scheduler told where it is. */
  private placeData(data: PlannedData[]): void {
    const t = this.kernel.now;
    const perWorker = new Map<string, { key: string; nbytes: number }[]>();
    for (const { key, nbytes, on } of data) {
      for (const name of on) {
        let keys = perWorker.get(name);
        if (keys === undefined) perWorker.set(name, (keys = []));
        keys.push({ key, nbytes });
      }
    }
    for (const [name, keys] of perWorker) this.workers.get(name)!.feed({ op: "put-data", keys, t });
    const held = data.map(({ key, nbytes, on }) => ({ key, nbytes, workers: on }));
    this.scheduler.receive([{ op: "update-data", client: SIM_CLIENT, data: held, t }]);
  }

  /** A client's graph, after its client-join if the scheduler does not know the client (yet, or since it left). */
  private submit(submission: PlannedSubmission): void {
    const { client, wants } = submission;
    const t = this.kernel.now;
    const tasks = submission.tasks.map(taskSpec);
    this.joinClient(client, t);
    // Refused only after a new run, which knows no scattered data: a graph that needs it fails
    // (the client's submit rejects), and the client holds no future for it.
    if (this.scheduler.request({ op: "update-graph", client, tasks, wants, t }).ok) this.clients.want(client, wants);
  }

  private view(): SimView {
    const workers = new Map<string, WorkerCore>();
    const stores = new Map<string, ReadonlySet<string>>();
    for (const [name, worker] of this.workers) {
      workers.set(name, worker.core);
      stores.set(name, worker.stored);
    }
    return { now: this.kernel.now, scheduler: this.scheduler.core, workers, stores };
  }

  private recorderFor(name: string): ActorRecorder {
    let recorder = this.recorders.get(name);
    if (recorder === undefined) this.recorders.set(name, (recorder = new ActorRecorder(`worker.${name}`, this.log)));
    return recorder;
  }

  private result(): SimResult {
    const tasks: Record<string, SimTaskResult> = {};
    for (const key of this.plan.tasks.keys()) {
      const { executions, worker, start, end } = this.observations.runsOf(key);
      tasks[key] = { worker, start, end, state: this.scheduler.core.taskState(key) ?? "forgotten", executions };
    }
    const result = {
      makespan: this.observations.makespan,
      tasks,
      futures: this.clients.held(),
      transfers: this.observations.transfers,
      steals: this.scheduler.steals.steals,
      refused: this.scheduler.refused,
    } as SimResult;
    const log = this.log;
    if (!(log instanceof CompactLogSink)) {
      result.log = this.records();
      return result;
    }
    // Built on first read, then an ordinary property holding the array.
    const settle = (records: LogRecord[]): LogRecord[] => {
      Object.defineProperty(result, "log", { value: records, writable: true, enumerable: true, configurable: true });
      return records;
    };
    Object.defineProperty(result, "log", {
      get: () => settle(log.toArray()),
      set: (records: LogRecord[]) => settle(records),
      enumerable: true,
      configurable: true,
    });
    return result;
  }

  /** The records kept in memory as records (none when the log went elsewhere). */
  private records(): LogRecord[] {
    return this.log instanceof MemoryLogSink ? this.log.records : [];
  }
}

/** The wait of mail in its receiver's host, by address; null when there is none (the kernel's fast path). */
function hostDelays({ schedulerDelay, workerDelay }: HostCosts, ownDelays: ReadonlyMap<string, number>): ((to: string) => number) | null {
  if (schedulerDelay === 0 && workerDelay === 0 && ownDelays.size === 0) return null;
  return (to) => (to === SCHEDULER_ADDRESS ? schedulerDelay : to.startsWith("worker.") ? workerDelay + (ownDelays.get(to) ?? 0) : 0);
}

/** Each worker's own message delay (SimWorkerSpec.delay), by address: one per name, from its last join in the scenario. */
function workerDelays(timeline: readonly PlannedEvent[]): Map<string, number> {
  const delays = new Map<string, number>();
  for (const event of [...timeline].sort((a, b) => a.at - b.at)) {
    if (event.kind === "join" && event.worker.delay > 0) delays.set(workerAddress(event.worker.name), event.worker.delay);
  }
  return delays;
}

function taskSpec(task: PlannedTask): TaskSpec {
  const spec: TaskSpec = { key: task.key, func: SIM_FUNCTION, args: [], deps: task.deps };
  if (task.priority !== undefined) spec.priority = task.priority;
  if (task.workers !== undefined) spec.workers = task.workers;
  if (task.hosts !== undefined) spec.hosts = task.hosts;
  if (task.resources !== undefined) spec.resources = task.resources;
  if (task.allowOtherWorkers !== undefined) spec.allowOtherWorkers = task.allowOtherWorkers;
  if (task.retries !== undefined) spec.retries = task.retries;
  return spec;
}
