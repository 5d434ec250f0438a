import type { Config } from "../machines/config.js";
import { ForbiddenError, ProtocolError } from "../machines/errors.js";
import { PROTOCOL_VERSION, type Envelope, type LivenessOp, type SchedulerToClient, type SchedulerToWorker, type WorkerMissingOp } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerEffects, SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";
import type { LogSink } from "../log/types.js";
import { subjects, type Subjects } from "../transport/subjects.js";
import type { Msg, Subscription, Transport } from "../transport/types.js";
import type { Clock } from "./clock.js";
import { Liveness, type ClientRelease, type ProbeOutcome } from "./liveness.js";
import { RefusalSummary, refusal } from "./host/op-roles.js";
import { MembershipWatch, type MembershipChange } from "./membership.js";
import { Outbox } from "./outbox.js";
import { answerQuery } from "./scheduler-queries.js";
import { ActorRecorder } from "./host/recorder.js";
import { envelopeProblem, schedulerOpProblem } from "./validate-ops.js";
import { withTime } from "./host/with-time.js";
import { ON_DEMAND_GAP, serializableConfig } from "./host/scheduler-host.js";

export interface SchedulerActorOptions {
  cluster: string;
  transport: Transport;
  config: Config;
  clock: Clock;
  log: LogSink | null;
  /** Called with anything that went wrong handling a message (it is dropped, never fatal). */
  onError?: (error: unknown) => void;
  /** The seq the scheduler's log continues at, when it already holds records (a log in JetStream). Default 0. */
  firstSeq?: number;
  /**
   * Continue a scheduler rebuilt from its log (a restart, replay/jetstream-resume.ts): its
   * core, to connect to this actor's effects. `start` then writes no start record, only a
   * `scheduler-start` input marking the restart.
   */
  resume?: { core: SchedulerCore; connect(effects: SchedulerEffects): void };
  /**
   * Milliseconds the scheduler's reports to clients (key-in-memory, key-erred, ...) and its
   * free-keys to workers may wait to travel with more, as Dask's scheduler batches its sends
   * (BatchedSend; 2 ms to clients). Default: LINGER_MS on a transport with a wire (NATS), 0
   * (end of turn, as every other op) in process.
   */
  lingerMs?: number;
  /** Told each time a worker or client joins or leaves, with the reason (actors/membership.ts). */
  onMembership?: (change: MembershipChange) => void;
}

type SchedulerOp = Omit<SchedulerInput, "t">;

/** How long reports to clients and free-keys may wait for company on a wire (Dask's client BatchedSend interval). */
export const LINGER_MS = 2;

/**
 * Hosts the scheduler core: takes envelopes from `natsched.<cluster>.scheduler` and the
 * subjects below it (one per worker and per client), refuses what the subject's role may not
 * send (actors/host/op-roles.ts), stamps each op with the time, records it, feeds the core, and
 * sends what the core asks for.
 * Liveness (actors/liveness.ts): a worker silent for `workerTtl` seconds, or silent and no
 * longer subscribed to its subjects, is reported lost to the core; a client silent for
 * `clientReleaseGrace` seconds is made to leave. Both are recorded inputs with their time.
 */
export class SchedulerActor {
  readonly core: SchedulerCore;
  readonly recorder: ActorRecorder;
  private readonly subjects: Subjects;
  private readonly outbox: Outbox<SchedulerToWorker | SchedulerToClient>;
  private readonly liveness: Liveness;
  /** Workers with a liveness probe in flight. */
  private readonly probing = new Set<string>();
  private readonly subscriptions: Subscription[] = [];
  private livenessTimer: ReturnType<typeof setInterval> | null = null;
  private balanceTimer: ReturnType<typeof setInterval> | null = null;
  private lastBalance = -Infinity;
  private ticking = false;
  /**
   * Running totals since this actor started (a resumed scheduler counts from its restart):
   * what `$SRV.STATS` and the status endpoint report besides the gauges.
   */
  readonly totals: SchedulerTotals = { tasksCompleted: 0, tasksErred: 0, stealsRequested: 0, stealsConfirmed: 0, stealsRejected: 0, refused: 0 };
  /** performance.now() of the last liveness tick, to notice a stalled event loop. */
  private lastTickMs = 0;
  private closed = false;
  private readonly membership: MembershipWatch | null;

