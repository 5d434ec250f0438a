import type { Config } from "../config.js";
import { ForbiddenError, KeyExistsError, NatschedError, UnknownFunctionError } from "../errors.js";
import { keySplit, keySplitGroup, order as graphOrder, validateGraph } from "../graph/index.js";
import { priorityLess, sortByPriority } from "../priority.js";
import type { ComputeTaskOp, DepInfo, ErrorInfo, KeyErredOp, KeyInMemoryOp, RegisterWorkerOp, StealRequestOp, StealResponseOp, TaskFinishedOp, TaskSpec, UpdateDataOp, UpdateGraphOp, WorkerMetricsOp } from "../protocol.js";
import { EXECUTOR_LOST, FIRE_AND_FORGET } from "../protocol.js";
import { TASK, WORKER, SCHEDULER, type TaskStateName, type SchedulerStateName } from "../tables.js";
import type { TaskEvent } from "../definitions/task.js";
import type { WorkerLifecycleEvent } from "../definitions/lifecycle.js";
import { OrderedQueue } from "../util/ordered-queue.js";
import {
  decideNonRootish,
  decideRootishCoassign,
  decideRootishQueuing,
  inputsKeptLocal,
  isRootishGroup,
  keptWithInputs,
  taskSlotsAvailable,
  type Decision,
  type PlacementContext,
} from "./placement.js";
import type { PlacementWhy, StealAbortedWhy, StealAnswerWhy, StealRequestWhy, TaskWhy, WhyOf, WorkerWhy } from "../reasons.js";
import { addCount, Estimates } from "./estimates.js";
import { GroupRec, PrefixRec, QUEUED_AT, TaskRec, WorkerRec } from "./state.js";
import { RemovedIncarnations } from "./incarnations.js";
import { adaptiveSlotCount, DASK_SATURATION, smoothRoundTrip } from "./saturation.js";
import { Retirements } from "./retirement.js";
import { WorkStealing, type InFlight, type StealHost } from "./stealing.js";
import { checkTaskSpecs } from "./validate-specs.js";
import type { SchedulerEffects, SchedulerInput, SchedulerReply, WorkerLostOp } from "./inputs.js";

type Target = "runnable" | "released" | "forgotten";

const OK: SchedulerReply = Object.freeze({ ok: true });

/**
 * States of a task whose key a registering worker may bring along (register-worker's
 * `holding`): in memory elsewhere (one more replica), or still to compute or computing (its
 * result, taken instead of computing it: a worker the scheduler removed while it was alive
 * finished what it was given, as Dask's add_worker takes it). Any other key is freed on that
 * worker: an erred one has failed for its clients, and one the scheduler does not have is
 * nobody's.
 */
const HELD_KEY_TAKEN: ReadonlySet<TaskStateName> = new Set<TaskStateName>([
  "memory",
  "released",
  "waiting",
  "queued",
  "no-worker",
  "processing.assigned",
  "processing.stealing",
]);

/**
 * The scheduler's state and policies, sans I/O (after Dask's SchedulerState): stimuli in
 * (`handle`), instructions out (through `SchedulerEffects`). Deterministic: the same
 * stimuli in the same order give the same transitions and messages, which is what replay
 * and the simulator rely on. Task states move only through the compiled task machine.
 */
export class SchedulerCore implements PlacementContext, StealHost {
  state: SchedulerStateName = SCHEDULER.initial;
  readonly tasks = new Map<string, TaskRec>();
  readonly workers = new Map<string, WorkerRec>();
  readonly running: WorkerRec[] = [];
  readonly idle = new Set<WorkerRec>();
  readonly saturated = new Set<WorkerRec>();
  readonly idleTaskCount = new Set<WorkerRec>();
  readonly queued = new OrderedQueue<TaskRec>((a, b) => priorityLess(a.priority, b.priority), QUEUED_AT);
  readonly unrunnable = new Set<TaskRec>();
  readonly prefixes = new Map<string, PrefixRec>();
  readonly groups = new Map<string, GroupRec>();
  readonly clients = new Map<string, Set<TaskRec>>();
  totalNthreads = 0;
  /** Durations per prefix and the bandwidth, as learned so far; occupancies derive from them. */
  readonly estimates: Estimates;
  /** Tasks processing per prefix, over every worker (Dask's `_task_prefix_count_global`). */
  readonly prefixCount = new Map<PrefixRec, number>();
  /** Bytes every worker still has to fetch for what it processes (Dask's `_network_occ_global`). */
  networkBytes = 0;
  nAssigned = 0;
  generation = 0;
  /**
   * Assignment numbers (docs/protocol.md): the latest one given (TaskRec.attempt), and the
   * run they belong to, the time of the scheduler-start input that started this core.
   */
  attempts = 0;
  run = 0;
  now = 0;
  private workerOrder = 0;
  private readonly removedIncarnations = new RemovedIncarnations();
  private readonly recommendations: [TaskRec, Target][] = [];
  /**
   * Adaptive saturation, while a task-finished is handled: its worker and the report's `stop`
   * (the worker's clock), echoed by the first compute-task sent there in the same step
   * (`answers`), from which the worker measures its round trip.
   */
  private answering: WorkerRec | null = null;
  private answeringStop = 0;
  /** While a cancel-keys is handled: the reason every task it releases records. */
  private cancelledBy: WhyOf<"cancelled"> | undefined = undefined;
  /** Work stealing, when the config turns it on. */
  readonly stealing: WorkStealing | null;
  /** Workers retiring gracefully: their data being handed over (retire-worker). */
  readonly retirements: Retirements;

  private readonly fx: SchedulerEffects;

  constructor(
    readonly config: Config,
    fx: SchedulerEffects,
  ) {
    this.estimates = new Estimates(config);
    this.fx = fx;
    this.stealing = config.workStealing ? new WorkStealing(this, config) : null;
    this.retirements = new Retirements(this, (worker, op) => this.fx.toWorker(worker, op.op === "acquire-replicas" ? { ...op, run: this.run } : op));
  }

  /** Whether a balancing pass could move anything now (hosts feed `balance` when it does). */
  wantsBalance(): boolean {
    return this.stealing !== null && this.state === "running" && this.stealing.wantsBalance();
  }

  get queuing(): boolean {
    const saturation = this.config.workerSaturation;
    return saturation === "adaptive" || Number.isFinite(saturation);
  }

  /** Estimated seconds of work on every running worker together. */
  get totalOccupancy(): number {
    return this.estimates.occupancy(this.prefixCount, this.networkBytes);
  }

  /** The current transfer bandwidth estimate (bytes/s). */
  get bandwidth(): number {
    return this.estimates.bandwidth;
  }

  /** Shorthands for the lifecycle stimuli (hosts record them as inputs like any other). */
  start(t: number): SchedulerReply {
    return this.handle({ op: "scheduler-start", t });
  }

  close(t: number): SchedulerReply {
    return this.handle({ op: "scheduler-close", t });
  }

