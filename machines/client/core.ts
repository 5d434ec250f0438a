/**
 * A client's state and decisions, sans I/O, built like the scheduler's and the worker's cores:
 * stimulus in, instructions out. The host (actors/client.ts, `Client`) turns the user's calls,
 * the scheduler's answers and reports, the workers' data and its timers into stimuli stamped
 * with the time (inputs.ts, `ClientInput`), feeds them to `handle`, and carries out the
 * instructions it returns: send ops, ask queries, fetch data, set timers, settle promises.
 *
 * The core decides everything that is not moving bytes: the futures (a key's status, holders
 * and how many futures hold it), what waits for them and until when, which specs it keeps and
 * resubmits after the scheduler starts a new run (resubmit.ts), which keys it releases or
 * cancels (and which futures fail with a cancelled key), which
 * ops go in one envelope, how long a request is retried while no scheduler answers (longer
 * while one says it is resuming), what a gather asks of which holder and when it gives up,
 * and what a client back from a lost connection asks to catch up. No clock (time is each
 * input's `t`), no randomness (keys are the host's): the same inputs give the same
 * instructions, so a recorded client can be replayed.
 */
import type { ClientToScheduler, SchedulerToClient, TaskSpec } from "../protocol.js";
import type { SchedulerReply } from "../scheduler/inputs.js";
import type { ClientFailure, ClientInit, ClientInput, ClientInstruction, ClientKeysAnswer, ClientTimer } from "./inputs.js";
import { FUTURE, type ClientEffects, type FutureEventName } from "./future-table.js";
import { KeptSpecs } from "./kept-specs.js";
import { planResubmission } from "./resubmit.js";

export type KeyStatus = "pending" | "finished" | "error" | "cancelled";

interface KeyState {
  status: KeyStatus;
  /** Futures alive for this key in this client. */
  refs: number;
  holders: string[];
  error: ClientFailure | null;
  /** Who waits for this key's outcome; null while nobody does (most keys: a gather waits on many with one wait). */
  waits: Wait[] | null;
}

/** A wait for keys to be done: the host's (`wait`), or a step of a gather. */
interface Wait {
  readonly host: number | null;
  readonly gather: Gather | null;
  /** The keys asked for (one: its key is named when it times out). */
  readonly keys: readonly string[];
  /** Those not done when it began. */
  readonly waiting: readonly KeyState[];
  readonly timeout: number | undefined;
  left: number;
  done: boolean;
}

/** Fetching the data of keys: wait until they are done, ask their holders, again after a pause while some did not deliver. */
interface Gather {
  readonly id: number;
  readonly deadline: number | undefined;
  readonly timeout: number | undefined;
  attempt: number;
  remaining: string[];
  wait: Wait | null;
  /** Fetches of this attempt not answered yet. */
  fetching: number;
  holderless: string[];
  failed: { key: string; holder: string }[];
  /** Per key, the holders that refused to send it, and why. */
  readonly refusals: Map<string, { by: Set<string>; failure: ClientFailure }>;
  done: boolean;
}

/** Who waits for a call's reply. */
type Call =
  | { kind: "host"; call: number }
  /** attach's join: then learn the scheduler's run. */
  | { kind: "join" }
  /** A submission: its futures fail if it is refused. */
  | { kind: "graph"; wants: readonly string[] };

interface Request {
  readonly id: number;
  readonly ops: readonly ClientToScheduler[];
  readonly calls: readonly Call[];
  /** Ops before the calls' (a release-keys). */
  readonly offset: number;
  /** When it was first sent. */
  readonly first: number;
  /** When it was last sent (a resumed scheduler sends again what went before it resumed). */
  sent: number;
  attempt: number;
}

type Query =
  | { kind: "learn-run"; reconciling: boolean }
  | { kind: "reconcile"; ifNewRun: boolean }
  | { kind: "who-has"; gather: Gather; orphans: readonly string[]; failed: readonly string[] };

const NO_INSTRUCTIONS: readonly ClientInstruction[] = Object.freeze([]);
const NO_WAITS: readonly Wait[] = Object.freeze([]);
const NO_REPLY: SchedulerReply = { ok: false, error: { name: "ProtocolError", message: "no reply" } };
const CLOSED: ClientFailure = { kind: "closed" };
/** The longest interval (ms) a resuming scheduler is believed to announce itself at. */
const MAX_RESUMING_EVERY = 60_000;

