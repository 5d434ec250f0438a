import type { WorkerLifecycleEvent } from "../definitions/lifecycle.js";
import type { WorkerTaskEvent } from "../definitions/worker-task.js";
import { isReservedKey } from "../graph/reserved-keys.js";
import { priorityLess, type Priority } from "../priority.js";
import type { ComputeTaskOp, DepInfo, ErrorInfo, FreeKeysOp, StealRequestOp, WorkerMetricsOp, WorkerToScheduler } from "../protocol.js";
import type { WhyOf, WTaskWhy } from "../reasons.js";
import { WORKER, WORKER_TASK, type WorkerStateName, type WorkerTaskStateName } from "../tables.js";
import { IndexedHeap } from "../util/heap.js";
import { emptyMap, emptySet, withAdded, withDeleted, withEntry, withoutEntry } from "../util/shared-empty.js";
import type { WorkerEffects, WorkerInit, WorkerInput } from "./inputs.js";
import { FetchQueues } from "./fetch-queues.js";
import { Tombstones } from "./tombstones.js";

/** A task's positions in the worker's heaps of ready and to-fetch tasks (see IndexedHeap). */
export const READY_AT = Symbol("position among the ready tasks");
export const FETCH_AT = Symbol("position among the tasks to fetch");

export class WTask {
  state: WorkerTaskStateName = "released";
  [READY_AT] = -1;
  [FETCH_AT] = -1;
  /** Its place in the per-holder fetch queues (FetchQueues); -1 while not queued there. */
  fetchOrder = -1;
  func: string | null = null;
  args: unknown[] = [];
  priority: Priority = [0, 0, 0];
  /** The scheduler asked this worker to compute it (not only to fetch it). */
  requested = false;
  /** Another task waits on its result (compute-task `prompt`): its report never waits for company. */
  prompt = false;
  /** The scheduler asked for a copy (acquire-replicas): kept in the fetch queue even with no local dependent. */
  acquire = false;
  /** The scheduler said free-keys; the result stays only while a task here still needs it. */
  freed = false;
  /**
   * In memory from put-data (a client's scatter) and not confirmed yet: the scheduler has not
   * named this worker as one of its holders. Anyone who can reach the data plane can put data,
   * so such a copy is never reported (as a result, a replica or a holding) nor used as a result
   * or an input: the core confirms it (CONFIRM) or drops it (FREE) when the scheduler says
   * where the key is. Cleared when it leaves memory.
   */
  scattered = false;
  readonly dependencies: WTask[] = [];
  /** Read-only: change it with addDependent/removeDependent (shared and empty until then). */
  dependents: ReadonlySet<WTask> = emptySet();
  /** Dependencies not in memory here yet. */
  missing = 0;
  /**
   * Peers that hold it, while it must be fetched, and when each was last named (the core's
   * input count), so an older failure does not drop it. Read-only: change it with
   * setHolder/removeHolder (shared and empty until then).
   */
  holders: ReadonlyMap<string, number> = emptyMap();
  nbytes = -1;
  /**
   * A compute request that came while the task was cancelled on its way from a peer
   * (now `resumed`): if that transfer fails, the task is computed instead (Dask's
   * `_transition_resumed_fetch`).
   */
  computeInstead: ComputeTaskOp | null = null;
  /**
   * Why its execution here failed, while it is in `error`: a compute-task for a newer
   * assignment of the key is answered with it again (Dask's TaskErredMsg.from_task), until
   * the scheduler frees the key.
   */
  error: ErrorInfo | null = null;
  /** When its execution started here (the core's clock), while it runs. */
  startedAt = -1;
  /**
   * The newest assignment number (docs/protocol.md, "Assignment numbers") among the
   * scheduler's instructions this worker acted on for the key: its own compute-task, or a
   * compute-task of a dependent naming it as an input. 0: none (or a scheduler run ago).
   */
  attempt = 0;
  constructor(readonly key: string) {}

  addDependent(ts: WTask): void {
    this.dependents = withAdded(this.dependents, ts);
  }

  removeDependent(ts: WTask): void {
    this.dependents = withDeleted(this.dependents, ts);
  }

  setHolder(peer: string, since: number): void {
    this.holders = withEntry(this.holders, peer, since);
  }

  removeHolder(peer: string): void {
    this.holders = withoutEntry(this.holders, peer);
  }
}

const MAX_KEYS_PER_GATHER = 64;
/** Transfers smaller than this do not move the bandwidth estimate (Dask's rule: latency dominates them). */
const BANDWIDTH_SAMPLE_MIN_BYTES = 1_000_000;
/** Dask's floor for a transfer's duration when measuring bandwidth (seconds). */
const MIN_TRANSFER_SECONDS = 0.01;
/** Bandwidth assumed before any transfer is measured: Dask's distributed.scheduler.bandwidth. */
export const DEFAULT_WORKER_BANDWIDTH = 100e6;

/** What a task-erred carries if a task were in `error` without its error kept (every way into `error` keeps it). */
function unknownError(key: string): ErrorInfo {
  return { name: "TaskFailedError", message: `task ${key} failed on this worker earlier`, code: "TASK_FAILED" };
}

/**
 * A result's report names the assignment it answers, when the task has a number here, and
 * the scheduler run the number belongs to: a new run numbers afresh, so a report sent under
 * the run before and delivered after would otherwise match a new assignment of the key.
 */
function numbered(ts: WTask, run: number | null): { attempt?: number; run?: number } {
  if (ts.attempt <= 0) return {};
  return run === null ? { attempt: ts.attempt } : { attempt: ts.attempt, run };
}

/**
 * How many tombstones (WorkerCore.voided, one per key) a worker keeps. A tombstone is only
 * needed while an instruction it voids may still arrive: one overtaken or copied by the
 * transport. The NATS transport delivers a held-back message within `order.maxWaitMs` (8 s)
 * or `order.maxHeld` (10,000) later messages of the same sender, and de-duplicates by
 * Natsched-Seq within its window (docs/nats.md, "Delivery across server restarts"); every
 * tombstone follows a scheduler op about its key (a steal-request, a free-keys, the
 * compute-task of the task dropped). So 65,536 tombstones (a few MB at most) cover the
 * transport's reorder window even if each message in it voids a few fresh keys. Past the
 * bound the oldest is dropped first; a stale compute-task for a key the worker still tracks
 * is recognised anyway (WTask.attempt). docs/protocol.md, "Assignment numbers".
 */