  handle(input: SchedulerInput): SchedulerReply {
    this.now = input.t;
    this.answering = null;
    switch (input.op) {
      case "scheduler-start":
        if (this.state === "starting") this.run = input.t;
        this.lifecycle("START");
        return OK;
      case "scheduler-close":
        this.lifecycle("CLOSE");
        this.lifecycle("CLOSED");
        return OK;
      case "update-graph":
        return this.updateGraph(input);
      case "release-keys":
        for (const key of input.keys) this.clientReleasesKey(input.client, key);
        break;
      case "cancel-keys":
        this.cancelKeys(input.client, input.keys);
        break;
      case "fire-and-forget":
        this.fireAndForget(input.keys);
        break;
      case "update-data": {
        const reply = this.updateData(input);
        if (!reply.ok) return reply;
        break;
      }
      case "client-join":
        if (!this.clients.has(input.client)) this.clients.set(input.client, new Set());
        break;
      case "client-leave":
        for (const ts of [...(this.clients.get(input.client) ?? [])]) this.clientReleasesKey(input.client, ts.key);
        this.clients.delete(input.client);
        break;
      case "register-worker":
        return this.registerWorker(input);
      case "unregister-worker":
        this.removeWorker(input.name, input.id, false, input.reason);
        break;
      case "worker-lost":
        this.removeWorker(input.name, input.id, true, input.reason);
        break;
      case "retire-worker":
        this.retireWorker(input.name, input.id, input.reason ?? "retired");
        break;
      case "task-finished":
        if (this.config.workerSaturation === "adaptive") this.roundTripReported(input);
        this.taskFinished(input.worker, input.id, input.key, input.nbytes, input.stop - input.start, input.attempt, input.run);
        break;
      case "task-erred":
        this.taskErred(input.worker, input.id, input.key, input.error, input.attempt, input.run);
        break;
      case "add-keys":
        this.addKeys(input.worker, input.id, input.keys);
        break;
      case "missing-data":
        this.missingData(input.key, input.holder);
        break;
      case "steal-response":
        this.stealResponse(input);
        break;
      case "worker-metrics":
        this.workerMetrics(input);
        break;
      case "balance":
        this.stealing?.balance();
        break;
      case "host-metrics":
        // Evidence for the tools only: nothing changes, so nothing is drained either.
        return OK;
    }
    this.drain();
    this.queueSlotsMaybeOpened();
    this.retirements.progress();
    return OK;
  }

  /**
   * Every free-keys, wherever it is decided (here or in Retirements), carries the run and the
   * latest assignment number: the worker voids every older assignment of those keys. Built
   * whole here: a copy spread from a smaller op takes V8's slower path for every message.
   */
  freeKeys(worker: string, keys: string[]): void {
    const ws = this.workers.get(worker);
    if (ws !== undefined) {
      for (const key of keys) {
        const ts = this.tasks.get(key);
        if (ts !== undefined && !ts.whoHas.has(ws)) (ts.strayFreedOn ??= new Set()).add(ws);
      }
    }
    this.fx.toWorker(worker, { op: "free-keys", keys, run: this.run, attempt: this.attempts });
  }

  /** The scheduler names `ts` to `ws` (to compute, as an input, to copy): a copy there from now on is no stray. */
  namedTo(ts: TaskRec, ws: WorkerRec): void {
    if (ts.strayFreedOn !== null && ts.strayFreedOn.delete(ws) && ts.strayFreedOn.size === 0) ts.strayFreedOn = null;
  }

  // ---- estimates -----------------------------------------------------------------------

  taskDuration(ts: TaskRec): number {
    return this.estimates.prefixDuration(ts.prefix);
  }

  dataSize(ts: TaskRec): number {
    return ts.nbytes >= 0 ? ts.nbytes : this.config.defaultDataSize;
  }

  private learnDuration(prefix: PrefixRec, duration: number): void {
    if (this.estimates.learnDuration(prefix, duration)) this.estimatesChanged(prefix);
    else this.stealing?.durationChanged(prefix);
  }

  /**
   * A worker's report (Dask's heartbeat_worker): its bandwidth estimate moves the
   * scheduler's, and each task still executing tells its prefix how long it has run.
   */
  private workerMetrics(op: WorkerMetricsOp): void {
    const ws = this.liveWorker(op.worker, op.id);
    if (ws === undefined) return;
    this.estimates.learnBandwidth(op.bandwidth, this.workers.size);
    const changed = new Set<PrefixRec>();
    for (const [key, seconds] of op.executing) {
      const ts = this.tasks.get(key);
      if (ts === undefined) continue;
      const before = this.estimates.prefixDuration(ts.prefix);
      this.estimates.learnExecTime(ts.prefix, seconds);
      if (this.estimates.prefixDuration(ts.prefix) !== before) changed.add(ts.prefix);
    }
    for (const prefix of changed) this.estimatesChanged(prefix);
    for (const other of this.running) this.checkIdleSaturated(other);
  }

  /** A prefix's estimate changed: its stealable tasks are levelled again, and loads re-checked. */
  private estimatesChanged(prefix: PrefixRec): void {
    this.stealing?.durationChanged(prefix);
    for (const ws of this.running) if (ws.prefixCount.has(prefix)) this.checkIdleSaturated(ws);
  }

  // ---- client stimuli ------------------------------------------------------------------

  private updateGraph(op: UpdateGraphOp): SchedulerReply {
    const fresh = op.tasks.filter((spec) => {
      const ts = this.tasks.get(spec.key);
      return ts === undefined || ts.state === "forgotten";
    });
    let depsOf: Map<string, string[]>;
    try {
      checkTaskSpecs(op.tasks);
      depsOf = new Map(fresh.map((s) => [s.key, s.deps] as const));
      validateGraph(depsOf, (key) => this.tasks.has(key));
      this.checkFunctions(fresh);
    } catch (err) {
      if (err instanceof NatschedError) {
        const keys = (err as { keys?: string[] }).keys;
        return { ok: false, error: { name: err.name, message: err.message, code: err.code, ...(keys ? { keys } : {}) } };
      }
      throw err;
    }
    this.generation += 1;
    // The graph's own edges: dependencies on tasks already known are not ordered here.
    let external = false;
    for (const spec of fresh) for (const d of spec.deps) if (!depsOf.has(d)) external = true;
    const priorities = graphOrder(external ? new Map(fresh.map((s) => [s.key, s.deps.filter((d) => depsOf.has(d))] as const)) : depsOf);
    const created: TaskRec[] = [];
    for (const spec of fresh) created.push(this.createTask(spec, priorities.get(spec.key) ?? 0));
    for (let i = 0; i < fresh.length; i++) this.linkDependencies(created[i]!, fresh[i]!);
    const clientTasks = this.clientSet(op.client);
    // Everything that may now run, made runnable in priority order (as Dask's update_graph):
    // the new tasks, and wanted ones released before (a key computed again).
    const runnable = created.slice();
    const fromBefore = new Set<TaskRec>();
    for (const key of op.wants) {
      const ts = this.tasks.get(key);
      if (ts === undefined) continue;
      (ts.whoWants ??= new Set()).add(op.client);
      clientTasks.add(ts);
      if (ts.state !== "released") this.reportToClient(op.client, ts);
      else if (!depsOf.has(key) && !fromBefore.has(ts)) {
        fromBefore.add(ts);
        runnable.push(ts);
      }
    }
    sortByPriority(runnable);
    for (const ts of runnable) this.recommend(ts, "runnable");
    this.drain();
    this.queueSlotsMaybeOpened();
    return OK;
  }

  private checkFunctions(specs: TaskSpec[]): void {
    if (this.running.length === 0) return;
    for (const spec of specs) {
      if (!this.running.some((ws) => ws.functions.has(spec.func))) throw new UnknownFunctionError(spec.func, spec.key);
    }
  }

  private createTask(spec: TaskSpec, order: number): TaskRec {
    const prefixName = keySplit(spec.key);
    const groupName = keySplitGroup(spec.key);
    let prefix = this.prefixes.get(prefixName);
    if (prefix === undefined) this.prefixes.set(prefixName, (prefix = new PrefixRec(prefixName, this.estimates.initialAverage(prefixName))));
    let group = this.groups.get(groupName);
    if (group === undefined) this.groups.set(groupName, (group = new GroupRec(groupName, prefix)));
    const ts = new TaskRec(spec.key, prefix, group);
    ts.bornAt = this.attempts;
    group.size += 1;
    group.pending += 1; // a new task is released
    ts.func = spec.func;
    ts.args = spec.args;
    ts.priority = [-(spec.priority ?? 0), this.generation, order];
    if (spec.retries !== undefined) ts.retries = spec.retries;
    if (spec.workers !== undefined || spec.hosts !== undefined || spec.resources !== undefined) {
      ts.restrictions = {
        ...(spec.workers !== undefined ? { workers: spec.workers } : {}),
        ...(spec.hosts !== undefined ? { hosts: spec.hosts } : {}),
        ...(spec.resources !== undefined ? { resources: spec.resources } : {}),
        allowOtherWorkers: spec.allowOtherWorkers ?? false,
      };
    }
    this.tasks.set(spec.key, ts);
    return ts;
  }