  constructor(private readonly opts: SchedulerActorOptions) {
    this.subjects = subjects(opts.cluster);
    this.recorder = new ActorRecorder("scheduler", opts.log, opts.firstSeq);
    const lingerMs = opts.lingerMs ?? (opts.transport.wire !== undefined ? LINGER_MS : 0);
    const clientPrefix = `natsched.${opts.cluster}.client.`;
    this.outbox = new Outbox(opts.transport, "scheduler", {
      ...(lingerMs > 0 ? { linger: { ms: lingerMs, matches: (subject: string) => subject.startsWith(clientPrefix) } } : {}),
    });
    this.liveness = new Liveness(opts.config);
    const { recorder, outbox } = this;
    const s = this.subjects;
    const totals = this.totals;
    const membership = (this.membership = opts.onMembership ? new MembershipWatch(() => this.core, opts.onMembership) : null);
    const effects: SchedulerEffects = {
      // A free-keys alone need not wake the worker: it joins the worker's next message.
      toWorker: (worker, op) => outbox.send(s.worker(worker), op, op.op === "free-keys"),
      toClient: (client, op) => outbox.send(s.client(client), op),
      transition: (machine, id, event, from, to, why) => {
        if (machine === "task") countTaskTransition(totals, event, from, to);
        else if (machine === "worker") membership?.workerTransition(id, event, why);
        recorder.transition(machine, id, event, from, to, why);
      },
    };
    opts.resume?.connect(effects);
    this.core = opts.resume?.core ?? new SchedulerCore(opts.config, effects);
  }

  start(): void {
    const t = this.opts.clock.now();
    if (this.opts.resume === undefined) this.recorder.start(t, "scheduler", { cluster: this.opts.cluster, config: serializableConfig(this.opts.config) });
    this.feed({ op: "scheduler-start", t });
    this.subscriptions.push(this.opts.transport.subscribe(this.subjects.scheduler, (msg) => this.receive(msg)));
    this.subscriptions.push(this.opts.transport.subscribe(this.subjects.schedulerTree, (msg) => this.receive(msg)));
    this.subscriptions.push(this.opts.transport.subscribe(this.subjects.query, (msg) => this.answer(msg)));
    if (this.opts.config.workStealing) {
      this.balanceTimer = setInterval(() => this.maybeBalance(true), this.opts.config.workStealingInterval * 1000);
      this.balanceTimer.unref();
    }
    this.lastTickMs = performance.now();
    this.livenessTimer = setInterval(() => void this.tick(), this.tickMs);
    this.livenessTimer.unref();
  }

  private get tickMs(): number {
    return Math.min(1000, Math.max(50, this.opts.config.heartbeatInterval * 1000));
  }

  /** Feed one stimulus (already stamped) and send what it produced. */
  feed(input: SchedulerInput): SchedulerReply {
    this.recorder.input(input);
    if (input.op === "worker-lost") this.liveness.workerGone(input.name, input.id);
    if (this.membership === null) return this.core.handle(input);
    this.membership.before(input);
    const reply = this.core.handle(input);
    this.membership.after(input);
    return reply;
  }

