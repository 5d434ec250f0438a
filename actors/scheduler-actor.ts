import type { Config } from "../machines/config.js";
import { ProtocolError } from "../machines/errors.js";
import { PROTOCOL_VERSION, type Envelope, type SchedulerToClient, type SchedulerToWorker } from "../machines/protocol.js";
import { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput, SchedulerReply } from "../machines/scheduler/inputs.js";
import type { LogSink } from "../replay/types.js";
import { subjects, type Subjects } from "../transport/subjects.js";
import type { Msg, Subscription, Transport } from "../transport/types.js";
import type { Clock } from "./clock.js";
import { Outbox } from "./outbox.js";
import { answerQuery } from "./scheduler-queries.js";
import { ActorRecorder } from "./recorder.js";
import { schedulerOpProblem } from "./validate-ops.js";

export interface SchedulerActorOptions {
  cluster: string;
  transport: Transport;
  config: Config;
  clock: Clock;
  log: LogSink | null;
  /** Called with anything that went wrong handling a message (it is dropped, never fatal). */
  onError?: (error: unknown) => void;
}

type SchedulerOp = Omit<SchedulerInput, "t">;

/** Seconds between two on-demand stealing passes. */
const ON_DEMAND_GAP = 0.02;

/**
 * Hosts the scheduler core: takes envelopes from `natsched.<cluster>.scheduler`, stamps
 * each op with the time, records it, feeds the core, and sends what the core asks for.
 * Liveness: a worker silent for `workerTtl` seconds is reported lost to the core.
 */
export class SchedulerActor {
  readonly core: SchedulerCore;
  readonly recorder: ActorRecorder;
  private readonly subjects: Subjects;
  private readonly outbox: Outbox<SchedulerToWorker | SchedulerToClient>;
  private readonly lastSeen = new Map<string, { id: string; at: number }>();
  private readonly subscriptions: Subscription[] = [];
  private livenessTimer: ReturnType<typeof setInterval> | null = null;
  private balanceTimer: ReturnType<typeof setInterval> | null = null;
  private lastBalance = -Infinity;

  constructor(private readonly opts: SchedulerActorOptions) {
    this.subjects = subjects(opts.cluster);
    this.recorder = new ActorRecorder("scheduler", opts.log);
    this.outbox = new Outbox(opts.transport, "scheduler");
    const { recorder, outbox } = this;
    const s = this.subjects;
    this.core = new SchedulerCore(opts.config, {
      toWorker: (worker, op) => outbox.send(s.worker(worker), op),
      toClient: (client, op) => outbox.send(s.client(client), op),
      transition: (machine, id, event, from, to, why) => recorder.transition(machine, id, event, from, to, why),
    });
  }

  start(): void {
    const t = this.opts.clock.now();
    this.recorder.start(t, "scheduler", { cluster: this.opts.cluster, config: serializableConfig(this.opts.config) });
    this.feed({ op: "scheduler-start", t });
    this.subscriptions.push(this.opts.transport.subscribe(this.subjects.scheduler, (msg) => this.receive(msg)));
    this.subscriptions.push(this.opts.transport.subscribe(this.subjects.query, (msg) => this.answer(msg)));
    if (this.opts.config.workStealing) {
      this.balanceTimer = setInterval(() => this.maybeBalance(true), this.opts.config.workStealingInterval * 1000);
      this.balanceTimer.unref();
    }
    const ttl = this.opts.config.workerTtl;
    if (Number.isFinite(ttl)) {
      this.livenessTimer = setInterval(() => this.checkLiveness(), Math.max(50, Math.min(ttl * 1000, 5000) / 2));
      this.livenessTimer.unref();
    }
  }

  /** Feed one stimulus (already stamped) and send what it produced. */
  feed(input: SchedulerInput): SchedulerReply {
    this.recorder.input(input);
    return this.core.handle(input);
  }

  private receive(msg: Msg): void {
    const envelope = msg.data as Envelope<SchedulerOp>;
    if (!isEnvelope(envelope)) {
      this.opts.onError?.(new Error(`scheduler: dropped a malformed message on ${msg.subject}`));
      if (msg.reply) this.opts.transport.publish(msg.reply, { replies: [], error: "malformed envelope" });
      return;
    }
    const replies: SchedulerReply[] = [];
    for (const op of envelope.ops) {
      const problem = schedulerOpProblem(op);
      if (problem !== undefined) {
        this.opts.onError?.(new ProtocolError(`scheduler: dropped an op from ${String(envelope.from)} on ${msg.subject}: ${problem}`));
        replies.push({ ok: false, error: { name: "ProtocolError", message: problem, code: "PROTOCOL" } });
        continue;
      }
      const t = this.opts.clock.now();
      this.touch(op, t);
      if ((op as { op: string }).op === "heartbeat") continue;
      try {
        replies.push(this.feed({ ...op, t } as SchedulerInput));
      } catch (error) {
        this.opts.onError?.(error);
        replies.push({ ok: false, error: { name: "InternalError", message: String((error as Error)?.message ?? error) } });
      }
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
    const reply = answerQuery(this.core, q);
    this.opts.transport.publish(msg.reply, reply);
  }

  /** Note that a worker is alive (any message from it counts). */
  private touch(op: SchedulerOp, t: number): void {
    const o = op as { op: string; worker?: string; name?: string; id?: string };
    const name = o.op === "register-worker" || o.op === "heartbeat" ? o.name : o.worker;
    if (name !== undefined && o.id !== undefined) this.lastSeen.set(name, { id: o.id, at: t });
    if (o.op === "unregister-worker" && o.name !== undefined) this.lastSeen.delete(o.name);
  }

  private checkLiveness(): void {
    const now = this.opts.clock.now();
    for (const [name, { id, at }] of this.lastSeen) {
      if (now - at <= this.opts.config.workerTtl) continue;
      this.lastSeen.delete(name);
      this.feed({ op: "worker-lost", name, id, reason: `no message for ${(now - at).toFixed(1)}s`, t: now });
      this.outbox.flush();
    }
  }

  close(): void {
    const t = this.opts.clock.now();
    if (this.livenessTimer !== null) clearInterval(this.livenessTimer);
    if (this.balanceTimer !== null) clearInterval(this.balanceTimer);
    for (const sub of this.subscriptions) sub.unsubscribe();
    this.subscriptions.length = 0;
    this.outbox.flush();
    this.feed({ op: "scheduler-close", t });
    this.recorder.stop(t);
  }
}

function isEnvelope(value: unknown): value is Envelope<unknown> {
  const e = value as Envelope<unknown>;
  return typeof e === "object" && e !== null && e.v === PROTOCOL_VERSION && Array.isArray(e.ops);
}

/** JSON cannot carry Infinity: the log stores it as the string "Infinity". */
export function serializableConfig(config: Config): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) out[k] = typeof v === "number" && !Number.isFinite(v) ? String(v) : v;
  return out;
}