export const MAX_TOMBSTONES = 65_536;

/** Scheduler runs a worker remembers having left (each a clean scheduler stop and a new run). */
export const MAX_PAST_RUNS = 16;

/**
 * A worker's state and policies, sans I/O (after Dask's WorkerState): it decides what to
 * run next (a heap by priority over `nthreads` slots), what to fetch from whom (at most
 * `transferIncomingCountLimit` peers at once), and how to answer the scheduler. Running
 * functions, moving bytes and the clock belong to the host.
 */
export class WorkerCore {
  state: WorkerStateName = WORKER.initial;
  readonly tasks = new Map<string, WTask>();
  private readonly ready = new IndexedHeap<WTask>((a, b) => priorityLess(a.priority, b.priority), READY_AT);
  /** The tasks to fetch in one heap by priority: the worker's queue in logs without init.fetchByHolder. */
  private readonly fetchQueue = new IndexedHeap<WTask>((a, b) => priorityLess(a.priority, b.priority), FETCH_AT);
  /** The tasks to fetch, per holder (init.fetchByHolder: every new worker). */
  private readonly fetchByHolder: FetchQueues<WTask> | null;
  private readonly inFlightFrom = new Map<string, WTask[]>();
  /** The input count when each gather in flight was asked for. */
  private readonly gatherAskedAt = new Map<string, number>();
  /** When (the core's clock) each gather in flight was asked for: its duration measures bandwidth. */
  private readonly gatherStartedAt = new Map<string, number>();
  /** Executions running now, in the order they started (finished or failed ones leave). */
  private readonly running = new Set<WTask>();
  /**
   * Transfer bandwidth estimate in bytes/s (Dask's Worker.bandwidth): each transfer of over
   * 1 MB moves it 5% of the way to what that transfer achieved. Reported to the scheduler.
   */
  bandwidth: number;
  /**
   * Tombstones: key -> every assignment of it numbered up to this is void here (a steal
   * took it, free-keys freed it, or the worker dropped the task after running it). A
   * compute-task for a voided assignment is dropped. At most `maxTombstones`
   * (MAX_TOMBSTONES), the least recently voided dropped first.
   */
  readonly voided: Tombstones;
  /** The scheduler run the assignment numbers belong to (null: none seen yet). */
  run: number | null = null;
  /**
   * Seconds from a task-finished leaving to the compute-task answering it arriving (its
   * `answers`), measured on the last such compute-task and not reported yet; the next
   * task-finished carries it (roundTrip), for the scheduler's adaptive saturation.
   */
  roundTrip: number | null = null;
  /** Runs this worker has left, the latest last: their late instructions are dropped. */
  readonly pastRuns: number[] = [];
  /**
   * Keys the worker said it holds when it registered again (register-again), until the
   * scheduler's void-assignments answers: one freed meanwhile (by a free-keys the scheduler sent
   * before it removed the worker, arriving late) is reported missing then.
   */
  private claimed: Set<string> | null = null;
  /**
   * Every assignment of this run numbered up to this is void, whatever its key: the scheduler
   * said so when it registered this worker afresh (void-assignments).
   */
  voidedUpTo = 0;
  private inputs = 0;
  executing = 0;
  now = 0;

  constructor(
    readonly init: WorkerInit,
    private readonly fx: WorkerEffects,
  ) {
    this.bandwidth = init.bandwidth ?? DEFAULT_WORKER_BANDWIDTH;
    this.voided = new Tombstones(init.maxTombstones ?? MAX_TOMBSTONES);
    this.fetchByHolder = init.fetchByHolder === true ? new FetchQueues<WTask>() : null;
  }

  get name(): string {
    return this.init.name;
  }

  handle(input: WorkerInput): void {
    this.now = input.t;
    this.inputs += 1;
    switch (input.op) {
      case "registered":
        // The run registered with: known before any of its instructions arrives, so a new run
        // announced later makes it past even if none of them did.
        if (input.run !== undefined && this.run === null && !this.pastRuns.includes(input.run)) this.run = input.run;
        this.lifecycle("START");
        break;
      case "close":
      case "close-worker":
        this.lifecycle("CLOSE");
        break;
      case "void-assignments":
        this.voidAssignments(input.run, input.attempt);
        break;
      case "new-run":
        this.newRun(input.run);
        break;
      case "register-again":
        this.claimed = new Set(this.holding().map((h) => h.key));
        break;
      case "acquire-replicas":
        if (input.run !== undefined && !this.sameRun(input.run)) {
          for (const { key } of input.keys) this.stale(key, { rule: "past-run", op: "acquire-replicas", run: input.run });
        } else this.acquireReplicas(input.keys);
        break;
      case "compute-task":
        this.computeTask(input);
        break;
      case "free-keys":
        this.freeKeys(input);
        break;
      case "steal-request":
        this.stealRequest(input);
        break;
      case "put-data":
        this.putData(input.keys);
        break;
      case "scatter-lease":
        this.scatterLease(input.held, input.unclaimed);
        break;
      case "gather-done":
        this.gatherDone(input.from, input.received, input.missing);
        break;
      case "gather-failed":
        this.gatherFailed(input.from, input.keys);
        break;
      case "execute-done":
        this.executeDone(input.key, input.nbytes, input.start, input.stop);
        break;
      case "execute-failed":
        this.executeFailed(input.key, input.error);
        break;
    }
    this.ensureCommunicating();
    this.ensureComputing();
  }

  /**
   * What this worker measures for the scheduler at time `t` (the host's clock), sent with
   * its heartbeat: how long each running execution has taken so far, and the bandwidth
   * estimate. A query: it changes nothing.
   */
  metrics(t: number): WorkerMetricsOp {
    const executing: [string, number][] = [];
    for (const ts of this.running) executing.push([ts.key, Math.max(0, t - ts.startedAt)]);
    return { op: "worker-metrics", worker: this.name, id: this.init.id, executing, bandwidth: this.bandwidth };
  }

