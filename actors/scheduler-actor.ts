import type { Config } from "../machines/config.js";
import { ForbiddenError, ProtocolError } from "../machines/errors.js";
import { PROTOCOL_VERSION, type Envelope, type HostMetrics, type LivenessOp, type TaskErredOp, type SchedulerToClient, type SchedulerToWorker, type WorkerMissingOp } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerEffects, SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";
import type { LogSink } from "../log/types.js";
import { subjects, type Subjects } from "../transport/subjects.js";
import type { Msg, Subscription, Transport } from "../transport/types.js";
import type { Clock } from "./host/clock.js";
import { realTimers } from "./host/host-timers.js";
import { LivenessWatch, livenessCheckInterval } from "./host/liveness-watch.js";
import { MetricsGate } from "./host/metrics-gate.js";
import { boundStack, MAX_STACK_CHARS } from "../machines/error-stack.js";
import { StealPasses } from "./host/steal-passes.js";
import type { ProbeOutcome } from "./host/liveness.js";
import { RefusalSummary, refusal } from "./host/op-roles.js";
import { MembershipWatch, type MembershipChange } from "./membership.js";
import { Outbox } from "./outbox.js";
import { answerQuery } from "./scheduler-queries.js";
import { ActorRecorder } from "./host/recorder.js";
import { stampCause } from "./host/causes.js";
import { envelopeProblem, schedulerOpProblem } from "./validate-ops.js";
import { withTime } from "./host/with-time.js";

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
 * Work stealing and liveness are the host kit's (actors/host/), run on the real clock:
 * stealing passes, and a liveness check every heartbeat (a worker silent for `workerTtl`
 * seconds, or silent and no longer subscribed to its subjects, is lost; a client silent for
 * `clientReleaseGrace` seconds is made to leave), each a recorded input with its time.
 */