  private linkDependencies(ts: TaskRec, spec: TaskSpec): void {
    const deps = spec.deps;
    if (deps.length === 0) return;
    for (const depKey of deps.length === 1 ? deps : new Set(deps)) {
      const dts = this.tasks.get(depKey)!;
      ts.dependencies.push(dts);
      dts.addDependent(ts);
      ts.group.dependencies.add(dts.group); // its own group too, as Dask does: a group feeding itself is not root-ish
      (dts.waiters ??= new Set()).add(ts);
    }
  }

  private clientSet(client: string): Set<TaskRec> {
    let set = this.clients.get(client);
    if (set === undefined) this.clients.set(client, (set = new Set()));
    return set;
  }

  /** Tell a client about a key it just asked for that is already done. */
  private reportToClient(client: string, ts: TaskRec): void {
    const report = doneReport(ts);
    if (report !== null) this.fx.toClient(client, report);
  }

  /**
   * A client cancels keys (Dask's Client.cancel without force): its wants of the keys named
   * go, as with release-keys, and every task released meanwhile (the keys, and what only they
   * needed) is recorded as cancelled by it. A task processing is freed on its worker, which
   * drops what it computes. Keys it does not want are left alone; so is a task another client
   * wants or another task still needs: Dask's cancel takes only this client's wants, unless
   * forced, which natsched does not offer.
   */
  private cancelKeys(client: string, keys: readonly string[]): void {
    this.cancelledBy = { rule: "cancelled", client };
    try {
      for (const key of keys) this.clientReleasesKey(client, key);
      this.drain();
    } finally {
      this.cancelledBy = undefined;
    }
  }

  /**
   * Dask's fire_and_forget: each key not done yet is wanted on behalf of nobody until it is
   * (forgetDone drops that want), so it and what it needs run even after every client let go.
   */
  private fireAndForget(keys: readonly string[]): void {
    for (const key of keys) {
      const ts = this.tasks.get(key);
      if (ts === undefined || ts.state === "memory" || ts.state === "erred" || ts.state === "forgotten") continue;
      (ts.whoWants ??= new Set()).add(FIRE_AND_FORGET);
      // Kept only for its dependents until now (a raw client may name any key): it must run.
      if (ts.state === "released") this.recommend(ts, "runnable");
    }
  }

  /** A task is done (in memory or erred): fire-and-forget no longer wants it. */
  private forgetDone(ts: TaskRec): void {
    if (ts.whoWants === null || !ts.whoWants.delete(FIRE_AND_FORGET)) return;
    if (ts.whoWants.size === 0) ts.whoWants = null;
  }

  private clientReleasesKey(client: string, key: string): void {
    const ts = this.tasks.get(key);
    if (ts === undefined || ts.whoWants === null || !ts.whoWants.delete(client)) return;
    this.clients.get(client)?.delete(ts);
    if (ts.whoWants.size > 0) return;
    ts.whoWants = null;
    if (ts.waiters === null || ts.waiters.size === 0) this.recommend(ts, "released");
  }

  /**
   * Data a client stored on workers itself (scatter). Scatter creates keys and never
   * overwrites them, whoever asks: an entry whose key is new is created in memory on the
   * workers named (Dask's update_data); one whose key is in memory on every worker named only
   * adds the client's want (the same value scattered again under its content key); anything
   * else is refused. An `existing` entry (the worker already had the key, so the client stored
   * nothing there) never creates a key. All or nothing: one refused entry refuses the op
   * (KeyExistsError naming the keys), nothing changes, and the copies the op says were just
   * stored are freed where nothing here accounts for them. A new key must name at least one
   * worker this scheduler has (the one it was stored on left meanwhile, or the client made it
   * up): in memory nowhere, its futures would wait for ever; the op is refused with NO_WORKERS.
   */
  private updateData(op: UpdateDataOp): SchedulerReply {
    const refused: string[] = [];
    const homeless: string[] = [];
    for (const entry of op.data) {
      if (!this.scatterAccepted(entry)) refused.push(entry.key);
      else if (!this.tasks.has(entry.key) && !entry.workers.some((name) => this.workers.has(name))) homeless.push(entry.key);
    }
    if (refused.length > 0 || homeless.length > 0) {
      this.freeRefusedScatter(op);
      const error = homeless.length > 0 ? noHolderError([...new Set(homeless)]) : new KeyExistsError([...new Set(refused)], "update-data");
      return { ok: false, error: { name: error.name, message: error.message, code: error.code, keys: error.keys } };
    }
    const clientTasks = this.clientSet(op.client);
    const created = new Set<TaskRec>();
    const confirm = new Map<string, DepInfo[]>();
    for (const { key, nbytes, workers } of op.data) {
      let ts = this.tasks.get(key);
      const shared = ts !== undefined && !created.has(ts);
      if (ts === undefined) {
        ts = this.createTask({ key, func: "", args: [], deps: [] }, 0);
        ts.func = null;
        created.add(ts);
      }
      (ts.whoWants ??= new Set()).add(op.client);
      clientTasks.add(ts);
      if (shared) {
        this.move(ts, "DATA", { rule: "scatter-shared", client: op.client });
        this.reportToClient(op.client, ts);
        continue;
      }
      ts.nbytes = nbytes;
      const holders = workers.map((w) => this.workers.get(w)).filter((ws): ws is WorkerRec => ws !== undefined);
      for (const ws of holders) {
        if (ts.whoHas.has(ws)) continue; // named twice
        this.addReplica(ts, ws);
        let keys = confirm.get(ws.name);
        if (keys === undefined) confirm.set(ws.name, (keys = []));
        keys.push({ key, nbytes, holders: [ws.name] });
      }
      this.settle(ts);
      this.move(ts, "DATA", { rule: "scatter" });
      this.dataArrived(ts);
    }
    // Each worker named is asked to confirm what it is now counted for: an acquire-replicas
    // naming itself as the holder confirms its copy (add-keys), or, when it has none (the
    // client never stored it there, or stored it on an earlier incarnation of that name), it
    // says missing-data and the key is lost at once, instead of a client's gather asking a
    // holder that will never deliver.
    for (const [worker, keys] of confirm) this.fx.toWorker(worker, { op: "acquire-replicas", keys, run: this.run });
    return OK;
  }

  /** Whether an update-data entry may be applied (see updateData). */
  private scatterAccepted(entry: UpdateDataOp["data"][number]): boolean {
    const ts = this.tasks.get(entry.key);
    if (ts === undefined || ts.state === "forgotten") return entry.existing !== true;
    if (ts.state !== "memory" || entry.workers.length === 0) return false;
    for (const name of entry.workers) {
      const ws = this.workers.get(name);
      if (ws === undefined || !ts.whoHas.has(ws)) return false;
    }
    return true;
  }

  /**
   * A refused update-data: each copy it says was just stored (entries not `existing`) is
   * freed on its worker, unless the scheduler has a reason for that worker to have the key
   * (a holder, computing it, a task there needing it, a retirement handing it over).
   */
  private freeRefusedScatter(op: UpdateDataOp): void {
    const byWorker = new Map<string, string[]>();
    for (const { key, workers, existing } of op.data) {
      if (existing === true) continue;
      const ts = this.tasks.get(key);
      for (const name of workers) {
        const ws = this.workers.get(name);
        if (ws === undefined || (ts !== undefined && this.accountsFor(ts, ws))) continue;
        let keys = byWorker.get(name);
        if (keys === undefined) byWorker.set(name, (keys = []));
        if (!keys.includes(key)) keys.push(key);
      }
    }
    for (const [worker, keys] of byWorker) this.freeKeys(worker, keys);
  }