  /**
   * Whether nothing wants the outcome of `key`'s execution under way: it is cancelled (freed
   * while it ran, not asked for again) and no task here waits for it. The host may then stop
   * that execution; it reports it failed, which the core drops (cancelled -> released).
   */
  executionUnwanted(key: string): boolean {
    const ts = this.tasks.get(key);
    return ts !== undefined && ts.state === "cancelled" && this.running.has(ts) && !this.neededLocally(ts);
  }

  /** The state of `key` here (Dask's TaskState.state); undefined if the worker does not know it. */
  taskState(key: string): WorkerTaskStateName | undefined {
    return this.tasks.get(key)?.state;
  }

  /** Executions running now. */
  /** Tasks waiting for a thread here. */
  get readyCount(): number {
    return this.ready.size;
  }

  /**
   * Whether the report of `key`, just finished, may wait to go with later ones (config
   * reportHold): no other task waits on it (the scheduler did not mark it prompt) and this
   * worker is running and still has tasks queued for its threads, so it needs no new work from
   * the scheduler yet (one no longer running starts none of them).
   */
  reportMayWait(key: string): boolean {
    return this.state === "running" && this.ready.size > 0 && this.tasks.get(key)?.prompt === false;
  }

  get runningCount(): number {
    return this.running.size;
  }

  /**
   * Keys held in memory with their sizes (for re-registration with a scheduler); scattered
   * data not confirmed yet is not vouched for (WTask.scattered).
   */
  holding(): { key: string; nbytes: number }[] {
    const out: { key: string; nbytes: number }[] = [];
    for (const ts of this.tasks.values()) if (ts.state === "memory" && !ts.scattered) out.push({ key: ts.key, nbytes: ts.nbytes });
    return out;
  }

  /**
   * Why a put-data of `keys` must be refused, or null if it may be stored. All or nothing:
   * keys no task may have (machines/graph/reserved-keys.ts), and keys this worker already has
   * (a task record in any state but released: a result, a copy, a task computing or fetching
   * it, an error): scatter creates data, it never overwrites it. A query that changes
   * nothing: a host asks it before storing a single value (WorkerActor's data server).
   */
  putDataRefusal(keys: readonly string[]): { reserved: string[]; existing: string[] } | null {
    let reserved: string[] | null = null;
    let existing: string[] | null = null;
    for (const key of keys) {
      if (isReservedKey(key)) (reserved ??= []).push(key);
      else if ((this.tasks.get(key)?.state ?? "released") !== "released") (existing ??= []).push(key);
    }
    return reserved === null && existing === null ? null : { reserved: reserved ?? [], existing: existing ?? [] };
  }

  // ---- stimuli -------------------------------------------------------------------------

  /**
   * A compute-task, unless it is stale: an assignment this worker was told to void (steal,
   * free-keys), already ran and dropped, or older than the one it holds. A re-send of the
   * assignment it holds (same number) only refreshes the holders of a waiting task's inputs.
   */
  private computeTask(op: ComputeTaskOp): void {
    if (op.attempt === undefined || op.run === undefined) {
      this.acceptCompute(op);
      return;
    }
    if (!this.sameRun(op.run)) {
      this.stale(op.key, { rule: "past-run", op: "compute-task", run: op.run, attempt: op.attempt });
      return;
    }
    const ts = this.tasks.get(op.key);
    const held = ts?.attempt ?? 0;
    const voided = Math.max(this.voided.get(op.key) ?? 0, this.voidedUpTo);
    if (op.attempt <= held || op.attempt <= voided) {
      if (ts !== undefined && op.attempt === held && op.attempt > voided && ts.requested && ts.state === "waiting") {
        // Sent again with the current holders of its inputs: one it was told of may be gone.
        this.refreshHolders(op);
        return;
      }
      const why = op.attempt === held ? "duplicate" : op.attempt <= voided ? "voided" : "superseded";
      this.stale(op.key, { rule: "stale-assignment", op: "compute-task", attempt: op.attempt, held, voided, why });
      return;
    }
    this.acceptCompute(op);
  }