export class ClientCore {
  private readonly keys = new Map<string, KeyState>();
  private readonly specs = new KeptSpecs((key) => this.keys.has(key));
  /** The keys of each submission (update-graph, update-data) the scheduler has not answered yet. */
  private readonly inFlight = new Set<readonly string[]>();
  private readonly scatters = new Map<number, readonly string[]>();
  private readonly waits = new Map<number, Wait>();
  private readonly gathers = new Map<number, Gather>();
  /** Gathers whose keys are done, to fetch once the input is handled. */
  private woken: Gather[] = [];
  private queued: { op: ClientToScheduler; call: Call }[] = [];
  private readonly toRelease = new Set<string>();
  private flushScheduled = false;
  private readonly requests = new Map<number, Request>();
  /** Requests pausing between tries (woken when a resumed scheduler serves). */
  private readonly paused = new Map<number, Request>();
  private readonly queries = new Map<number, Query>();
  private nextRequest = 1;
  private nextQuery = 1;
  /** When a resuming scheduler last said so (0: none lately), and how often it says it. */
  private resumingHeard = 0;
  /** When this client first heard the scheduler resuming now say so (0: none lately). */
  private resumingSince = 0;
  private resumingEvery: number;
  /** When this client started listening for them, and when it last heard one. */
  private listeningSince = 0;
  private lastResuming = 0;
  /**
   * The scheduler's run as this client last heard it (client-keys answers carry it): a
   * client back from a lost connection compares, to find out about a new run whose
   * announcements it missed.
   */
  private knownRun: number | undefined = undefined;
  /** The run the last scheduler-started announcement named (undefined: none named one). */
  private announcedRun: number | undefined = undefined;
  private reconciling = false;
  private reconcileAgain: false | "always" | "if-new-run" = false;
  private heartbeating = false;
  private transportClosed = false;
  private closedFlag = false;
  private out: ClientInstruction[] = [];
  now = 0;