  /** The scheduler has a reason for `ws` to have `ts`: it holds it, computes it, needs it, or is handed it. */
  private accountsFor(ts: TaskRec, ws: WorkerRec): boolean {
    return ts.whoHas.has(ws) || ts.processingOn === ws || ws.needsWhat.has(ts) || this.retirements.isRecipient(ts, ws);
  }

  // ---- worker stimuli ------------------------------------------------------------------

  private registerWorker(op: RegisterWorkerOp): SchedulerReply {
    const existing = this.workers.get(op.name);
    // The answer names the run, so the worker knows which run's instructions to take.
    const registered: SchedulerReply = { ok: true, run: this.run };
    if (existing !== undefined && existing.id !== op.id) {
      const why = this.removedIncarnations.has(op.name, op.id)
        ? `incarnation ${op.id} was removed and ${existing.id} has joined since`
        : op.started !== undefined && existing.started !== null && op.started < existing.started
          ? `incarnation ${op.id} started before ${existing.id}, which runs`
          : null;
      if (why !== null) {
        const error = new ForbiddenError(`worker ${op.name}: ${why}; a registration of the older one (delivered late, or from a process that should have stopped) is refused`);
        return { ok: false, error: { name: error.name, message: error.message, code: error.code } };
      }
    }
    if (existing !== undefined && existing.id !== op.id) this.removeWorker(existing.name, existing.id, true, "replaced");
    else if (existing !== undefined) return registered;
    const ws = new WorkerRec(op.name, op.id, op.nthreads, op.host, op.resources, op.functions, this.workerOrder++, this.estimates);
    if (op.started !== undefined) ws.started = op.started;
    if (op.roundTrips === false) ws.noRoundTrips = true;
    if (typeof op.reportHold === "number" && op.reportHold > 0 && Number.isFinite(op.reportHold)) ws.reportHold = op.reportHold;
    this.workers.set(ws.name, ws);
    this.stealing?.addWorker(ws);
    this.workerLifecycle(ws, "START");
    this.running.push(ws);
    this.totalNthreads += ws.nthreads;
    // A Set: a worker of an old run may list every key it holds, and all of them are refused.
    const refused = new Set<string>();
    for (const { key, nbytes } of op.holding ?? []) {
      const ts = this.tasks.get(key);
      if (ts === undefined || !HELD_KEY_TAKEN.has(ts.state)) {
        refused.add(key);
        continue;
      }
      if (ts.state === "memory") {
        this.addReplica(ts, ws);
        continue;
      }
      ts.nbytes = nbytes;
      this.addReplica(ts, ws);
      const computing = ts.processingOn;
      this.settle(ts);
      if (computing !== null) {
        // The worker computing it must stop (Dask's cancel-compute): its assignment is void,
        // and so is a result of it already on its way (numbered before this).
        ts.attempt = ++this.attempts;
        this.freeKeys(computing.name, [key]);
      }
      this.move(ts, "DATA", { rule: "held-by-joining-worker", worker: ws.name, ...(computing !== null ? { computing: computing.name } : {}) });
      this.dataArrived(ts);
    }
    if (refused.size > 0) this.freeKeys(ws.name, [...refused]);
    // Whatever this incarnation was told before, the scheduler does not have it now (it is new,
    // or was removed while alive, or is from an earlier run): its assignments so far are void.
    // Sent after the free-keys of its holding (so the worker tells what it holds after those)
    // and before any assignment to it (numbered above, so kept).
    this.fx.toWorker(ws.name, { op: "void-assignments", run: this.run, attempt: this.attempts });
    for (const other of this.running) this.checkIdleSaturated(other);
    const unrunnable = [...this.unrunnable];
    sortByPriority(unrunnable);
    for (const ts of unrunnable) this.recommend(ts, "runnable");
    this.drain();
    this.queueSlotsMaybeOpened();
    this.retirements.progress();
    return registered;
  }

  /** The worker under this name, if it is the incarnation `id`: anything else is stale. */
  private liveWorker(name: string, id: string): WorkerRec | undefined {
    const ws = this.workers.get(name);
    return ws !== undefined && ws.id === id ? ws : undefined;
  }

  /**
   * Graceful retirement (Dask's retire_workers), asked by the worker itself or its host.
   * The worker leaves placement and stealing at once (lifecycle `closing`); every task
   * processing there, executing ones included, is placed afresh and freed on it (what it
   * is running finishes there and is dropped, as after a steal); the keys only it holds
   * are copied to running workers (Retirements), and close-worker follows. An unknown,
   * stale or already closing worker is ignored.
   */
  private retireWorker(name: string, id: string | undefined, reason: string): void {
    const ws = id === undefined ? this.workers.get(name) : this.liveWorker(name, id);
    if (ws === undefined || ws.state === "closing" || ws.state === "closed") return;
    const placed = this.running.includes(ws);
    this.workerLifecycle(ws, "CLOSE", { reason, rule: "retire" });
    if (placed) this.leavePlacement(ws);
    const freed: string[] = [];
    for (const ts of [...ws.processing]) {
      this.exitProcessing(ts);
      this.move(ts, "RELEASE", { rule: "worker-retiring", worker: name });
      this.recommend(ts, "runnable");
      freed.push(ts.key);
    }
    if (freed.length > 0) this.freeKeys(name, freed);
    this.retirements.begin(ws, reason);
    for (const other of this.running) this.checkIdleSaturated(other);
  }

  /** Out of the sets placement and stealing choose from. */
  private leavePlacement(ws: WorkerRec): void {
    this.running.splice(this.running.indexOf(ws), 1);
    this.idle.delete(ws);
    this.saturated.delete(ws);
    this.idleTaskCount.delete(ws);
    this.totalNthreads -= ws.nthreads;
  }

  private removeWorker(name: string, id: string, unexpected: boolean, reason: string): void {
    // Also when this incarnation has not (re)registered yet: a registration of it arriving later is from the past.
    this.removedIncarnations.add(name, id);
    const ws = this.liveWorker(name, id);
    if (ws === undefined) return;
    // A retiring worker already left placement; if it goes before its handover is done,
    // what only it held is lost as with any other worker.
    const placed = this.running.includes(ws);
    this.retirements.workerGone(ws);
    this.workerLifecycle(ws, "CLOSED", { reason });
    this.workers.delete(name);
    if (placed) this.leavePlacement(ws);
    for (const ts of [...ws.processing]) {
      this.exitProcessing(ts);
      if (unexpected) ts.suspicious += 1;
      if (ts.suspicious > this.config.allowedFailures) {
        const error: ErrorInfo = {
          name: "KilledWorker",
          message: `attempted to run task ${ts.key} on ${ts.suspicious} different workers, but all those workers died while running it (last: ${name})`,
          code: "TASK_FAILED",
        };
        this.fail(ts, error, { rule: "killed-worker", worker: name, suspicious: ts.suspicious });
      } else {
        this.move(ts, "RELEASE", { rule: "worker-left", worker: name });
        this.recommend(ts, "runnable");
      }
    }
    const fetchers = new Set<TaskRec>();
    for (const ts of [...ws.hasWhat]) {
      ts.removeHolder(ws);
      ws.hasWhat.delete(ts);
      if (ts.whoHas.size === 0 && ts.state === "memory") this.dataLost(ts, { rule: "worker-left", worker: name });
      else this.fetchersOf(ts, fetchers);
    }
    for (const dts of fetchers) this.resendCompute(dts);
    ws.nbytes = 0;
    this.stealing?.removeWorker(ws);
    for (const other of this.running) this.checkIdleSaturated(other);
  }