  /**
   * Every state a compute-task can meet answers it: by reporting what is here (memory,
   * error), by the report the work under way will make (waiting, ready, executing,
   * resumed), by computing it if the transfer under way fails (flight), or by computing it
   * (released, fetch). The report carries the newest assignment's number.
   */
  private acceptCompute(op: ComputeTaskOp): void {
    if (op.answers !== undefined && this.now >= op.answers && this.init.roundTrips !== false) this.roundTrip = this.now - op.answers;
    const ts = this.ensureTask(op.key);
    // Never lowered: a request kept for later (computeInstead) may be older than one since.
    if (op.attempt !== undefined && op.attempt > ts.attempt) ts.attempt = op.attempt;
    ts.func = op.func;
    ts.args = op.args;
    ts.priority = op.priority;
    ts.requested = true;
    ts.prompt = op.prompt === true;
    ts.freed = false;
    switch (ts.state) {
      case "memory":
        if (!ts.scattered) {
          this.send({ op: "task-finished", worker: this.name, id: this.init.id, key: ts.key, nbytes: ts.nbytes, start: this.now, stop: this.now, ...numbered(ts, this.run) });
          return;
        }
        // The scheduler never asks a worker to compute a key it counts there: this copy was
        // put here by someone it never registered. Not a result: computed instead.
        this.dropScattered(ts, { rule: "scattered-not-a-result", op: "compute-task", ...(ts.attempt > 0 ? { attempt: ts.attempt } : {}) });
        break;
      case "error":
        // It failed here and the scheduler has not freed it yet (the free-keys may be on its
        // way): the same failure again, as the answer to this assignment.
        this.send({ op: "task-erred", worker: this.name, id: this.init.id, key: ts.key, error: ts.error ?? unknownError(ts.key), ...numbered(ts, this.run) });
        return;
      case "waiting":
        // Sent again with the current holders of its inputs: one it was told of may be gone.
        this.refreshHolders(op);
        return;
      case "ready":
      case "executing":
        return;
      case "flight":
        // Arriving from a peer: having it is as good as computing it; if the transfer fails,
        // it is computed instead (refetch).
        ts.computeInstead = op;
        return;
      case "resumed":
        // Its outcome will be reported; if it was on its way from a peer and the transfer
        // fails, this (newest) request is the one computed.
        ts.computeInstead = op;
        return;
      case "cancelled":
        this.move(ts, "COMPUTE_AGAIN");
        ts.computeInstead = op;
        return;
      case "fetch":
      case "released":
        break;
    }
    this.unqueueFetch(ts);
    ts.missing = 0;
    // A Set for a task with many inputs: includes() per input is quadratic in the inputs
    // (a sum over tens of thousands of futures).
    const known = op.deps.length > 16 ? new Set(ts.dependencies) : null;
    for (const dep of op.deps) {
      const dts = this.ensureTask(dep.key);
      if (op.attempt !== undefined && dts.attempt < op.attempt) dts.attempt = op.attempt;
      if (known === null ? !ts.dependencies.includes(dts) : !known.has(dts)) {
        ts.dependencies.push(dts);
        known?.add(dts);
      }
      dts.addDependent(ts);
      if (dts.state === "memory" && dts.scattered) this.scatterNamed(dts, dep.holders, "compute-task");
      if (dts.state === "memory") continue;
      ts.missing += 1;
      this.setHolders(dts, dep.holders);
      if (dep.nbytes >= 0) dts.nbytes = dep.nbytes;
      // A failure of it here is stale: the scheduler has it in memory on a peer now.
      if (dts.state === "error") this.dropError(dts, "input-in-memory-elsewhere");
      if (dts.state === "released") {
        dts.priority = ts.priority;
        dts.freed = false;
        this.move(dts, "FETCH");
        this.queueFetch(dts);
      }
    }
    if (ts.missing > 0) this.move(ts, "WAIT_DEPS");
    else this.makeReady(ts);
  }

  /**
   * Copy keys from their holders without computing anything (Dask's acquire-replicas, used
   * to move a retiring worker's data): they go through fetch and flight like dependencies,
   * and gatherDone reports them with add-keys. Keys already here are reported at once.
   */
  private acquireReplicas(keys: DepInfo[]): void {
    const here: { key: string; nbytes: number }[] = [];
    for (const dep of keys) {
      const ts = this.ensureTask(dep.key);
      if (ts.state === "memory" && ts.scattered) this.scatterNamed(ts, dep.holders, "acquire-replicas");
      if (ts.state === "memory") {
        ts.freed = false;
        here.push({ key: ts.key, nbytes: ts.nbytes });
        continue;
      }
      this.setHolders(ts, dep.holders);
      if (dep.nbytes >= 0) ts.nbytes = dep.nbytes;
      // A failure of it here is stale: the scheduler has it in memory on a peer now.
      if (ts.state === "error") this.dropError(ts, "replica-in-memory-elsewhere");
      if (ts.state === "released" && ts.holders.size === 0) {
        // Only this worker was named, and it does not have the key (missing-data said so):
        // nothing to copy from, and nobody to wait for.
        this.dropIfUnused(ts);
      } else if (ts.state === "released") {
        ts.acquire = true;
        ts.freed = false;
        this.move(ts, "FETCH");
        this.queueFetch(ts);
      } else if (ts.state === "fetch" || ts.state === "flight") {
        // Already on its way for a task here: it is reported with add-keys when it lands.
        ts.acquire = true;
      }
      // Waiting, ready, executing, cancelled or resumed: computed here (or being dropped);
      // the scheduler picks another recipient or learns of it from task-finished.
    }
    if (here.length > 0) this.send({ op: "add-keys", worker: this.name, id: this.init.id, keys: here });
  }

  private refreshHolders(op: ComputeTaskOp): void {
    for (const dep of op.deps) {
      const dts = this.tasks.get(dep.key);
      if (dts === undefined || dts.state === "memory") continue;
      this.setHolders(dts, dep.holders);
    }
  }

  /**
   * The peers the scheduler names as holders of `ts`, which is not in memory here. If it
   * names this worker too, it counts a copy that is not here (data registered by a client
   * that never stored it here, or a copy dropped since): said with missing-data, as of a
   * peer that lacked it, or the task needing it would wait for a transfer nobody can make.
   */
  private setHolders(ts: WTask, holders: readonly string[]): void {
    for (const holder of holders) {
      if (holder !== this.name) {
        ts.setHolder(holder, this.inputs);
        this.fetchByHolder?.holderAdded(ts, holder);
      } else this.send({ op: "missing-data", worker: this.name, id: this.init.id, key: ts.key, holder });
    }
  }

  /**
   * Forget a failure kept here (error -> released) because the scheduler now has the key in
   * memory elsewhere and names it as data to copy: the failure was freed in a message still
   * on its way, or the key was computed again since.
   */
  private dropError(ts: WTask, rule: "input-in-memory-elsewhere" | "replica-in-memory-elsewhere"): void {
    ts.error = null;
    this.move(ts, "FREE", { rule });
  }

  private makeReady(ts: WTask): void {
    this.move(ts, "READY");
    this.ready.push(ts);
  }

  /**
   * The scheduler registered this worker afresh (void-assignments): it does not have the
   * incarnation it gave assignments up to `attempt` to (it removed this worker while it was
   * alive, or it is a new run), so they are void. What is computed, fetched or kept as a
   * failure for them is dropped (work under way is cancelled: its outcome is discarded), as a
   * free-keys would; data in memory stays, and is told again (add-keys): the scheduler counts
   * each key or frees it. Newer instructions (numbered above `attempt`, sent after the
   * registration) are kept.
   */
  private voidAssignments(run: number, attempt: number): void {
    if (!this.sameRun(run)) return;
    if (attempt > this.voidedUpTo) this.voidedUpTo = attempt;
    this.voidWork(attempt, { rule: "void-assignments", attempt });
    // What it said it holds and no longer does (a free-keys sent before the scheduler removed
    // it, arriving after it registered again): reported missing, so the scheduler uncounts it
    // (a key the scheduler did not count is ignored). The registration came first, so this does.
    if (this.claimed !== null) {
      for (const key of this.claimed) {
        if (this.tasks.get(key)?.state !== "memory") this.send({ op: "missing-data", worker: this.name, id: this.init.id, key, holder: this.name });
      }
      this.claimed = null;
    }
    // What it holds, told again: the holding it registered with may be older than a result or
    // a confirmation that came since. The scheduler counts each key or frees it.
    const held: { key: string; nbytes: number }[] = [];
    for (const ts of this.tasks.values()) if (ts.state === "memory" && !ts.scattered) held.push({ key: ts.key, nbytes: ts.nbytes });
    if (held.length > 0) this.send({ op: "add-keys", worker: this.name, id: this.init.id, keys: held });
  }