export class SchedulerActor {
  readonly core: SchedulerCore;
  readonly recorder: ActorRecorder;
  private readonly subjects: Subjects;
  private readonly outbox: Outbox<SchedulerToWorker | SchedulerToClient>;
  private readonly liveness: LivenessWatch;
  private readonly metricsGate = new MetricsGate();
  private readonly steals: StealPasses;
  private readonly subscriptions: Subscription[] = [];
  private livenessTimer: ReturnType<typeof setInterval> | null = null;
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
    const { recorder, outbox } = this;
    const s = this.subjects;
    const totals = this.totals;
    const membership = (this.membership = opts.onMembership ? new MembershipWatch(() => this.core, opts.onMembership) : null);
    const effects: SchedulerEffects = {
      // A free-keys alone need not wake the worker: it joins the worker's next message.
      toWorker: (worker, op) => outbox.send(s.worker(worker), stampCause(op, recorder), op.op === "free-keys"),
      toClient: (client, op) => outbox.send(s.client(client), stampCause(op, recorder)),
      transition: (machine, id, event, from, to, why) => {
        if (machine === "task") countTaskTransition(totals, event, from, to);
        else if (machine === "worker") membership?.workerTransition(id, event, why);
        recorder.transition(machine, id, event, from, to, why);
      },
    };
    opts.resume?.connect(effects);
    this.core = opts.resume?.core ?? new SchedulerCore(opts.config, effects);
    this.liveness = new LivenessWatch(opts.config, {
      core: this.core,
      feed: (input) => this.feed(input),
      probe: (name, _id, answer) => void this.probe(name).then((outcome) => answer(outcome, opts.clock.now())),
      sayMissing: (name, id) => this.sayMissing(name, id),
      tellReleased: (client, keys, reason) => {
        for (const key of keys) this.outbox.send(this.subjects.client(client), stampCause({ op: "key-cancelled", key, reason }, this.recorder));
      },
    });
    // A periodic pass is not part of a message: what it produced is sent at once.
    const stealHost = { core: this.core, feed: (input: SchedulerInput) => this.feed(input), passed: () => this.outbox.flush() };
    this.steals = new StealPasses(stealHost, realTimers(opts.clock), opts.config.workStealingInterval);
  }

  start(): void {
    const t = this.opts.clock.now();
    if (this.opts.resume === undefined) this.recorder.startScheduler(t, this.opts.cluster, this.opts.config);
    this.feed({ op: "scheduler-start", t });
    this.subscriptions.push(this.opts.transport.subscribe(this.subjects.scheduler, (msg) => this.receive(msg)));
    this.subscriptions.push(this.opts.transport.subscribe(this.subjects.schedulerTree, (msg) => this.receive(msg)));
    this.subscriptions.push(this.opts.transport.subscribe(this.subjects.query, (msg) => this.answer(msg)));
    this.lastTickMs = performance.now();
    this.livenessTimer = setInterval(() => void this.tick(), this.tickMs);
    this.livenessTimer.unref();
  }

  private get tickMs(): number {
    return livenessCheckInterval(this.opts.config.heartbeatInterval) * 1000;
  }

  /** Feed one stimulus (already stamped) and send what it produced. */
  feed(input: SchedulerInput): SchedulerReply {
    this.recorder.input(input);
    if (this.membership === null) return this.handle(input);
    this.membership.before(input);
    const reply = this.handle(input);
    this.membership.after(input);
    return reply;
  }

  private handle(input: SchedulerInput): SchedulerReply {
    const reply = this.core.handle(input);
    this.liveness.fed(input, reply);
    this.steals.afterInput();
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
      this.liveness.heard(op, t);
      if (isLivenessOp(op)) {
        if (op.op === "heartbeat" && op.host !== undefined) this.heardHostMetrics(op.name, op.id, op.host, t);
        continue;
      }
      // A worker of another make may send a longer stack: the log and the clients get it bounded.
      if (op.op === "task-erred") boundErredStack(op as TaskErredOp);
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
    this.steals.afterMessage();
    this.outbox.flush();
  }

  /** A worker's heartbeat metrics: recorded as an input when the gate lets them in (a worker the core has). */
  private heardHostMetrics(worker: string, id: string, host: HostMetrics, t: number): void {
    if (this.core.workers.get(worker)?.id !== id || !this.metricsGate.admit(worker, host, t)) return;
    this.feed({ op: "host-metrics", worker, id, rss: host.rss, heapUsed: host.heapUsed, loopP99: host.loopP99, loopMax: host.loopMax, t });
  }

  /** Read-only questions: answered from the core's state, not recorded (they change nothing). */
  private answer(msg: Msg): void {
    if (msg.reply === undefined) return;
    const q = msg.data as { op?: string; keys?: unknown };
    const reply = msg.problem !== undefined ? { error: `malformed query: ${msg.problem}` } : answerQuery(this.core, q, this.totals);
    this.opts.transport.publish(msg.reply, reply);
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
      if (this.liveness.check(now)) this.outbox.flush();
    } finally {
      this.ticking = false;
    }
  }

  /**
   * Is anyone still subscribed to a silent worker's data subject? NATS answers "no
   * responders" at once when nobody is: the worker's connection is gone (a SIGKILLed
   * process's socket closes, and the server drops its subscriptions).
   */
  private async probe(name: string): Promise<ProbeOutcome> {
    try {
      const timeout = Math.max(500, 2000 * this.opts.config.heartbeatInterval);
      await this.opts.transport.request(this.subjects.workerData(name), { op: "get-data", keys: [], who: "scheduler" }, { timeout });
      return "answered";
    } catch (error) {
      return error instanceof ProtocolError && /no responders/.test(error.message) ? "no-responders" : "inconclusive";
    }
  }

  close(): void {
    this.closed = true;
    const t = this.opts.clock.now();
    if (this.livenessTimer !== null) clearInterval(this.livenessTimer);
    this.liveness.stop();
    this.steals.stop();
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

function boundErredStack(op: TaskErredOp): void {
  const stack = op.error.stack;
  if (stack !== undefined && stack.length > MAX_STACK_CHARS) op.error = { ...op.error, stack: boundStack(stack) };
}

function isLivenessOp(op: SchedulerOp | LivenessOp): op is LivenessOp {
  return op.op === "heartbeat" || op.op === "heartbeat-client";
}