  /** Adaptive saturation: the worker's round trip sample (if any) joins its smoothed one, and this report will be answered with its `stop`. */
  private roundTripReported(op: TaskFinishedOp): void {
    const ws = this.liveWorker(op.worker, op.id);
    if (ws === undefined || ws.noRoundTrips) return;
    const sample = op.roundTrip;
    if (typeof sample === "number" && Number.isFinite(sample) && sample >= 0) ws.roundTrip = smoothRoundTrip(ws.roundTrip, sample);
    if (Number.isFinite(op.stop)) {
      this.answering = ws;
      // A report the worker held (config reportHold) is answered from when it left the worker.
      const held = op.held;
      this.answeringStop = typeof held === "number" && Number.isFinite(held) && held > 0 ? op.stop + held : op.stop;
    }
  }

  private taskFinished(worker: string, id: string, key: string, nbytes: number, duration: number, attempt: number | undefined, run: number | undefined): void {
    const ws = this.liveWorker(worker, id);
    const ts = this.tasks.get(key);
    // A report of an earlier run, delivered late: the worker dropped that run's work when it
    // entered this one, and vouched for what it holds as it registered again.
    if (ws === undefined || (run !== undefined && run !== this.run)) return;
    if (ts === undefined || ts.state === "released" || ts.state === "forgotten" || ts.state === "erred") {
      this.freeKeys(ws.name, [key]);
      return;
    }
    // The result of an assignment to an earlier record of the key (cancelled or released and
    // forgotten, then submitted again): that record's release freed the key on this worker, so
    // the copy it reports is gone or going; counting it would name a holder that holds nothing.
    if (attempt !== undefined && attempt <= ts.bornAt) return;
    // The result of an assignment superseded since (a copy delivered late or twice, or a result
    // of a worker removed while alive, which tells what it holds again: void-assignments): stale
    // as a result. Of a key in memory, though, the worker holds a copy: counted (or freed) as
    // an add-keys of it would be, or nobody would ever free it there.
    if (attempt !== undefined && attempt !== ts.attempt) {
      if (ts.state === "memory") this.addKeys(worker, id, [{ key, nbytes }]);
      return;
    }
    if (ts.state === "memory") {
      ts.nbytes = nbytes;
      this.addReplica(ts, ws);
      return;
    }
    if (ts.processingOn !== ws) {
      // A stale result: the scheduler took the task back from this worker and its
      // free-keys is on the way there, so the worker is about to drop what it reports.
      // Ignored, as Dask ignores a task-finished from a previous run (run_id).
      if (ts.state === "queued" || ts.state === "no-worker") this.freeKeys(ws.name, [key]);
      return;
    }
    ts.nbytes = nbytes;
    ts.group.outputBytes += Math.max(nbytes, 0);
    ts.group.outputCount += 1;
    this.settle(ts);
    this.learnDuration(ts.prefix, duration);
    this.addReplica(ts, ws);
    this.move(ts, "FINISH", undefined);
    this.dataArrived(ts);
  }

  private taskErred(worker: string, id: string, key: string, error: ErrorInfo, attempt: number | undefined, run: number | undefined): void {
    const ws = this.liveWorker(worker, id);
    const ts = this.tasks.get(key);
    // A report of an earlier run, delivered late: the worker dropped that run's work when it
    // entered this one, and vouched for what it holds as it registered again.
    if (ws === undefined || (run !== undefined && run !== this.run)) return;
    if (ts === undefined || (ts.processingOn !== ws && ts.erredOn !== ws && !ts.whoHas.has(ws))) {
      // A failure nothing here waits for from this worker (the task was released, computed
      // elsewhere or taken back meanwhile): the worker keeps failed tasks until freed, so
      // free it, as taskFinished does a result nobody wants. (A late copy of a report from a
      // worker that holds the key in memory since frees nothing: the scheduler counts it.)
      this.freeKeys(ws.name, [key]);
      return;
    }
    if (ts.processingOn !== ws || (attempt !== undefined && attempt !== ts.attempt)) return;
    this.exitProcessing(ts);
    if (error.code === EXECUTOR_LOST) {
      this.executorLost(ts, ws, error);
      return;
    }
    if (ts.retries > 0) {
      this.retry(ts, ws, error);
      return;
    }
    // The worker keeps the failed task until told to free it: remembered, so that it is.
    ts.erredOn = ws;
    this.fail(ts, error, { worker });
  }

  /**
   * Its function failed and it has retries left (Dask's retries in stimulus_task_erred):
   * counted down and run again instead of erring. Its dependents keep waiting for it.
   */
  private retry(ts: TaskRec, ws: WorkerRec, error: ErrorInfo): void {
    ts.retries -= 1;
    ts.retried += 1;
    // The worker holds the failure until freed: freed first, so the task can run there again.
    this.freeKeys(ws.name, [ts.key]);
    this.move(ts, "RELEASE", { rule: "retry", worker: ws.name, try: ts.retried, left: ts.retries, message: error.message });
    this.recommend(ts, "runnable");
  }

  /**
   * The executor thread running `ts` died under it (the worker lives on): counted like a
   * worker death for that task (removeWorker), so a task that kills every thread it runs on
   * ends as KilledWorker after allowedFailures retries instead of looping forever.
   */
  private executorLost(ts: TaskRec, ws: WorkerRec, error: ErrorInfo): void {
    ts.suspicious += 1;
    if (ts.suspicious > this.config.allowedFailures) {
      ts.erredOn = ws;
      const killed: ErrorInfo = {
        name: "KilledWorker",
        message: `attempted to run task ${ts.key} ${ts.suspicious} times, but the worker or executor thread running it died each time (last: a thread of ${ws.name}: ${error.message})`,
        code: "TASK_FAILED",
      };
      this.fail(ts, killed, { rule: "killed-worker", worker: ws.name, suspicious: ts.suspicious });
      return;
    }
    // The worker holds the failure until freed: freed first, so the task can run there again.
    this.freeKeys(ws.name, [ts.key]);
    this.move(ts, "RELEASE", { rule: "executor-lost", worker: ws.name });
    this.recommend(ts, "runnable");
  }

  private addKeys(worker: string, id: string, keys: { key: string; nbytes: number }[]): void {
    const ws = this.liveWorker(worker, id);
    if (ws === undefined) return;
    const unwanted: string[] = [];
    for (const { key } of keys) {
      const ts = this.tasks.get(key);
      // A copy it was told to free, reported before that free-keys reached it: it drops it.
      if (ts !== undefined && ts.strayFreedOn !== null && ts.strayFreedOn.has(ws)) continue;
      if (ts !== undefined && ts.state === "memory") this.addReplica(ts, ws);
      // Asked to compute it meanwhile: it will answer the compute-task from this copy.
      else if (ts === undefined || ts.processingOn !== ws) unwanted.push(key);
    }
    if (unwanted.length > 0) this.freeKeys(ws.name, unwanted);
  }

  private missingData(key: string, holder: string): void {
    const ts = this.tasks.get(key);
    const ws = this.workers.get(holder);
    if (ts === undefined || ws === undefined || !ts.whoHas.has(ws)) return;
    ts.removeHolder(ws);
    ws.hasWhat.delete(ts);
    ws.nbytes -= Math.max(ts.nbytes, 0);
    // The report may be older than the holder's copy: it can have fetched the key again since
    // (its add-keys overtaking the report). Uncounted, that copy would never be freed, so the
    // holder is told to drop whatever it has; a task of its own still reading it keeps it.
    if (ts.processingOn !== ws) this.freeKeys(ws.name, [key]);
    if (ts.whoHas.size === 0 && ts.state === "memory") {
      this.dataLost(ts, { rule: "missing-data", worker: holder });
      return;
    }
    const fetchers = new Set<TaskRec>();
    this.fetchersOf(ts, fetchers);
    for (const dts of fetchers) this.resendCompute(dts);
  }

  /** Tasks processing on a worker that must fetch `ts` (in memory), which may only know holders that are gone. */
  private fetchersOf(ts: TaskRec, into: Set<TaskRec>): void {
    if (ts.state !== "memory") return;
    for (const dts of ts.dependents) if (dts.processingOn !== null && !ts.whoHas.has(dts.processingOn)) into.add(dts);
  }