  /**
   * Drop the work and failures of assignments numbered up to `upTo`, as a free-keys would
   * (work under way is cancelled, its outcome discarded); data in memory stays.
   */
  private voidWork(upTo: number, why: WhyOf<"void-assignments" | "new-run">): void {
    const stale: WTask[] = [];
    for (const ts of this.tasks.values()) {
      if (ts.attempt > upTo || ts.state === "memory" || ts.state === "released" || ts.state === "cancelled") continue;
      // A copy asked for by acquire-replicas carries no number: one that overtook the void is
      // the new registration's (a retirement's handover) and must go on; an older one only
      // ends in a replica the scheduler counts or frees.
      if (ts.acquire && !ts.requested && ts.attempt === 0) continue;
      ts.requested = false;
      ts.acquire = false;
      ts.computeInstead = null;
      stale.push(ts);
    }
    for (const ts of stale) {
      // Dropped meanwhile with a dependent released before it.
      if (this.tasks.get(ts.key) !== ts) continue;
      ts.freed = true;
      if (this.neededLocally(ts)) continue;
      this.release(ts, why);
    }
  }

  private freeKeys(op: FreeKeysOp): void {
    if (op.attempt === undefined || op.run === undefined) {
      for (const key of op.keys) this.freeKey(key);
      return;
    }
    if (!this.sameRun(op.run)) {
      for (const key of op.keys) this.stale(key, { rule: "past-run", op: "free-keys", run: op.run, attempt: op.attempt });
      return;
    }
    let kept: { key: string; nbytes: number }[] | null = null;
    for (const key of op.keys) {
      // Every assignment of it up to op.attempt was sent before this free-keys: void.
      this.voided.void(key, op.attempt);
      const ts = this.tasks.get(key);
      if (ts !== undefined && ts.attempt > op.attempt) {
        // Overtaken by a newer instruction about the key (a compute-task sent after it).
        this.stale(key, { rule: "stale-free-keys", op: "free-keys", attempt: op.attempt, held: ts.attempt });
        // A copy kept against this free-keys may be one the scheduler does not count (the
        // newer instruction named the key as an input held elsewhere): report it, so the
        // scheduler counts it or frees it again with a number that is not overtaken.
        if (ts.state === "memory" && !ts.scattered) (kept ??= []).push({ key, nbytes: ts.nbytes });
        continue;
      }
      this.freeKey(key);
    }
    if (kept !== null) this.send({ op: "add-keys", worker: this.name, id: this.init.id, keys: kept });
  }

  private freeKey(key: string): void {
    const ts = this.tasks.get(key);
    if (ts === undefined) return;
    ts.requested = false;
    ts.acquire = false;
    ts.freed = true;
    if (this.neededLocally(ts)) return;
    this.release(ts);
  }

  /** Some task this worker must still compute depends on it. */
  private neededLocally(ts: WTask): boolean {
    for (const dependent of ts.dependents) {
      if (dependent.requested && (dependent.state === "waiting" || dependent.state === "ready")) return true;
    }
    return false;
  }

  private release(ts: WTask, why?: WhyOf<"void-assignments" | "new-run">): void {
    switch (ts.state) {
      case "memory":
        this.fx.freeData(ts.key);
        this.move(ts, "FREE", why);
        break;
      case "ready":
        this.ready.remove(ts);
        this.move(ts, "FREE", why);
        break;
      case "fetch":
        this.unqueueFetch(ts);
        this.move(ts, "FREE", why);
        break;
      case "waiting":
        this.move(ts, "FREE", why);
        break;
      case "error":
        ts.error = null;
        this.move(ts, "FREE", why);
        break;
      case "executing":
      case "flight":
      case "resumed":
        // The work is under way and cannot be interrupted; its outcome will be dropped.
        this.move(ts, "FREE", why);
        return;
      case "cancelled":
      case "released":
        break;
    }
    this.dropIfUnused(ts);
  }

  /** Forget a released task and, transitively, dependencies nothing here needs any more. */
  private dropIfUnused(root: WTask): void {
    const stack = [root];
    while (stack.length > 0) {
      const ts = stack.pop()!;
      if (ts.state !== "released" || ts.requested || ts.acquire || ts.dependents.size > 0) continue;
      this.tasks.delete(ts.key);
      // Whatever it was assigned here is over: a late or duplicated compute-task must not revive it.
      if (ts.attempt > 0) this.voided.void(ts.key, ts.attempt);
      for (const dts of ts.dependencies) {
        dts.removeDependent(ts);
        if (dts.requested || dts.acquire || dts.dependents.size > 0) continue;
        // A replica in memory stays until the scheduler frees it: it counts it as here.
        if ((dts.state === "memory" && dts.freed) || dts.state === "fetch") {
          this.release(dts);
        } else if (dts.state === "released") {
          stack.push(dts);
        } else if (dts.state === "flight") {
          this.move(dts, "FREE");
        }
      }
    }
  }