  private receive(msg: Msg): void {
    const envelope = msg.data as Envelope<SchedulerOp | LivenessOp>;
    const malformed = msg.problem ?? envelopeProblem(envelope);
    if (malformed !== undefined) {
      // A body the transport could not read, it has reported already.
      if (msg.problem === undefined) this.opts.onError?.(new ProtocolError(`scheduler: dropped a malformed message on ${msg.subject}: ${malformed}`));
      if (msg.reply) this.opts.transport.publish(msg.reply, { replies: [], error: `malformed envelope: ${malformed}` });
      return;
    }
    const sender = this.subjects.senderOf(msg.subject);
    const replies: SchedulerReply[] = [];
    let refused: RefusalSummary | undefined;
    for (const op of envelope.ops) {
      const problem = schedulerOpProblem(op);
      if (problem !== undefined) {
        this.opts.onError?.(new ProtocolError(`scheduler: dropped an op from ${String(envelope.from)} on ${msg.subject}: ${problem}`));
        replies.push({ ok: false, error: { name: "ProtocolError", message: problem, code: "PROTOCOL" } });
        continue;
      }
      const forbidden = refusal(this.core, sender, op, msg.subject);
      if (forbidden !== undefined) {
        this.totals.refused++;
        (refused ??= new RefusalSummary()).add(forbidden);
        replies.push({ ok: false, error: { name: "ForbiddenError", message: forbidden, code: "FORBIDDEN" } });
        continue;
      }
      const t = this.opts.clock.now();
      this.touch(op, t);
      if (isLivenessOp(op)) continue;
      try {
        replies.push(this.feed(withTime(op, t) as SchedulerInput));
      } catch (error) {
        this.opts.onError?.(error);
        replies.push({ ok: false, error: { name: "InternalError", message: String((error as Error)?.message ?? error) } });
      }
    }
    if (refused !== undefined) {
      this.opts.onError?.(new ForbiddenError(`scheduler: refused ${refused.count} op(s) from ${JSON.stringify(String(envelope.from))} on ${msg.subject}: ${refused}`));
    }
    if (msg.reply) this.opts.transport.publish(msg.reply, { replies });
    this.maybeBalance(false);
    this.outbox.flush();
  }

  /**
   * A stealing pass every workStealingInterval, and on demand as soon as some workers sit
   * idle while others have a backlog (Dask's seed: "during any stage when we submit tasks to
   * workers"), at most once per ON_DEMAND_GAP. The pass is an input like any other.
   */
  private maybeBalance(periodic: boolean): void {
    const now = this.opts.clock.now();
    if (!periodic && now - this.lastBalance < ON_DEMAND_GAP) return;
    if (!this.core.wantsBalance()) return;
    this.lastBalance = now;
    this.feed({ op: "balance", t: now });
    if (periodic) this.outbox.flush();
  }

  /** Read-only questions: answered from the core's state, not recorded (they change nothing). */
  private answer(msg: Msg): void {
    if (msg.reply === undefined) return;
    const q = msg.data as { op?: string; keys?: unknown };
    const reply = msg.problem !== undefined ? { error: `malformed query: ${msg.problem}` } : answerQuery(this.core, q, this.totals);
    this.opts.transport.publish(msg.reply, reply);
  }

  /** Note that a worker or client is alive (any message from it counts). */
  private touch(op: SchedulerOp | LivenessOp, t: number): void {
    const o = op as { op: string; worker?: string; name?: string; id?: string; client?: string };
    if (o.op === "unregister-worker") {
      this.liveness.workerGone(o.name!);
      return;
    }
    const name = o.op === "register-worker" || o.op === "heartbeat" ? o.name : o.worker;
    if (name !== undefined && o.id !== undefined) {
      // A worker the core does not have is not watched: it was removed, and only registering again brings it back.
      if (o.op === "register-worker" || this.core.workers.get(name)?.id === o.id) this.liveness.heardFromWorker(name, o.id, t);
      else if (o.op === "heartbeat" && !this.core.workers.has(name)) this.sayMissing(name, o.id);
    }
    if (o.client === undefined) return;
    if (o.op === "client-leave") {
      this.liveness.clientGone(o.client);
      return;
    }
    const released = this.liveness.heardFromClient(o.client, t);
    if (released === undefined) return;
    // It was released while it could not be heard: its futures are gone, say so.
    const reason = `released by the scheduler: ${released.reason}`;
    for (const key of released.keys) this.outbox.send(this.subjects.client(o.client), { op: "key-cancelled", key, reason });
  }

  /**
   * A heartbeat from a worker this scheduler does not have: one removed while it was still
   * connected (its event loop or process stalled past workerTtl) would otherwise go on
   * heartbeating, unused, for good. Told so, it registers again with what it holds. (A worker
   * whose name is taken by a newer incarnation is not told: that one replaced it.)
   */
  private sayMissing(name: string, id: string): void {
    const op: WorkerMissingOp = { v: PROTOCOL_VERSION, op: "worker-missing", name, id };
    this.opts.transport.publish(this.subjects.workerMissing(name), op);
  }