  /**
   * Send a processing task's compute-task again, with the current holders of its inputs:
   * the worker refreshes where to fetch them from (a holder it was told of died, or did not
   * have it), rather than wait for ever on a transfer nobody can serve.
   */
  private resendCompute(ts: TaskRec): void {
    const ws = ts.processingOn;
    if (ws === null) return;
    for (const dts of ts.dependencies) if (dts.strayFreedOn !== null) this.namedTo(dts, ws);
    this.fx.toWorker(ws.name, this.computeTaskOp(ts, this.taskDuration(ts)));
  }

  // ---- transitions ---------------------------------------------------------------------

  private recommend(ts: TaskRec, target: Target): void {
    this.recommendations.push([ts, target]);
  }

  private drain(): void {
    const recs = this.recommendations;
    for (let i = 0; i < recs.length; i++) {
      const [ts, target] = recs[i]!;
      if (target === "runnable") this.makeRunnable(ts);
      else if (target === "released") this.release(ts);
      else this.forget(ts);
    }
    recs.length = 0;
  }

  private move(ts: TaskRec, event: TaskEvent["type"], why: TaskWhy | undefined): void {
    const from = ts.state;
    const to = TASK.next(from, event);
    if (to === undefined) throw new Error(`task ${ts.key}: ${event} is not accepted in state ${from}`);
    if (from === "processing.stealing" && this.stealing !== null) {
      // Leaving a steal by anything but its answer aborts the request: say which, and why it was made.
      const aborted = this.stealing.takeAborted(ts);
      // Only the decisions of this core's other edges out of processing.stealing reach here (machines/reasons.ts, AbortedBy).
      if (aborted !== undefined) why = { ...why, steal: "aborted", ...aborted.why } as StealAbortedWhy;
    }
    ts.state = to;
    if (from === "released" || from === "waiting") ts.group.pending -= 1;
    if (to === "released" || to === "waiting") ts.group.pending += 1;
    this.fx.transition("task", ts.key, event, from, to, why);
  }

  /** Released or waiting task: wait for its dependencies, or decide where it runs. */
  private makeRunnable(ts: TaskRec): void {
    const state = ts.state;
    if (state !== "released" && state !== "waiting" && state !== "queued" && state !== "no-worker") return;
    if (ts.func === null) {
      // Scattered data whose every holder is gone has nothing to be recomputed from.
      if (state === "released" && (ts.whoWants !== null || (ts.waiters !== null && ts.waiters.size > 0))) {
        this.fail(ts, dataLostError(ts.key), { rule: "data-lost" });
      }
      return;
    }
    if (state === "released") {
      if (ts.whoWants === null && (ts.waiters === null || ts.waiters.size === 0)) {
        // Nobody needs it (any more: what it waited for may have been lost and recomputed
        // meanwhile, dataLost): it no longer holds on to its dependencies either.
        ts.waitingOn = null;
        for (const dts of ts.dependencies) this.doneWaiting(dts, ts);
        this.maybeForget(ts);
        return;
      }
      for (const dts of ts.dependencies) {
        if (dts.state === "erred") {
          this.failDependent(ts, dts.exceptionBlame ?? dts);
          return;
        }
        // A waiter of every dependency, those in memory too: a task run again (its result
        // was lost) must keep them from being released before it runs (Dask's
        // _transition_released_waiting does the same).
        (dts.waiters ??= new Set()).add(ts);
        if (dts.state !== "memory") {
          (ts.waitingOn ??= new Set()).add(dts);
          if (dts.state === "released") this.recommend(dts, "runnable");
        }
      }
    }
    if (ts.waitingOn !== null && ts.waitingOn.size > 0) {
      if (state !== "waiting") this.move(ts, "WAIT", undefined);
      return;
    }
    ts.waitingOn = null;
    let decision: Decision;
    const rootish = isRootishGroup(this, ts);
    const kept = rootish ? inputsKeptLocal(this, ts) : null;
    if (rootish && kept === null) {
      if (this.queuing) {
        decision = decideRootishQueuing(this, ts);
        if (decision.worker === null) {
          if (state !== "queued") {
            this.unrunnable.delete(ts);
            this.queued.push(ts);
            this.move(ts, "QUEUE", undefined);
          }
          return;
        }
      } else {
        decision = decideRootishCoassign(this, ts);
      }
    } else {
      const placed = decideNonRootish(this, ts);
      decision = kept === null ? placed : keptWithInputs(placed, kept);
    }
    if (decision.worker === null) {
      if (state !== "no-worker") {
        this.queued.remove(ts);
        this.unrunnable.add(ts);
        this.move(ts, "NO_WORKER", decision.why);
      }
      return;
    }
    this.assign(ts, decision.worker, decision.why);
  }

  private assign(ts: TaskRec, ws: WorkerRec, why: PlacementWhy | StealAnswerWhy, event: "ASSIGN" | "STEAL_CONFIRM" = "ASSIGN"): void {
    this.queued.remove(ts);
    this.unrunnable.delete(ts);
    const duration = this.taskDuration(ts);
    ts.processingOn = ws;
    ws.processing.add(ts);
    addCount(ws.prefixCount, ts.prefix, 1);
    addCount(this.prefixCount, ts.prefix, 1);
    for (const dts of ts.dependencies) {
      if (!dts.whoHas.has(ws)) this.needReplica(ws, dts);
      if (dts.strayFreedOn !== null) this.namedTo(dts, ws);
    }
    if (ts.strayFreedOn !== null) this.namedTo(ts, ws);
    this.nAssigned += 1;
    ts.attempt = ++this.attempts;
    this.move(ts, event, { worker: ws.name, ...why });
    this.checkIdleSaturated(ws);
    this.stealing?.put(ts);
    const op = this.computeTaskOp(ts, duration);
    if (this.answering === ws) {
      op.answers = this.answeringStop;
      this.answering = null;
    }
    this.fx.toWorker(ws.name, op);
  }

  /** The compute-task of a processing task's current assignment (sent by assign, and again by resendCompute). */
  computeTaskOp(ts: TaskRec, duration: number): ComputeTaskOp {
    const op: ComputeTaskOp = {
      op: "compute-task",
      key: ts.key,
      func: ts.func!,
      args: ts.args,
      deps: ts.dependencies.map((dts) => ({ key: dts.key, nbytes: dts.nbytes, holders: names(dts.whoHas) })),
      priority: ts.priority,
      duration,
      run: this.run,
      attempt: ts.attempt,
    };
    // Its dependents wait on its report: the worker must not hold it (config reportHold).
    if (ts.dependents.size > 0) op.prompt = true;
    return op;
  }

  /** The steal-request for a task in processing.stealing: it targets the assignment the victim holds. */
  stealRequestOp(ts: TaskRec, requestId: string): StealRequestOp {
    return { op: "steal-request", key: ts.key, requestId, run: this.run, attempt: ts.attempt };
  }

  private exitProcessing(ts: TaskRec): void {
    const ws = ts.processingOn;
    if (ws === null) return;
    // Before leaving `processing`: an empty worker's occupancy is reset to exactly 0.
    for (const dts of ts.dependencies) this.replicaNoLongerNeeded(ws, dts);
    ws.processing.delete(ts);
    addCount(ws.prefixCount, ts.prefix, -1);
    addCount(this.prefixCount, ts.prefix, -1);
    ts.processingOn = null;
    ts.stealRequest = null;
    this.stealing?.exitProcessing(ts);
    this.checkIdleSaturated(ws);
  }

  /** Take a task out of processing, the queue and the no-worker set: it is about to be done. */
  private settle(ts: TaskRec): void {
    this.exitProcessing(ts);
    this.queued.remove(ts);
    this.unrunnable.delete(ts);
    ts.waitingOn = null;
  }

  /** Bytes `ws` has to fetch changed by `delta` (a transfer booked or no longer needed). */
  private adjustNetwork(ws: WorkerRec, delta: number): void {
    ws.networkBytes += delta;
    this.networkBytes += delta;
    // Byte counts are whole numbers, but guard the empty case exactly anyway.
    if (ws.needsWhat.size === 0) ws.networkBytes = 0;
  }