  /**
   * Confirm only if the assignment the request targets is here and has not started; then it
   * is voided, so a copy of its compute-task arriving later is dropped. If that assignment
   * has not arrived (the request overtook its compute-task), it is voided too and the answer
   * is `released`: the scheduler places the task afresh, and the compute-task, when it
   * comes, is dropped instead of running a second copy.
   */
  private stealRequest(op: StealRequestOp): void {
    const { key, requestId, attempt } = op;
    // A request of a scheduler run this worker left: nobody waits for the answer.
    if (op.run !== undefined && !this.sameRun(op.run)) {
      this.stale(key, { rule: "past-run", op: "steal-request", run: op.run, attempt });
      return;
    }
    const ts = this.tasks.get(key);
    const numbered = attempt !== undefined && op.run !== undefined;
    let state: string = ts?.state ?? "released";
    let confirm = false;
    if (numbered && (ts === undefined || ts.attempt < attempt)) {
      this.voided.void(key, attempt);
      state = "released";
    } else if (ts !== undefined) {
      confirm = (!numbered || ts.attempt === attempt) && ts.requested && WORKER_TASK.next(ts.state, "STEAL") !== undefined;
    }
    if (confirm) {
      if (ts!.state === "ready") this.ready.remove(ts!);
      this.move(ts!, "STEAL");
      ts!.requested = false;
      if (numbered) this.voided.void(key, attempt);
      this.dropIfUnused(ts!);
    }
    this.send({
      op: "steal-response",
      worker: this.name,
      id: this.init.id,
      key,
      requestId,
      outcome: confirm ? "confirm" : "reject",
      state,
    });
  }

  /**
   * Data a client scattered here: in memory, unconfirmed (WTask.scattered) until the scheduler
   * names this worker as a holder. A put-data that putDataRefusal refuses is not applied at
   * all; hosts refuse it before storing anything, so here it is only logged (STALE, with the
   * reasons), never an overwrite.
   */
  private putData(keys: readonly { key: string; nbytes: number }[]): void {
    const refusal = this.putDataRefusal(keys.map((k) => k.key));
    if (refusal !== null) {
      for (const key of [...refusal.reserved, ...refusal.existing]) {
        this.stale(key, { rule: "scatter-refused", op: "put-data", reason: refusal.reserved.includes(key) ? "reserved-key" : "key-exists" });
      }
      return;
    }
    for (const { key, nbytes } of keys) {
      const ts = this.ensureTask(key);
      ts.nbytes = nbytes;
      // New data: a free-keys of the key's earlier life here (the record kept for a dependent
      // whose outcome is still to come) does not apply to it.
      ts.freed = false;
      this.move(ts, "DATA");
      // It wakes no task here: only a compute-task naming this worker as its holder makes it an input.
      ts.scattered = true;
    }
  }

  /**
   * The scheduler named the holders of `ts`, unconfirmed scattered data here (in a
   * compute-task's inputs or an acquire-replicas). Among them: confirmed, a replica like any
   * other. Not among them: the scheduler does not count this copy, which may hold anything;
   * dropped, and fetched from those holders by the caller.
   */
  private scatterNamed(ts: WTask, holders: readonly string[], op: "compute-task" | "acquire-replicas"): void {
    if (holders.includes(this.name)) {
      ts.scattered = false;
      this.move(ts, "CONFIRM", { rule: "scatter-confirmed", op });
    } else {
      this.dropScattered(ts, { rule: "scattered-not-counted", op, holders: [...holders] });
    }
  }

  /** Unconfirmed scattered data leaves memory (the caller decides what follows: compute, fetch or forget). */
  private dropScattered(ts: WTask, why: WhyOf<"scattered-not-a-result" | "scattered-not-counted" | "scatter-lease-expired">): void {
    this.fx.freeData(ts.key);
    this.move(ts, "FREE", why);
  }

  /**
   * The host's scatter lease (WorkerActor): scattered data still unconfirmed a while after it
   * was put here, checked with the scheduler's who-has. `held`: keys it lists this worker
   * for (confirmed); `unclaimed`: keys it does not (nobody registered them here: a client that
   * died between put-data and update-data, a refused update-data, or data nobody should have
   * put): dropped and forgotten. Keys confirmed or gone meanwhile are left as they are.
   */
  private scatterLease(held: readonly string[], unclaimed: readonly string[]): void {
    for (const key of held) {
      const ts = this.tasks.get(key);
      if (ts === undefined || ts.state !== "memory" || !ts.scattered) continue;
      ts.scattered = false;
      this.move(ts, "CONFIRM", { rule: "scatter-confirmed", op: "scatter-lease" });
    }
    for (const key of unclaimed) {
      const ts = this.tasks.get(key);
      if (ts === undefined || ts.state !== "memory" || !ts.scattered) continue;
      this.dropScattered(ts, { rule: "scatter-lease-expired", op: "scatter-lease" });
      this.dropIfUnused(ts);
    }
  }

  private gatherDone(from: string, received: { key: string; nbytes: number }[], missing: string[]): void {
    const startedAt = this.gatherStartedAt.get(from);
    const askedAt = this.gatherEnded(from);
    if (startedAt !== undefined) this.measureTransfer(received, this.now - startedAt);
    const replicas: { key: string; nbytes: number }[] = [];
    for (const { key, nbytes } of received) {
      const ts = this.tasks.get(key);
      if (ts === undefined) continue;
      ts.nbytes = nbytes;
      if (ts.state === "flight" || ts.state === "resumed") {
        ts.computeInstead = null;
        this.move(ts, "RECEIVED");
        replicas.push({ key, nbytes });
        if (ts.requested) {
          this.send({ op: "task-finished", worker: this.name, id: this.init.id, key, nbytes, start: this.now, stop: this.now, ...numbered(ts, this.run) });
        }
        this.dataArrived(ts);
      } else if (ts.state === "cancelled") {
        this.move(ts, "RECEIVED");
        if (this.keepForLocalDependents(ts)) replicas.push({ key, nbytes });
      } else if (ts.state !== "memory") {
        this.fx.freeData(key);
      }
    }
    if (replicas.length > 0) this.send({ op: "add-keys", worker: this.name, id: this.init.id, keys: replicas });
    for (const key of missing) {
      const ts = this.tasks.get(key);
      if (ts === undefined) continue;
      this.forgetHolder(ts, from, askedAt);
      this.send({ op: "missing-data", worker: this.name, id: this.init.id, key, holder: from });
      this.refetch(ts);
    }
  }