  /**
   * Every heartbeatInterval: first a flush, a round trip through the transport, so every
   * message sent before it has been handled; then what is due. A flush that fails or is
   * slow, or a tick that comes late, means this host may not have been able to hear anyone:
   * every silence restarts instead of counting.
   */
  private async tick(): Promise<void> {
    if (this.ticking || this.closed) return;
    this.ticking = true;
    try {
      const startedMs = performance.now();
      const stalled = startedMs - this.lastTickMs > 3 * this.tickMs + 100;
      let reachable = true;
      await this.opts.transport.flush().catch(() => (reachable = false));
      if (this.closed) return;
      const now = this.opts.clock.now();
      this.lastTickMs = performance.now();
      if (stalled || !reachable || this.lastTickMs - startedMs > Math.max(250, this.opts.config.heartbeatInterval * 1000)) {
        this.liveness.credit(now);
        return;
      }
      for (const client of this.core.clients.keys()) this.liveness.adoptClient(client, now);
      const due = this.liveness.due(now);
      for (const { name, id, reason } of due.lost) this.feed({ op: "worker-lost", name, id, reason, t: now });
      for (const release of due.release) this.releaseClient(release, now);
      if (due.lost.length > 0 || due.release.length > 0) this.outbox.flush();
      for (const target of due.probe) void this.probe(target.name, target.id);
    } finally {
      this.ticking = false;
    }
  }

  private releaseClient({ client, reason }: ClientRelease, t: number): void {
    const wanted = this.core.clients.get(client);
    if (wanted === undefined) return;
    this.liveness.noteReleased(client, [...wanted].map((ts) => ts.key), reason);
    this.feed({ op: "client-leave", client, reason, t });
  }

  /**
   * Is anyone still subscribed to a silent worker's data subject? NATS answers "no
   * responders" at once when nobody is: the worker's connection is gone (a SIGKILLed
   * process's socket closes, and the server drops its subscriptions).
   */
  private async probe(name: string, id: string): Promise<void> {
    if (this.probing.has(name)) return;
    this.probing.add(name);
    let outcome: ProbeOutcome = "inconclusive";
    try {
      const timeout = Math.max(500, 2000 * this.opts.config.heartbeatInterval);
      await this.opts.transport.request(this.subjects.workerData(name), { op: "get-data", keys: [], who: "scheduler" }, { timeout });
      outcome = "answered";
    } catch (error) {
      if (error instanceof ProtocolError && /no responders/.test(error.message)) outcome = "no-responders";
    } finally {
      this.probing.delete(name);
    }
    if (!this.closed) this.liveness.probeResult(name, id, outcome, this.opts.clock.now());
  }

  close(): void {
    this.closed = true;
    const t = this.opts.clock.now();
    if (this.livenessTimer !== null) clearInterval(this.livenessTimer);
    if (this.balanceTimer !== null) clearInterval(this.balanceTimer);
    for (const sub of this.subscriptions) sub.unsubscribe();
    this.subscriptions.length = 0;
    this.outbox.flushAll();
    this.feed({ op: "scheduler-close", t });
    this.recorder.stop(t);
  }
}

export interface SchedulerTotals {
  /** Tasks a worker computed (processing -> memory). */
  tasksCompleted: number;
  /** Tasks that erred: their function threw, a dependency erred, or they killed too many workers. */
  tasksErred: number;
  /** Steal requests sent to a victim worker, and how they were answered. */
  stealsRequested: number;
  stealsConfirmed: number;
  stealsRejected: number;
  /** Ops refused for their sender's role or incarnation (FORBIDDEN; actors/host/op-roles.ts): never fed to the core. */
  refused: number;
}

function countTaskTransition(totals: SchedulerTotals, event: string, from: string, to: string): void {
  if (event === "FINISH" && from.startsWith("processing")) totals.tasksCompleted++;
  else if (to === "erred" && from !== "erred") totals.tasksErred++;
  else if (event === "STEAL") totals.stealsRequested++;
  else if (event === "STEAL_CONFIRM") totals.stealsConfirmed++;
  else if (event === "STEAL_REJECT") totals.stealsRejected++;
}

function isLivenessOp(op: SchedulerOp | LivenessOp): op is LivenessOp {
  return op.op === "heartbeat" || op.op === "heartbeat-client";
}