  private addReplica(ts: TaskRec, ws: WorkerRec): void {
    if (ts.whoHas.has(ws)) return;
    ts.addHolder(ws);
    ws.hasWhat.add(ts);
    ws.nbytes += Math.max(ts.nbytes, 0);
    const need = ws.needsWhat.get(ts);
    if (need !== undefined) {
      ws.needsWhat.delete(ts);
      this.adjustNetwork(ws, -need.bytes);
      this.checkIdleSaturated(ws);
    }
  }

  /** A task processing on `ws` needs `dts` moved there: book the transfer, once per dependency. */
  private needReplica(ws: WorkerRec, dts: TaskRec): void {
    const need = ws.needsWhat.get(dts);
    if (need !== undefined) {
      need.count += 1;
      return;
    }
    const bytes = this.dataSize(dts);
    ws.needsWhat.set(dts, { count: 1, bytes });
    this.adjustNetwork(ws, bytes);
  }

  private replicaNoLongerNeeded(ws: WorkerRec, dts: TaskRec): void {
    const need = ws.needsWhat.get(dts);
    if (need === undefined) return;
    need.count -= 1;
    if (need.count > 0) return;
    ws.needsWhat.delete(dts);
    this.adjustNetwork(ws, -need.bytes);
  }

  /** A task's result is now in memory: notify clients, wake dependents, free what is done. */
  private dataArrived(ts: TaskRec): void {
    this.forgetDone(ts);
    if (ts.whoWants !== null) for (const client of ts.whoWants) this.reportToClient(client, ts);
    const ready: TaskRec[] = [];
    for (const dts of ts.dependents) {
      if (dts.waitingOn !== null && dts.waitingOn.delete(ts) && dts.waitingOn.size === 0 && dts.state === "waiting") {
        ready.push(dts);
      }
    }
    if (ready.length > 1) sortByPriority(ready);
    for (const dts of ready) this.recommend(dts, "runnable");
    for (const dts of ts.dependencies) this.doneWaiting(dts, ts);
    if (ts.whoWants === null && (ts.waiters === null || ts.waiters.size === 0)) this.recommend(ts, "released");
  }

  /** `dependent` no longer needs `dts`: release `dts` if nobody else does. */
  private doneWaiting(dts: TaskRec, dependent: TaskRec): void {
    if (dts.waiters === null || !dts.waiters.delete(dependent)) return;
    if (dts.waiters.size === 0) {
      dts.waiters = null;
      if (dts.whoWants === null) this.recommend(dts, "released");
    }
  }

  /** Data lost with the only workers that held it: recompute it if anything needs it. */
  private dataLost(ts: TaskRec, why: WhyOf<"worker-left" | "missing-data">): void {
    this.move(ts, "RELEASE", why);
    for (const dts of ts.dependents) {
      if (dts.state === "processing.assigned" || dts.state === "processing.stealing" || dts.state === "no-worker") {
        this.recommend(dts, "released");
        (ts.waiters ??= new Set()).add(dts);
      } else if (dts.state === "waiting" || dts.state === "queued") {
        (dts.waitingOn ??= new Set()).add(ts);
        (ts.waiters ??= new Set()).add(dts);
        if (dts.state === "queued") {
          this.queued.remove(dts);
          this.move(dts, "RELEASE", why);
          this.recommend(dts, "runnable");
        }
      }
    }
    if (ts.whoWants !== null || (ts.waiters !== null && ts.waiters.size > 0)) this.recommend(ts, "runnable");
    else this.maybeForget(ts);
  }

  private release(ts: TaskRec): void {
    const state = ts.state;
    if (state === "forgotten" || state === "released") {
      if (state === "released") this.maybeForget(ts);
      return;
    }
    const stillNeeded = ts.whoWants !== null || (ts.waiters !== null && ts.waiters.size > 0);
    if (state === "memory") {
      if (stillNeeded) return;
      const holders = ts.whoHas;
      for (const ws of holders) {
        ws.hasWhat.delete(ts);
        ws.nbytes -= Math.max(ts.nbytes, 0);
        this.freeKeys(ws.name, [ts.key]);
      }
      ts.clearHolders();
      // Told to free it: a late copy of an add-keys from them is stale (TaskRec.strayFreedOn).
      // The holders' set, which the task no longer needs, is that list (no allocation).
      if (ts.strayFreedOn === null) ts.strayFreedOn = holders as Set<WorkerRec>;
      else for (const ws of holders) ts.strayFreedOn.add(ws);
      this.move(ts, "RELEASE", this.cancelledBy);
      this.maybeForget(ts);
      return;
    }
    if (state === "processing.assigned" || state === "processing.stealing") {
      const ws = ts.processingOn!;
      this.exitProcessing(ts);
      this.freeKeys(ws.name, [ts.key]);
    }
    this.queued.remove(ts);
    this.unrunnable.delete(ts);
    ts.waitingOn = null;
    this.move(ts, "RELEASE", state === "erred" ? (this.freeErred(ts) ?? this.cancelledBy) : this.cancelledBy);
    if (stillNeeded) {
      this.recommend(ts, "runnable");
      return;
    }
    // Nobody needs it: it no longer holds on to its dependencies either.
    for (const dts of ts.dependencies) this.doneWaiting(dts, ts);
    this.maybeForget(ts);
  }

  private maybeForget(ts: TaskRec): void {
    if (ts.whoWants === null && ts.dependents.size === 0 && (ts.waiters === null || ts.waiters.size === 0)) {
      this.recommend(ts, "forgotten");
    }
  }

  private forget(ts: TaskRec): void {
    if (ts.state !== "released" && ts.state !== "erred") return;
    if (ts.whoWants !== null || ts.dependents.size > 0) return;
    if (ts.state === "erred") this.move(ts, "RELEASE", this.freeErred(ts) ?? this.cancelledBy);
    this.move(ts, "FORGET", undefined);
    this.tasks.delete(ts.key);
    ts.group.size -= 1;
    for (const dts of ts.dependencies) {
      dts.removeDependent(ts);
      dts.waiters?.delete(ts);
      if (dts.whoWants === null && dts.dependents.size === 0) {
        if (dts.state === "memory") this.recommend(dts, "released");
        else if (dts.state === "released" || dts.state === "erred") this.recommend(dts, "forgotten");
      }
    }
  }

  /**
   * An erred task is being released: free it on the worker it erred on (Dask's
   * `_transition_erred_released`), which otherwise keeps the failed task for ever and
   * answers a later compute-task of the key with the old error. The free-keys carries the
   * current assignment number, so any later assignment of the key is newer than it
   * (docs/protocol.md, "Assignment numbers"). The reasons of the RELEASE, or undefined.
   */
  private freeErred(ts: TaskRec): WhyOf<"free-erred"> | undefined {
    const ws = ts.erredOn;
    if (ws === null) return undefined;
    ts.erredOn = null;
    // A worker gone since (or replaced by a new incarnation) took the failed task with it.
    if (this.workers.get(ws.name) !== ws) return { rule: "free-erred", worker: ws.name, gone: true };
    this.freeKeys(ws.name, [ts.key]);
    return { rule: "free-erred", worker: ws.name, attempt: this.attempts };
  }

  private fail(ts: TaskRec, error: ErrorInfo, why: WhyOf<"killed-worker" | "data-lost" | "task-erred">): void {
    ts.exception = error;
    ts.exceptionBlame = null;
    this.queued.remove(ts);
    this.unrunnable.delete(ts);
    this.move(ts, "ERR", why);
    this.afterErred(ts);
  }