  private gatherFailed(from: string, keys: string[]): void {
    const askedAt = this.gatherEnded(from);
    for (const ts of this.tasks.values()) this.forgetHolder(ts, from, askedAt);
    for (const key of keys) {
      const ts = this.tasks.get(key);
      if (ts !== undefined) this.refetch(ts);
    }
  }

  /** The gather from `from` is over; when it was asked for. */
  private gatherEnded(from: string): number {
    const askedAt = this.gatherAskedAt.get(from) ?? this.inputs;
    this.inFlightFrom.delete(from);
    this.gatherAskedAt.delete(from);
    this.gatherStartedAt.delete(from);
    return askedAt;
  }

  /** Dask's _update_metrics_received_data: a large transfer moves the bandwidth estimate. */
  private measureTransfer(received: { key: string; nbytes: number }[], seconds: number): void {
    let total = 0;
    for (const { nbytes } of received) total += Math.max(nbytes, 0);
    if (total <= BANDWIDTH_SAMPLE_MIN_BYTES) return;
    const measured = total / Math.max(seconds, MIN_TRANSFER_SECONDS);
    this.bandwidth = 0.95 * this.bandwidth + 0.05 * measured;
  }

  /**
   * `from` did not deliver: drop it as a holder of `ts`, unless the scheduler named it again
   * after the gather was asked for (a new incarnation under the same name may hold it now).
   */
  private forgetHolder(ts: WTask, from: string, askedAt: number): void {
    if ((ts.holders.get(from) ?? 0) > askedAt) return;
    ts.removeHolder(from);
    this.fetchByHolder?.holderRemoved(ts, from);
  }

  /** A transfer did not deliver `ts`: queue it again (the scheduler re-plans if no holder is left). */
  private refetch(ts: WTask): void {
    if (ts.state === "flight") {
      const computeInstead = ts.requested ? ts.computeInstead : null;
      ts.computeInstead = null;
      this.move(ts, "FETCH_FAILED", computeInstead === null ? undefined : { rule: "compute-instead", attempt: computeInstead.attempt });
      // Asked to compute it while it was on its way: the scheduler waits for this worker's
      // report, and the holders it fetched from may all be gone. Computed, as Dask does.
      if (computeInstead !== null) this.acceptCompute(computeInstead);
      else if (ts.holders.size === 0 && !ts.requested && !this.neededLocally(ts)) {
        // A copy only the scheduler asked for (acquire-replicas, a retiring worker's data) with
        // nobody left to copy it from: the retiring worker left, and the scheduler re-plans its
        // handovers on its own. Given up, rather than waited on for ever. (A task here that
        // needs it keeps waiting: the scheduler names new holders, resendCompute.)
        ts.acquire = false;
        this.move(ts, "FREE", { rule: "no-holder-left" });
        this.dropIfUnused(ts);
      } else this.queueFetch(ts);
    } else if (ts.state === "cancelled" || ts.state === "resumed") {
      const computeInstead = ts.state === "resumed" && ts.requested ? ts.computeInstead : null;
      ts.computeInstead = null;
      this.move(ts, "FETCH_FAILED");
      // The scheduler is waiting for this worker to compute it: do, rather than forget it.
      if (computeInstead !== null) {
        this.acceptCompute(computeInstead);
      } else if (this.neededLocally(ts)) {
        // Cancelled, then needed again as a dependency while still in flight: fetch again.
        this.move(ts, "FETCH");
        this.queueFetch(ts);
      } else {
        this.dropIfUnused(ts);
      }
    }
  }

  /**
   * A cancelled task's result arrived anyway (its execution or transfer ended; it is
   * released now). If a task here was asked for since and waits for it, the result is
   * kept (the caller tells the scheduler of the replica); otherwise it is dropped. Dask
   * sends such a task back to flight or resumes it instead.
   */
  private keepForLocalDependents(ts: WTask): boolean {
    if (!this.neededLocally(ts)) {
      this.fx.freeData(ts.key);
      this.dropIfUnused(ts);
      return false;
    }
    // Announced to the scheduler as a replica: kept until it frees it, like any other.
    ts.freed = false;
    this.move(ts, "DATA");
    this.dataArrived(ts);
    return true;
  }

  private executeDone(key: string, nbytes: number, start: number, stop: number): void {
    const ts = this.tasks.get(key);
    if (ts === undefined) return;
    this.executing -= 1;
    this.stopped(ts);
    ts.nbytes = nbytes;
    if (ts.state === "cancelled") {
      this.move(ts, "DONE");
      if (this.keepForLocalDependents(ts)) this.send({ op: "add-keys", worker: this.name, id: this.init.id, keys: [{ key, nbytes }] });
      return;
    }
    this.move(ts, "DONE");
    if (this.roundTrip === null) this.send({ op: "task-finished", worker: this.name, id: this.init.id, key, nbytes, start, stop, ...numbered(ts, this.run) });
    else {
      this.send({ op: "task-finished", worker: this.name, id: this.init.id, key, nbytes, start, stop, ...numbered(ts, this.run), roundTrip: this.roundTrip });
      this.roundTrip = null;
    }
    this.dataArrived(ts);
  }

  private executeFailed(key: string, error: ErrorInfo): void {
    const ts = this.tasks.get(key);
    if (ts === undefined) return;
    this.executing -= 1;
    this.stopped(ts);
    if (ts.state === "cancelled") {
      this.move(ts, "FAIL");
      this.dropIfUnused(ts);
      return;
    }
    this.move(ts, "FAIL");
    ts.error = error;
    this.send({ op: "task-erred", worker: this.name, id: this.init.id, key, error, ...numbered(ts, this.run) });
  }

  private stopped(ts: WTask): void {
    this.running.delete(ts);
    ts.startedAt = -1;
  }

  private dataArrived(ts: WTask): void {
    for (const dependent of ts.dependents) {
      if (dependent.state !== "waiting") continue;
      dependent.missing -= 1;
      if (dependent.missing === 0) this.makeReady(dependent);
    }
  }

  // ---- scheduling ----------------------------------------------------------------------