  /** `fx`: where the futures' transitions go (none: not reported). */
  constructor(
    readonly init: ClientInit,
    private readonly fx: ClientEffects | null = null,
  ) {
    this.resumingEvery = init.resumingEvery;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** The scheduler run this client last heard of (undefined: none yet). */
  get run(): number | undefined {
    return this.knownRun;
  }

  status(key: string): KeyStatus {
    return this.keys.get(key)?.status ?? "cancelled";
  }

  /** Whether a future of this client holds `key`. */
  holds(key: string): boolean {
    return this.keys.has(key);
  }

  /** The futures' keys and what the core knows of each (for tests and tools). */
  futures(): { key: string; status: KeyStatus; refs: number; holders: readonly string[] }[] {
    return [...this.keys].map(([key, st]) => ({ key, status: st.status, refs: st.refs, holders: st.holders }));
  }

  /** The specs kept for resubmission, by key (read-only). */
  keptSpecs(): ReadonlyMap<string, TaskSpec> {
    return this.specs.view();
  }

  handle(input: ClientInput): readonly ClientInstruction[] {
    this.now = input.t;
    switch (input.op) {
      case "attach":
        this.listeningSince = input.t;
        this.queue({ op: "client-join", client: this.init.id }, { kind: "join" });
        if (Number.isFinite(this.init.heartbeatEvery)) {
          this.heartbeating = true;
          this.emit({ do: "set-timer", timer: { kind: "heartbeat" }, ms: this.init.heartbeatEvery, repeat: true });
        }
        break;
      case "join":
        this.queue({ op: "client-join", client: this.init.id }, { kind: "host", call: input.call });
        break;
      case "retain":
        for (const key of input.keys) this.retain(key);
        break;
      case "release":
        for (const key of input.keys) this.release(key);
        break;
      case "cancel":
        this.cancel(input.call, input.keys);
        break;
      case "submit":
        this.sendGraph(input.tasks, input.wants);
        break;
      case "fire-and-forget":
        this.queue({ op: "fire-and-forget", client: this.init.id, keys: [...new Set(input.keys)] }, { kind: "host", call: input.call });
        break;
      case "scatter-start": {
        const keys = [...input.keys];
        this.scatters.set(input.scatter, keys);
        this.inFlight.add(keys);
        break;
      }
      case "update-data":
        this.queue({ op: "update-data", client: this.init.id, data: input.data }, { kind: "host", call: input.call });
        break;
      case "scatter-end": {
        const keys = this.scatters.get(input.scatter);
        this.scatters.delete(input.scatter);
        if (keys !== undefined) this.inFlight.delete(keys);
        break;
      }
      case "wait":
        this.openWait(input.wait, null, input.keys, input.timeout);
        break;
      case "gather":
        this.gather(input.gather, input.keys, input.timeout);
        break;
      case "close":
        this.close(input.call);
        break;
      case "flush":
        this.flush();
        break;
      case "timer":
        this.timerFired(input.timer);
        break;
      case "transport-closed":
        this.transportClosed = true;
        break;
      case "heartbeat-failed":
        this.stopHeartbeat();
        break;
      case "reconnected":
        this.scheduleReconcile(true);
        break;
      case "answered":
        this.answered(input.request, input.replies, input.attempt);
        break;
      case "request-failed":
        this.requestFailed(input.request, input.noResponders, input.failure, input.attempt);
        break;
      case "client-keys":
        this.clientKeys(input.query, input.answer);
        break;
      case "who-has":
        this.whoHas(input.query, input.whoHas);
        break;
      case "query-failed":
        this.queryFailed(input.query);
        break;
      case "reports":
        this.applyReports(input.ops);
        break;
      case "scheduler-started":
        this.newRunAnnounced(input.run);
        this.scheduleReconcile(false);
        break;
      case "scheduler-resuming":
        if (this.resumingHeard === 0) this.resumingSince = input.t;
        this.resumingHeard = this.lastResuming = input.t;
        if (typeof input.every === "number" && input.every > 0 && input.every <= MAX_RESUMING_EVERY) this.resumingEvery = input.every;
        break;
      case "scheduler-resumed":
        this.resumingHeard = 0;
        this.wakePaused();
        this.sendAgainWhatWentToTheLast();
        this.resumingSince = 0;
        break;
      case "fetched":
        this.fetched(input.gather, input.holder, input.missing, null);
        break;
      case "fetch-failed":
        this.fetched(input.gather, input.holder, input.keys, input.refused ?? null);
        break;
    }
    while (this.woken.length > 0) this.fetchRound(this.woken.shift()!);
    if (this.out.length === 0) return NO_INSTRUCTIONS;
    const out = this.out;
    this.out = [];
    return out;
  }

  private emit(instruction: ClientInstruction): void {
    this.out.push(instruction);
  }

  /**
   * The key's future takes `event` (machines/definitions/future.ts): its status becomes the
   * state the machine goes to, reported when it changes (a resubmission always: it is news
   * even for a key still pending).
   */
  private move(key: string, st: KeyState, event: FutureEventName): void {
    const from = st.status;
    const to = FUTURE.next(from, event);
    if (to === undefined) throw new Error(`future ${key}: ${event} is not a move from ${from}`);
    st.status = to;
    if (to !== from || event === "RESUBMIT") this.fx?.transition("future", key, event, from, to);
  }

  // ---- futures ---------------------------------------------------------------------------

  private retain(key: string): void {
    let st = this.keys.get(key);
    if (st === undefined) this.keys.set(key, (st = { status: "pending", refs: 0, holders: [], error: null, waits: null }));
    st.refs += 1;
    if (this.toRelease.size > 0) this.toRelease.delete(key);
  }

  private release(key: string): void {
    const st = this.keys.get(key);
    if (st === undefined) return;
    st.refs -= 1;
    if (st.refs > 0) return;
    this.keys.delete(key);
    this.specs.forget(key);
    if (st.waits !== null) this.fail(st, { kind: "released", key });
    if (this.closedFlag) return;
    this.toRelease.add(key);
    this.scheduleFlush();
  }

  /**
   * Cancel keys (Dask's Client.cancel without force; docs/protocol.md, "Cancel"): the futures
   * of `keys`, and of every task of this client depending on one of them (through the specs
   * it kept, intermediate tasks included), fail now with `cancelled`, whatever their status,
   * and one cancel-keys names them all: the scheduler drops this client's wants of exactly
   * those. Keys without a future here are left out. The futures stay counted (their holders
   * still have them); a submission of the key again makes them wait for the new result.
   */
  private cancel(call: number, keys: readonly string[]): void {
    const cancelled: string[] = [];
    const reasons = new Map<string, string>();
    for (const key of keys) if (this.keys.has(key) && !reasons.has(key)) reasons.set(key, "by its client");
    const roots = [...reasons.keys()];
    if (roots.length > 0 && this.specs.size > 0) {
      const dependents = new Map<string, string[]>();
      for (const spec of this.specs.view().values()) {
        for (const dep of spec.deps) {
          let list = dependents.get(dep);
          if (list === undefined) dependents.set(dep, (list = []));
          list.push(spec.key);
        }
      }
      const seen = new Set(roots);
      const stack = roots.map((root) => [root, root] as const);
      while (stack.length > 0) {
        const [key, root] = stack.pop()!;
        for (const dependent of dependents.get(key) ?? []) {
          if (seen.has(dependent)) continue;
          seen.add(dependent);
          if (this.keys.has(dependent) && !reasons.has(dependent)) reasons.set(dependent, `its dependency ${root} was cancelled`);
          stack.push([dependent, root]);
        }
      }
    }
    for (const [key, reason] of reasons) {
      const st = this.keys.get(key)!;
      this.move(key, st, "CANCEL");
      st.holders = [];
      st.error = { kind: "cancelled", key, reason };
      this.fail(st, st.error);
      cancelled.push(key);
    }
    this.queue({ op: "cancel-keys", client: this.init.id, keys: cancelled }, { kind: "host", call });
  }

  private applyReports(ops: readonly SchedulerToClient[]): void {
    for (const op of ops) {
      const st = this.keys.get(op.key);
      // A cancelled key's report was sent before the scheduler took the cancel.
      if (st === undefined || st.status === "cancelled") continue;
      if (op.op === "key-in-memory") {
        this.move(op.key, st, "IN_MEMORY");
        st.holders = op.workers;
        st.error = null;
        for (const w of takeWaits(st)) if (!w.done && --w.left === 0) this.finishWait(w, null);
      } else {
        this.move(op.key, st, op.op === "key-erred" ? "ERRED" : "CANCELLED");
        st.error = op.op === "key-erred" ? { kind: "task-failed", key: op.key, failedKey: op.failedKey, error: op.error } : { kind: "cancelled", key: op.key, reason: op.reason };
        this.fail(st, st.error);
      }
    }
  }

  /** Every wait on the key fails (its outcome, or its future released). */
  private fail(st: KeyState, failure: ClientFailure): void {
    for (const w of takeWaits(st)) if (!w.done) this.finishWait(w, failure);
  }

  private failKeys(keys: readonly string[], failure: ClientFailure): void {
    for (const key of keys) {
      const st = this.keys.get(key);
      if (st === undefined || st.status !== "pending") continue;
      this.move(key, st, "FAILED");
      st.error = failure;
      this.fail(st, failure);
    }
  }

  // ---- waits -----------------------------------------------------------------------------

  /** Wait for `keys` to be finished (with holders); fails at once if one erred, was cancelled or has no future. */
  private openWait(host: number | null, gather: Gather | null, keys: readonly string[], timeout: number | undefined): void {
    const waiting: KeyState[] = [];
    for (const key of keys) {
      const st = this.keys.get(key);
      if (st === undefined) return this.waitOver(host, gather, { kind: "no-future", key });
      if (st.status === "error" || st.status === "cancelled") return this.waitOver(host, gather, st.error!);
      if (!(st.status === "finished" && st.holders.length > 0)) waiting.push(st);
    }
    if (waiting.length === 0) return this.waitOver(host, gather, null);
    const w: Wait = { host, gather, keys, waiting, timeout, left: waiting.length, done: false };
    for (const st of waiting) {
      if (st.waits === null) st.waits = [w];
      else st.waits.push(w);
    }
    if (gather !== null) gather.wait = w;
    else this.waits.set(host!, w);
    if (timeout !== undefined) this.emit({ do: "set-timer", timer: waitTimer(w), ms: Math.max(0, timeout) });
  }

  private finishWait(w: Wait, failure: ClientFailure | null): void {
    w.done = true;
    if (w.timeout !== undefined) this.emit({ do: "clear-timer", timer: waitTimer(w) });
    if (w.host !== null) this.waits.delete(w.host);
    this.waitOver(w.host, w.gather, failure);
  }

  private waitOver(host: number | null, gather: Gather | null, failure: ClientFailure | null): void {
    if (gather !== null) {
      gather.wait = null;
      if (failure !== null) this.finishGather(gather, failure);
      else this.woken.push(gather);
    } else if (failure === null) this.emit({ do: "resolve-wait", wait: host! });
    else this.emit({ do: "reject-wait", wait: host!, failure });
  }

  private waitTimedOut(w: Wait | null | undefined): void {
    if (w === null || w === undefined || w.done) return;
    w.done = true;
    if (w.host !== null) this.waits.delete(w.host);
    for (const st of w.waiting) {
      const at = st.waits === null ? -1 : st.waits.indexOf(w);
      if (at >= 0) st.waits!.splice(at, 1);
    }
    const what = w.keys.length === 1 ? `result of ${w.keys[0]} after ${w.timeout} ms` : `results of ${w.waiting.length} keys after ${w.timeout} ms`;
    this.waitOver(w.host, w.gather, { kind: "timeout", what });
  }

  // ---- gathers ---------------------------------------------------------------------------

  private gather(id: number, keys: readonly string[], timeout: number | undefined): void {
    const unique = [...new Set(keys)];
    if (unique.length === 0) return this.emit({ do: "resolve-gather", gather: id });
    const g: Gather = {
      id,
      deadline: timeout === undefined ? undefined : this.now + timeout,
      timeout,
      attempt: 0,
      remaining: unique,
      wait: null,
      fetching: 0,
      holderless: [],
      failed: [],
      refusals: new Map(),
      done: false,
    };
    this.gathers.set(id, g);
    this.openWait(null, g, g.remaining, timeout);
  }

  /** The gather's remaining keys are done: ask their holders (the next one for each, each attempt). */
  private fetchRound(g: Gather): void {
    if (g.done) return;
    const byHolder = new Map<string, string[]>();
    // A key whose holders were dropped meanwhile (a new run of the scheduler) waits again.
    const holderless: string[] = [];
    for (const key of g.remaining) {
      const st = this.keys.get(key);
      if (st === undefined || st.holders.length === 0) {
        holderless.push(key);
        continue;
      }
      const holder = st.holders[g.attempt % st.holders.length]!;
      let list = byHolder.get(holder);
      if (list === undefined) byHolder.set(holder, (list = []));
      list.push(key);
    }
    g.holderless = holderless;
    g.failed = [];
    g.fetching = byHolder.size;
    for (const [holder, keys] of byHolder) this.emit({ do: "fetch", gather: g.id, holder, keys });
    if (byHolder.size === 0) this.afterFetches(g);
  }

  /** A holder answered: `undelivered`, the keys it did not send; `refused`, why it would not. */
  private fetched(id: number, holder: string, undelivered: readonly string[], refused: ClientFailure | null): void {
    const g = this.gathers.get(id);
    if (g === undefined || g.done || g.fetching === 0) return;
    for (const key of undelivered) {
      g.failed.push({ key, holder });
      if (refused === null) continue;
      const refusal = g.refusals.get(key) ?? { by: new Set<string>(), failure: refused };
      refusal.by.add(holder);
      g.refusals.set(key, refusal);
    }
    if (--g.fetching === 0) this.afterFetches(g);
  }

  /**
   * Forget holders that did not deliver (by name: a report may have replaced the list
   * meanwhile). A key left without holders asks the scheduler who has it now; if nobody
   * does, it waits for the scheduler's next report (the data is being recomputed).
   */
  private afterFetches(g: Gather): void {
    const failed = new Set<string>();
    for (const { key, holder } of g.failed) {
      const st = this.keys.get(key);
      if (st === undefined) continue;
      st.holders = st.holders.filter((h) => h !== holder);
      failed.add(key);
    }
    const orphans = [...failed].filter((key) => {
      const st = this.keys.get(key)!;
      return st.status === "finished" && st.holders.length === 0;
    });
    if (orphans.length === 0) return this.nextRound(g, [...g.holderless, ...failed]);
    const query = this.nextQuery++;
    this.queries.set(query, { kind: "who-has", gather: g, orphans, failed: [...failed] });
    this.emit({ do: "query", query, body: { op: "who-has", keys: orphans } });
  }

  private orphansAnswered(q: Query & { kind: "who-has" }, whoHas: Record<string, string[]>): void {
    let lost = false;
    for (const key of q.orphans) {
      const st = this.keys.get(key);
      if (st === undefined || st.holders.length > 0) continue;
      const holders = Object.hasOwn(whoHas, key) ? whoHas[key] : undefined;
      st.holders = Array.isArray(holders) ? holders : [];
      if (st.holders.length === 0) {
        this.move(key, st, "LOST");
        lost = true;
      }
    }
    // Usually being recomputed; but a scheduler that started a new run may not know the key at all.
    if (lost) this.scheduleReconcile(false);
    this.nextRound(q.gather, [...q.gather.holderless, ...q.failed]);
  }

  private nextRound(g: Gather, remaining: string[]): void {
    g.remaining = remaining;
    if (remaining.length === 0) return this.finishGather(g, null);
    // Every holder the scheduler names refused to send it: asking again would get the same.
    for (const key of remaining) {
      const refused = g.refusals.get(key);
      const holders = this.keys.get(key)?.holders ?? [];
      if (refused !== undefined && holders.length > 0 && holders.every((h) => refused.by.has(h))) return this.finishGather(g, refused.failure);
    }
    // Holders that keep failing to deliver must not outlast the caller's timeout.
    const backoff = Math.min(50 * 2 ** g.attempt, 1000);
    if (g.deadline !== undefined && this.now + backoff >= g.deadline) {
      const one = remaining.length === 1;
      const what = `result${one ? ` of ${remaining[0]}` : `s of ${remaining.length} keys`} after ${g.timeout} ms (the workers said to hold ${one ? "it" : "them"} did not deliver)`;
      return this.finishGather(g, { kind: "timeout", what });
    }
    this.emit({ do: "set-timer", timer: { kind: "gather-backoff", gather: g.id }, ms: backoff });
  }

  private finishGather(g: Gather, failure: ClientFailure | null): void {
    g.done = true;
    this.gathers.delete(g.id);
    this.emit(failure === null ? { do: "resolve-gather", gather: g.id } : { do: "reject-gather", gather: g.id, failure });
  }

  // ---- requests --------------------------------------------------------------------------

  private sendGraph(tasks: TaskSpec[], wants: readonly string[]): void {
    for (const key of wants) {
      // Submitted again after a cancel: its futures wait for the new result.
      const st = this.keys.get(key);
      if (st !== undefined && st.status === "cancelled") {
        this.move(key, st, "SUBMIT");
        st.error = null;
      }
    }
    this.specs.keep(tasks);
    this.inFlight.add(wants);
    this.queue({ op: "update-graph", client: this.init.id, tasks, wants: wants as string[] }, { kind: "graph", wants });
  }

  private queue(op: ClientToScheduler, call: Call): void {
    this.queued.push({ op, call });
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    this.emit({ do: "schedule-flush" });
  }

  /**
   * What is queued goes in one envelope: the releases first, then the calls in order, then
   * the releases of keys those calls submit or fire and forget (released before them, the
   * key would not be there yet, or gone before the scheduler is told to keep it running).
   */
  private flush(): void {
    this.flushScheduled = false;
    if (this.transportClosed) return;
    const batch = this.queued;
    this.queued = [];
    const ops: ClientToScheduler[] = [];
    let late: string[] = [];
    if (this.toRelease.size > 0) {
      const named = keysNamedBy(batch);
      const early = named === null ? [...this.toRelease] : [...this.toRelease].filter((key) => !named.has(key));
      if (named !== null) late = [...this.toRelease].filter((key) => named.has(key));
      if (early.length > 0) ops.push({ op: "release-keys", client: this.init.id, keys: early });
      this.toRelease.clear();
    }
    const offset = ops.length;
    for (const q of batch) ops.push(q.op);
    if (late.length > 0) ops.push({ op: "release-keys", client: this.init.id, keys: late });
    if (ops.length === 0) return;
    const request: Request = { id: this.nextRequest++, ops, calls: batch.map((q) => q.call), offset, first: this.now, sent: this.now, attempt: 0 };
    this.requests.set(request.id, request);
    this.send(request);
  }

  private send(request: Request): void {
    request.sent = this.now;
    // The last try near the deadline still gets a moment to be answered.
    this.emit({ do: "request", request: request.id, ops: request.ops, timeout: Math.max(250, this.waitUntil(request.first) - this.now), attempt: request.attempt });
  }

  /**
   * A scheduler that resumed serves from now on; it took no request before it began resuming
   * (it subscribes once it has). A request last sent before then, and not answered, went to
   * the scheduler before it, which is gone: the server may have handed it to that one's
   * subscription in the moment before it noticed the process had died, and no answer will
   * come. It is sent again (an answer to the earlier try is ignored). Had the earlier one
   * taken it and logged it, the resumed one takes the ops again as a client's ops sent twice.
   */
  private sendAgainWhatWentToTheLast(): void {
    if (this.resumingSince === 0) return;
    for (const request of [...this.requests.values()]) {
      if (!this.paused.has(request.id) && request.sent < this.resumingSince) this.sendAgain(request);
    }
  }

  /** Requests pausing after "no responders" go now: a scheduler serves. */
  private wakePaused(): void {
    for (const request of [...this.paused.values()]) {
      this.paused.delete(request.id);
      this.emit({ do: "clear-timer", timer: { kind: "retry", request: request.id } });
      this.sendAgain(request);
    }
  }

  /**
   * A scheduler started a new run, subscribing before it said so. A request sent before this
   * client heard it and not answered went either to that one (whose answer is on its way) or
   * to the scheduler before it, which is gone: the server may have handed it to that one's
   * subscription in the moment before it noticed the process had died, and no answer would
   * come before the request's timeout. The client cannot tell which, so it sends each such
   * request again, once per run (the run is announced three times), and takes only the new
   * try's answer; a scheduler that had taken the first try takes the ops twice, which changes
   * nothing (a key submitted again is known, a release or cancel of a released key is none).
   */
  private newRunAnnounced(run: number | undefined): void {
    if (this.closedFlag) return;
    if (run === undefined || run !== this.announcedRun) {
      this.announcedRun = run;
      for (const request of [...this.requests.values()]) if (!this.paused.has(request.id)) this.sendAgain(request);
    }
    this.wakePaused();
  }

  /** The request `id`, unless `attempt` names a try it has since sent again. */
  private current(id: number, attempt: number | undefined): Request | undefined {
    const request = this.requests.get(id);
    return request === undefined || (attempt !== undefined && attempt !== request.attempt) ? undefined : request;
  }

  private answered(id: number, replies: readonly SchedulerReply[], attempt: number | undefined): void {
    const request = this.current(id, attempt);
    if (request === undefined) return;
    this.requests.delete(id);
    request.calls.forEach((call, i) => this.callAnswered(call, replies[request.offset + i] ?? NO_REPLY));
  }

  /**
   * A request nobody received (no responders: no scheduler serves, one is restarting) is
   * sent again with backoff, until `requestTimeout` from the first try, or longer while a
   * resuming scheduler keeps saying so (`waitUntil`); then its calls fail with a timeout. Any
   * other failure is the calls'.
   */
  private requestFailed(id: number, noResponders: boolean, failure: ClientFailure, attempt: number | undefined): void {
    const request = this.current(id, attempt);
    if (request === undefined) return;
    // A closing client's last word (client-leave) is not worth waiting for.
    if (this.closedFlag || !noResponders) return this.failRequest(request, failure);
    const left = this.waitUntil(request.first) - this.now;
    if (left <= 0) {
      const waited =
        this.lastResuming >= request.first
          ? `${this.now - request.first} ms (it last said it was resuming ${this.now - this.lastResuming} ms before)`
          : `${this.init.requestTimeout} ms`;
      return this.failRequest(request, { kind: "timeout", what: `no scheduler of cluster ${JSON.stringify(this.init.cluster)} answered within ${waited} (no responders on ${this.init.opsSubject})` });
    }
    this.paused.set(id, request);
    this.emit({ do: "set-timer", timer: { kind: "retry", request: id }, ms: Math.min(50 * 2 ** request.attempt, 1000, left) });
  }

  private sendAgain(request: Request): void {
    if (this.closedFlag || this.transportClosed) return this.failRequest(request, CLOSED);
    request.attempt += 1;
    this.send(request);
  }

  private failRequest(request: Request, failure: ClientFailure): void {
    this.requests.delete(request.id);
    for (const call of request.calls) this.callFailed(call, failure);
  }

  /**
   * Until when a request first tried at `first` waits: `requestTimeout` after it, or, while a
   * resuming scheduler keeps announcing itself, `resumingMissed` announcements after the last
   * one heard, up to `resumeWait` after it.
   */
  private waitUntil(first: number): number {
    const base = first + this.init.requestTimeout;
    // A client that has not listened for a whole interval yet gives a resuming scheduler the chance to say so.
    const until = this.resumingHeard === 0 ? this.listeningSince + this.resumingEvery + 100 : this.resumingHeard + this.init.resumingMissed * this.resumingEvery;
    return Math.max(base, Math.min(first + this.init.resumeWait, until));
  }

  private callAnswered(call: Call, reply: SchedulerReply): void {
    switch (call.kind) {
      case "host":
        return this.emit({ do: "answer-call", call: call.call, reply });
      case "join":
        return this.learnRun(false);
      case "graph":
        if (!reply.ok) this.failKeys(call.wants, { kind: "refused", error: reply.error });
        this.inFlight.delete(call.wants);
        return;
    }
  }

  private callFailed(call: Call, failure: ClientFailure): void {
    switch (call.kind) {
      case "host":
        return this.emit({ do: "fail-call", call: call.call, failure });
      case "join":
        return;
      case "graph":
        this.failKeys(call.wants, failure);
        this.inFlight.delete(call.wants);
        return;
    }
  }

  // ---- timers ----------------------------------------------------------------------------

  private timerFired(timer: ClientTimer): void {
    switch (timer.kind) {
      case "heartbeat":
        // Tell the scheduler this client is still here, so it keeps the futures (Dask's heartbeat-client).
        if (!this.heartbeating) return;
        if (this.closedFlag || this.transportClosed) return this.stopHeartbeat();
        return this.emit({ do: "publish", ops: [{ op: "heartbeat-client", client: this.init.id }] });
      case "retry": {
        const request = this.paused.get(timer.request);
        if (request === undefined) return;
        this.paused.delete(timer.request);
        return this.sendAgain(request);
      }
      case "wait":
        return this.waitTimedOut(this.waits.get(timer.wait));
      case "gather-wait":
        return this.waitTimedOut(this.gathers.get(timer.gather)?.wait);
      case "gather-backoff": {
        const g = this.gathers.get(timer.gather);
        if (g === undefined || g.done || g.wait !== null || g.fetching > 0) return;
        g.attempt += 1;
        return this.openWait(null, g, g.remaining, g.deadline === undefined ? undefined : g.deadline - this.now);
      }
    }
  }

  private stopHeartbeat(): void {
    if (!this.heartbeating) return;
    this.heartbeating = false;
    this.emit({ do: "clear-timer", timer: { kind: "heartbeat" } });
  }

  // ---- a new run of the scheduler, a connection back ------------------------------------

  /** `ifNewRun`: only if the scheduler's run is another than the one this client knew (a reconnect). */
  private scheduleReconcile(ifNewRun: boolean): void {
    if (this.closedFlag) return;
    if (this.reconciling) {
      if (!ifNewRun) this.reconcileAgain = "always";
      else if (this.reconcileAgain === false) this.reconcileAgain = "if-new-run";
      return;
    }
    this.reconciling = true;
    this.reconcile(ifNewRun);
  }

  private reconcileDone(): void {
    this.reconciling = false;
    const again = this.reconcileAgain;
    if (again === false) return;
    this.reconcileAgain = false;
    this.scheduleReconcile(again === "if-new-run");
  }

  /**
   * A scheduler announced a new run (it restarted without a log to resume from, or the
   * announcement repeats one this client already knows), or the connection came back: ask
   * the scheduler which of this client's keys it knows and holds for it (`reconciled`).
   */
  private reconcile(ifNewRun: boolean): void {
    if (this.keys.size === 0) {
      // Nothing to bring back; learn the run this client now talks to.
      if (ifNewRun) this.knownRun = undefined;
      return this.learnRun(true);
    }
    const asked = [...new Set([...this.keys.keys(), ...this.specs.keys()])];
    const query = this.nextQuery++;
    this.queries.set(query, { kind: "reconcile", ifNewRun });
    this.emit({ do: "query", query, body: { op: "client-keys", client: this.init.id, keys: asked } });
  }

  /** Ask the scheduler which run it is serving (a client-keys question about no keys). */
  private learnRun(reconciling: boolean): void {
    if (this.knownRun !== undefined || this.closedFlag) return reconciling ? this.reconcileDone() : undefined;
    const query = this.nextQuery++;
    this.queries.set(query, { kind: "learn-run", reconciling });
    this.emit({ do: "query", query, body: { op: "client-keys", client: this.init.id, keys: [] } });
  }

  private clientKeys(id: number, answer: ClientKeysAnswer | null): void {
    const q = this.queries.get(id);
    if (q === undefined) return;
    this.queries.delete(id);
    if (q.kind === "learn-run") {
      if (this.knownRun === undefined && typeof answer?.run === "number") this.knownRun = answer.run;
      if (q.reconciling) this.reconcileDone();
      return;
    }
    if (q.kind === "reconcile") {
      if (!this.closedFlag && answer !== null && answer.wanted !== undefined) this.reconciled(answer, answer.wanted, q.ifNewRun);
      this.reconcileDone();
    }
  }

  private whoHas(id: number, whoHas: Record<string, string[]>): void {
    const q = this.queries.get(id);
    if (q === undefined) return;
    this.queries.delete(id);
    if (q.kind === "who-has") this.orphansAnswered(q, whoHas);
  }

  private queryFailed(id: number): void {
    const q = this.queries.get(id);
    if (q === undefined) return;
    this.queries.delete(id);
    // No answer: the scheduler's next announcement (or report) asks again.
    if (q.kind === "who-has") this.orphansAnswered(q, {});
    else if (q.kind === "reconcile" || q.reconciling) this.reconcileDone();
  }

  /**
   * The scheduler said which of this client's keys it knows and holds for it. Back from a
   * lost connection to the run it knew: take the reports it missed. Otherwise (a new run):
   * for each key it does not hold for this client (and whose submission is not on its way),
   * resubmit the task, with whatever of the graph below it the scheduler does not know, so
   * the future completes on the new run; a key that cannot be computed again (data this
   * client scattered, or a task depending on such data) fails with scheduler-restarted.
   * Results of the old run are gone with it (the new run has the workers free them), so
   * finished futures are computed again too. Erred and cancelled futures keep their outcome.
   */
  private reconciled(answer: ClientKeysAnswer, wantedKeys: readonly string[], ifNewRun: boolean): void {
    const run = answer.run;
    const known0 = this.knownRun;
    if (run !== undefined) this.knownRun = run;
    if (ifNewRun && (run === undefined || known0 === undefined || run === known0)) {
      // The scheduler kept this client's futures (or released them after its grace, and says so
      // with key-cancelled). Reports sent while the connection was down are lost: take them
      // again, for the keys still waiting for one.
      if (answer.reports !== undefined) this.applyReports(answer.reports.filter((op) => this.keys.get(op.key)?.status === "pending"));
      return;
    }
    const known = new Set(answer.known);
    const wanted = new Set(wantedKeys);
    const submitted = new Set<string>();
    for (const keys of this.inFlight) for (const key of keys) submitted.add(key);
    const lost: string[] = [];
    for (const [key, st] of this.keys) {
      if (wanted.has(key) || submitted.has(key) || st.status === "error" || st.status === "cancelled") continue;
      lost.push(key);
    }
    if (lost.length === 0) return;
    const plan = planResubmission(lost, this.specs.view(), known);
    for (const key of plan.again) {
      const st = this.keys.get(key)!;
      // Whatever it held lived in the old run: wait for the new run's report.
      this.move(key, st, "RESUBMIT");
      st.holders = [];
    }
    for (const [key, lostKey] of plan.failed) {
      const st = this.keys.get(key)!;
      this.move(key, st, "UNRECOVERABLE");
      st.error = { kind: "scheduler-restarted", key, cluster: this.init.cluster, lostKey };
      this.fail(st, st.error);
    }
    if (plan.again.length > 0) this.sendGraph(plan.tasks, plan.again);
  }

  // ---- closing ---------------------------------------------------------------------------

  /** Release every future and leave (`call`: the client-leave); what waits fails with closed. */
  private close(call: number | undefined): void {
    if (this.closedFlag) return;
    if (call !== undefined) this.queue({ op: "client-leave", client: this.init.id }, { kind: "host", call });
    this.closedFlag = true;
    this.stopHeartbeat();
    for (const st of this.keys.values()) this.fail(st, CLOSED);
    this.keys.clear();
    this.specs.clear();
    this.inFlight.clear();
  }
}

/** Keys the batch's update-graph ops want and fire-and-forget ops name; null when it has neither. */
function keysNamedBy(batch: readonly { op: ClientToScheduler }[]): Set<string> | null {
  let named: Set<string> | null = null;
  for (const { op } of batch) {
    const keys = op.op === "update-graph" ? op.wants : op.op === "fire-and-forget" ? op.keys : null;
    if (keys === null) continue;
    named ??= new Set();
    for (const key of keys) named.add(key);
  }
  return named;
}

/** The key's waits, handed over: the key has none left. */
function takeWaits(st: KeyState): readonly Wait[] {
  const waits = st.waits;
  if (waits === null) return NO_WAITS;
  st.waits = null;
  return waits;
}

function waitTimer(w: Wait): ClientTimer {
  return w.gather !== null ? { kind: "gather-wait", gather: w.gather.id } : { kind: "wait", wait: w.host! };
}