  private failDependent(ts: TaskRec, blame: TaskRec): void {
    if (ts.state === "memory" || ts.state === "erred" || ts.state === "forgotten") return;
    const ws = ts.processingOn;
    if (ws !== null) {
      this.exitProcessing(ts);
      // Its worker must drop it too: it may be waiting on inputs that will never come.
      this.freeKeys(ws.name, [ts.key]);
    }
    this.queued.remove(ts);
    this.unrunnable.delete(ts);
    ts.exceptionBlame = blame;
    this.move(ts, "ERR", { blame: blame.key });
    this.afterErred(ts);
  }

  private afterErred(ts: TaskRec): void {
    this.forgetDone(ts);
    if (ts.whoWants !== null) for (const client of ts.whoWants) this.reportToClient(client, ts);
    ts.waitingOn = null;
    for (const dts of ts.dependencies) this.doneWaiting(dts, ts);
    const blame = ts.exceptionBlame ?? ts;
    const stack = [...ts.dependents];
    while (stack.length > 0) {
      const dts = stack.pop()!;
      if (dts.state === "memory" || dts.state === "erred" || dts.state === "forgotten") continue;
      this.failDependent(dts, blame);
    }
    ts.waiters = null;
    if (ts.whoWants === null && ts.dependents.size === 0) this.recommend(ts, "forgotten");
  }

  private queueSlotsMaybeOpened(): void {
    if (this.queued.size === 0 || !this.queuing) return;
    const saturation = this.config.workerSaturation;
    let slots = 0;
    if (saturation === "adaptive") {
      // Counted for the queue's first task; each task popped is placed by its own count.
      const first = this.queued.peek()!;
      const leaf = first.dependents.size === 0;
      for (const ws of this.running) slots += Math.max(adaptiveSlotCount(this.config, ws, first.group, leaf) - ws.processing.size, 0);
    } else {
      for (const ws of this.idleTaskCount) slots += Math.max(taskSlotsAvailable(ws, saturation), 0);
    }
    if (slots === 0) return;
    for (const ts of this.queued.peekN(slots)) this.recommend(ts, "runnable");
    this.drain();
  }

  /** Dask's `check_idle_saturated`, plus the queuing slots set. */
  /** Dask's `is_unoccupied`: fewer tasks than threads, or less than half the average load. */
  isUnoccupied(ws: WorkerRec, occupancy: number, nprocessing: number): boolean {
    return nprocessing < ws.nthreads || occupancy < (ws.nthreads * (this.totalOccupancy / Math.max(this.totalNthreads, 1))) / 2;
  }

  /** Send a steal request: the task waits in processing.stealing for the victim's answer. */
  requestSteal(ts: TaskRec, info: InFlight, why: StealRequestWhy): void {
    ts.stealRequest = info.requestId;
    this.move(ts, "STEAL", why);
    this.fx.toWorker(info.victim.name, this.stealRequestOp(ts, info.requestId));
  }

  /**
   * The victim's answer (Dask's `move_task_confirm`). Only the answer to the request in
   * flight counts; a late, duplicated or foreign answer is stale and changes nothing.
   */
  private stealResponse(op: StealResponseOp): void {
    const stealing = this.stealing;
    const ts = this.tasks.get(op.key);
    if (stealing === null) return;
    // A key released and forgotten meanwhile (Dask: "Key released between request and confirm") is stale too.
    const info = ts === undefined ? undefined : stealing.inFlight.get(ts);
    if (ts === undefined || info === undefined || info.requestId !== op.requestId || info.victim.name !== op.worker || info.victim.id !== op.id) {
      stealing.metrics.stale += 1;
      return;
    }
    stealing.removeInFlight(ts);
    const { victim, thief, level } = info;
    // The request's reasons (level, costs, occupancies), and what the victim answered.
    const why: StealAnswerWhy = { ...info.why, outcome: op.outcome, state: op.state };
    const thiefAlive = this.workers.get(thief.name) === thief && thief.state === "running";
    const undefinedState = op.state === "released";
    if (undefinedState || (op.outcome === "confirm" && !thiefAlive)) {
      // The victim no longer had it, or the thief is gone: place it afresh.
      stealing.count("aborted", level);
      this.exitProcessing(ts);
      this.move(ts, "RELEASE", { ...why, steal: "aborted", rule: "steal-reschedule", cause: undefinedState ? "victim-released" : "thief-gone" });
      this.recommend(ts, "runnable");
    } else if (op.outcome === "reject") {
      stealing.count("rejected", level);
      ts.stealRequest = null;
      this.move(ts, "STEAL_REJECT", why);
    } else {
      stealing.count("confirmed", level);
      this.exitProcessing(ts);
      this.assign(ts, thief, why, "STEAL_CONFIRM");
    }
    this.checkIdleSaturated(thief);
    this.checkIdleSaturated(victim);
  }

  checkIdleSaturated(ws: WorkerRec, occupancy = ws.occupancy): void {
    if (ws.state !== "running") return;
    if (this.queuing) {
      // Adaptive saturation: the workers under Dask's count (placement counts each group's own slots).
      const saturation = this.config.workerSaturation;
      if (taskSlotsAvailable(ws, saturation === "adaptive" ? DASK_SATURATION : saturation) > 0) this.idleTaskCount.add(ws);
      else this.idleTaskCount.delete(ws);
    }
    if (this.totalNthreads === 0) return;
    const nc = ws.nthreads;
    const p = ws.processing.size;
    const occ = occupancy;
    const avg = this.totalOccupancy / this.totalNthreads;
    if (p < nc || occ < (nc * avg) / 2) {
      this.idle.add(ws);
      this.saturated.delete(ws);
      return;
    }
    this.idle.delete(ws);
    if (p > nc) {
      const pending = (occ * (p - nc)) / (p * nc);
      if (pending > 0.4 && pending > 1.9 * avg) {
        this.saturated.add(ws);
        return;
      }
    }
    this.saturated.delete(ws);
  }

  private lifecycle(event: "START" | "CLOSE" | "CLOSED"): void {
    const to = SCHEDULER.next(this.state, event);
    if (to === undefined) return;
    const from = this.state;
    this.state = to;
    this.fx.transition("scheduler", "scheduler", event, from, to);
  }

  private workerLifecycle(ws: WorkerRec, event: WorkerLifecycleEvent["type"], why?: WorkerWhy): void {
    const to = WORKER.next(ws.state, event);
    if (to === undefined) return;
    const from = ws.state;
    ws.state = to;
    this.fx.transition("worker", ws.name, event, from, to, why);
  }

  // ---- queries -------------------------------------------------------------------------

  taskState(key: string): TaskStateName | undefined {
    return this.tasks.get(key)?.state;
  }
}

function names(workers: Iterable<WorkerRec>): string[] {
  const out: string[] = [];
  for (const ws of workers) out.push(ws.name);
  return out;
}



export type { WorkerLostOp };

/** An update-data entry creating a key on no worker the scheduler has. */
function noHolderError(keys: string[]): NatschedError & { keys: string[] } {
  const shown = keys.slice(0, 5).map((k) => JSON.stringify(k)).join(", ") + (keys.length > 5 ? ` and ${keys.length - 5} more` : "");
  const error = new NatschedError("NO_WORKERS", `update-data: ${shown} would be stored on no worker of this scheduler (each entry must name a worker it was put on, and that worker may have left): nothing was registered`);
  return Object.assign(error, { keys });
}

function dataLostError(key: string): ErrorInfo {
  return {
    name: "DataLostError",
    code: "DATA_LOST",
    message: `the data of ${key} was lost with the last worker holding it; it was scattered, not computed, so it cannot be recomputed`,
  };
}

/** What a client is told of a task that is done (in memory or erred), or null while it is not. */
export function doneReport(ts: TaskRec): KeyInMemoryOp | KeyErredOp | null {
  if (ts.state === "memory") return { op: "key-in-memory", key: ts.key, nbytes: ts.nbytes, workers: names(ts.whoHas) };
  if (ts.state === "erred") {
    const blame = ts.exceptionBlame ?? ts;
    return blame.exception === null ? null : { op: "key-erred", key: ts.key, failedKey: blame.key, error: blame.exception };
  }
  return null;
}