  private ensureComputing(): void {
    if (this.state !== "running") return;
    while (this.executing < this.init.nthreads && this.ready.size > 0) {
      const ts = this.ready.pop()!;
      this.move(ts, "EXECUTE");
      this.executing += 1;
      ts.startedAt = this.now;
      this.running.add(ts);
      this.fx.execute(ts.key, ts.func!, ts.args);
    }
  }

  private queueFetch(ts: WTask): void {
    if (this.fetchByHolder !== null) this.fetchByHolder.push(ts);
    else this.fetchQueue.push(ts);
  }

  private unqueueFetch(ts: WTask): void {
    if (this.fetchByHolder !== null) this.fetchByHolder.remove(ts);
    else this.fetchQueue.remove(ts);
  }

  private ensureCommunicating(): void {
    if (this.state !== "running") return;
    if (this.fetchByHolder !== null) {
      this.gatherByHolder(this.fetchByHolder);
      return;
    }
    const limit = this.init.transferIncomingCountLimit;
    const skipped: WTask[] = [];
    while (this.inFlightFrom.size < limit && this.fetchQueue.size > 0) {
      const ts = this.fetchQueue.pop()!;
      const holder = this.pickHolder(ts);
      if (holder === undefined) {
        skipped.push(ts);
        continue;
      }
      const batch = [ts];
      for (const other of this.fetchQueue.values()) {
        if (batch.length >= MAX_KEYS_PER_GATHER) break;
        if (other.holders.has(holder)) batch.push(other);
      }
      for (const t of batch) this.fetchQueue.remove(t);
      this.startGather(holder, batch);
    }
    for (const ts of skipped) this.fetchQueue.push(ts);
  }

  /**
   * Gathers per holder (Dask's _ensure_communicating over data_needed): from each holder not
   * gathered from yet, the one whose first task comes first, its first tasks. Tasks waiting
   * only for holders already busy are not looked at.
   */
  private gatherByHolder(queues: FetchQueues<WTask>): void {
    const limit = this.init.transferIncomingCountLimit;
    while (this.inFlightFrom.size < limit) {
      const holder = queues.nextHolder(this.inFlightFrom);
      if (holder === undefined) return;
      this.startGather(holder, queues.take(holder, MAX_KEYS_PER_GATHER));
    }
  }

  private startGather(holder: string, batch: WTask[]): void {
    for (const t of batch) this.move(t, "GATHER");
    this.inFlightFrom.set(holder, batch);
    this.gatherAskedAt.set(holder, this.inputs);
    this.gatherStartedAt.set(holder, this.now);
    this.fx.gather(
      holder,
      batch.map((t) => t.key),
    );
  }

  /** A holder we are not already fetching from, first in name order (deterministic). */
  private pickHolder(ts: WTask): string | undefined {
    let best: string | undefined;
    for (const holder of ts.holders.keys()) {
      if (this.inFlightFrom.has(holder)) continue;
      if (best === undefined || holder < best) best = holder;
    }
    return best;
  }

  // ---- assignment numbers --------------------------------------------------------------

  /**
   * Numbers are compared within one scheduler run: a scheduler that started a new run
   * (the last one stopped or died without a log to resume from) numbers afresh, so nothing
   * remembered under the previous run applies.
   */
  private sameRun(run: number): boolean {
    if (this.run === run) return true;
    // A late instruction of a run this worker has left (a clean stop, then a new run): void.
    if (this.pastRuns.includes(run)) return false;
    const first = this.run === null;
    this.enterRun(run);
    if (!first) this.runChanged(run);
    return true;
  }

  /** `run` is now the run numbers belong to; the one before is past (at most MAX_PAST_RUNS kept). */
  private enterRun(run: number): void {
    if (this.run !== null) {
      this.pastRuns.push(this.run);
      if (this.pastRuns.length > MAX_PAST_RUNS) this.pastRuns.shift();
    }
    this.run = run;
  }

  /**
   * The host heard a scheduler announce a new run (`run`) and registers with it again: from
   * now on, instructions of the run before are void, even those still on their way (the
   * registration's holding was taken after this; a late free-keys of the old run must not
   * drop a key the new run counts). A repeated announcement of the run it is in changes
   * nothing.
   */
  private newRun(run: number): void {
    this.sameRun(run);
  }

  /** Numbers of the run before mean nothing now, nor do the failures it was told of. */
  private runChanged(run: number): void {
    this.voided.clear();
    this.voidedUpTo = 0;
    for (const ts of this.tasks.values()) ts.attempt = 0;
    // The run before asked for all of it, and the new one knows none of it: its work is void
    // (a request kept to compute instead too), and so are its failures, which were kept for
    // the scheduler that saw them until it freed them (the new one never will). Data stays.
    this.voidWork(0, { rule: "new-run", run });
  }

  /** A superseded instruction was dropped: logged as a STALE self-transition with its reasons. */
  private stale(key: string, why: WhyOf<"past-run" | "stale-assignment" | "stale-free-keys" | "scatter-refused">): void {
    const state = this.tasks.get(key)?.state ?? "released";
    this.fx.transition("wtask", key, "STALE", state, state, why);
  }

  // ---- plumbing ------------------------------------------------------------------------

  private ensureTask(key: string): WTask {
    let ts = this.tasks.get(key);
    if (ts === undefined) this.tasks.set(key, (ts = new WTask(key)));
    return ts;
  }

  private move(ts: WTask, event: WorkerTaskEvent["type"], why?: WTaskWhy): void {
    const from = ts.state;
    const to = WORKER_TASK.next(from, event);
    if (to === undefined) throw new Error(`worker ${this.name}: task ${ts.key}: ${event} is not accepted in state ${from}`);
    ts.state = to;
    if (from === "memory" && to !== "memory") ts.scattered = false;
    this.fx.transition("wtask", ts.key, event, from, to, why);
  }

  private lifecycle(event: WorkerLifecycleEvent["type"]): void {
    const to = WORKER.next(this.state, event);
    if (to === undefined) return;
    const from = this.state;
    this.state = to;
    this.fx.transition("worker", this.name, event, from, to);
  }

  private send(op: WorkerToScheduler): void {
    this.fx.toScheduler(op);
  }
}
