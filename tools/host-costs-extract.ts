/**
 * The host costs a recorded run shows, as the simulator's `network.latency` and `hostCosts`
 * (sim/host-costs.ts): what `natsched what-if` adds to a workload so that its simulated
 * original lands close to the recorded run. Read from the timestamps the hosts put on the
 * records, per message or per execution:
 * - scheduler -> worker: from the ASSIGN (or STEAL_CONFIRM) to the worker's compute-task;
 * - a worker starting a function: from the task's EXECUTE to the function's start;
 * - worker -> scheduler: from the function's stop to the scheduler's task-finished (or task-erred);
 * - the scheduler taking an op of a worker's message: between consecutive steal-responses of
 *   one victim (the answers to one pass, in one message; the median);
 * - the scheduler taking a graph: from its update-graph to its next input, or to the first
 *   compute-task it sent arriving less the delay any message to a worker has, whichever is
 *   less; per task over every graph (warmUp, a knob of the simulator, stays 0).
 * Latency is the median of the scheduler -> worker delays (the wire, as a quiet host shows
 * it); each host delay is the mean of its delays less that latency, so that a busy host's
 * queue (one event loop for every actor of an embedded cluster) weighs in as often as it
 * happened. Records of kinds and actors it does not know are ignored.
 */
import { isPlacement, readReason } from "../machines/reasons.js";
import type { LogRecord } from "../log/types.js";
import type { HostCostSpec } from "../sim/host-costs.js";

export interface MeasuredHostCosts {
  /** One-way network latency, seconds (undefined: no sample). */
  latency?: number;
  hostCosts: Required<HostCostSpec>;
  /** How many samples each figure came from. */
  samples: { toWorker: number; toScheduler: number; taskStart: number; schedulerOp: number; graphs: number; stealAnswer: number };
}

const MICRO = 1e6;
const round = (seconds: number): number => Math.round(seconds * MICRO) / MICRO;
const SEP = "\u0000";

export class HostCostCollector {
  /** The scheduler input being handled: its op, time and, for a graph, its task count. */
  private current: { op: string; t: number; tasks: number; worker: unknown } | null = null;
  /** Seconds between consecutive ops of one message, as the scheduler took them. */
  private readonly opGaps: number[] = [];
  /** Per worker and key: when the scheduler sent compute-task, and whether a graph's intake caused it. */
  private readonly sent = new Map<string, { t: number; graph: boolean }>();
  /** Per message to a worker (worker, sending time): the earliest arrival. */
  private readonly toWorker = new Map<string, number>();
  /**
   * Per graph (its time): new task count, when the first compute-task it made arrived (its
   * mail leaves once it is in), and how long after it the scheduler took the next graph, if
   * that came next.
   */
  private readonly graphs = new Map<number, { tasks: number; arrived: number; next: number }>();
  /** Keys of the graphs so far. */
  private readonly known = new Set<string>();
  private readonly executing = new Map<string, number>();
  private readonly stops = new Map<string, number>();
  /** Per worker, when the steal requests it is taking (consecutive inputs: one message) began. */
  private readonly stealBatch = new Map<string, number>();
  /** Per worker and key asked for: its batch. Per batch (worker, start): the first answer's arrival. */
  private readonly stealAsked = new Map<string, string>();
  private readonly stealAnswered = new Map<string, number>();
  private taskStartSum = 0;
  private taskStarts = 0;
  private toSchedulerSum = 0;
  private toSchedulerCount = 0;

  add(record: LogRecord): void {
    if (record.actor === "scheduler") this.scheduler(record);
    else if (record.actor.startsWith("worker.")) this.worker(record.actor.slice("worker.".length), record);
  }

  private scheduler(record: LogRecord): void {
    if (record.kind === "input") {
      const e = record.event as { op?: unknown; tasks?: unknown; key?: unknown; worker?: unknown };
      const op = String(e.op);
      // A victim answers a pass's steal requests in one message, whose ops are stamped as
      // they are fed: consecutive answers of one worker are apart by what one took.
      if (op === "steal-response" && this.current?.op === op && this.current.worker === e.worker) this.opGaps.push(record.t - this.current.t);
      // A graph followed by another (of the same message, as a client's submits of one turn
      // come) took as long as the gap: ops are stamped as they are fed. Any other input may
      // have come after a wait.
      const graph = this.current?.op === "update-graph" && op === "update-graph" ? this.graphs.get(this.current.t) : undefined;
      if (graph !== undefined) graph.next = record.t - this.current!.t;
      this.current = { op, t: record.t, tasks: op === "update-graph" ? this.newTasks(e.tasks) : 0, worker: e.worker };
      if (this.current.tasks > 0 && !this.graphs.has(record.t)) this.graphs.set(record.t, { tasks: this.current.tasks, arrived: Infinity, next: Infinity });
      if (op === "steal-response") {
        const batch = this.stealAsked.get(`${String(e.worker)}${SEP}${String(e.key)}`);
        if (batch !== undefined) this.stealAnswered.set(batch, Math.min(this.stealAnswered.get(batch) ?? Infinity, record.t - Number(batch.split(SEP)[1])));
      }
      if (op === "task-finished" || op === "task-erred") {
        const id = `${String(e.worker)}${SEP}${String(e.key)}`;
        const stop = this.stops.get(id);
        this.stops.delete(id);
        if (stop !== undefined && record.t >= stop) {
          this.toSchedulerSum += record.t - stop;
          this.toSchedulerCount += 1;
        }
      }
      return;
    }
    if (record.kind !== "transition" || record.machine !== "task") return;
    if (record.event !== "ASSIGN" && record.event !== "STEAL_CONFIRM") return;
    const reason = readReason(record);
    if (!isPlacement(reason) && reason.kind !== "steal-confirmed") return;
    const worker = reason.why.worker;
    const graph = this.current?.op === "update-graph" && this.current.t === record.t;
    // A confirmed steal waits for the rest of the victim's answers, which come in one
    // message (the scheduler sends once it has handled them all): not a delay of the wire or
    // of the worker's host. Only a placement is a sample.
    if (record.event === "STEAL_CONFIRM") return;
    this.sent.set(`${worker}${SEP}${record.id}`, { t: record.t, graph });
  }

  /** Specs of keys no earlier graph brought: what the scheduler takes in (it skips keys it has). */
  private newTasks(specs: unknown): number {
    if (!Array.isArray(specs)) return 0;
    let n = 0;
    for (const spec of specs as { key?: unknown }[]) {
      const key = String(spec?.key);
      if (this.known.has(key)) continue;
      this.known.add(key);
      n += 1;
    }
    return n;
  }

  private worker(name: string, record: LogRecord): void {
    if (record.kind === "transition") {
      if (record.machine === "wtask" && record.event === "EXECUTE") this.executing.set(`${name}${SEP}${record.id}`, record.t);
      return;
    }
    if (record.kind !== "input") return;
    const e = record.event as { op?: unknown; key?: unknown; start?: unknown; stop?: unknown };
    const id = `${name}${SEP}${String(e.key)}`;
    if (e.op === "steal-request") {
      // Requests taken one after the other came in one message: its answers leave together.
      let start = this.stealBatch.get(name);
      if (start === undefined) this.stealBatch.set(name, (start = record.t));
      this.stealAsked.set(id, `${name}${SEP}${start}`);
      return;
    }
    this.stealBatch.delete(name);
    if (e.op === "compute-task") {
      const sent = this.sent.get(id);
      this.sent.delete(id);
      if (sent === undefined || record.t < sent.t) return;
      if (sent.graph) {
        const g = this.graphs.get(sent.t);
        if (g !== undefined) g.arrived = Math.min(g.arrived, record.t);
        return;
      }
      // One sample per message: a turn's compute-tasks to a worker travel in one envelope.
      const message = `${name}${SEP}${sent.t}`;
      const seen = this.toWorker.get(message);
      if (seen === undefined || record.t - sent.t < seen) this.toWorker.set(message, record.t - sent.t);
    } else if (e.op === "execute-done" || e.op === "execute-failed") {
      const start = Number(e.start);
      const stop = Number(e.stop);
      const executing = this.executing.get(id);
      this.executing.delete(id);
      if (executing !== undefined && executing <= start) {
        this.taskStartSum += start - executing;
        this.taskStarts += 1;
      }
      if (Number.isFinite(stop)) this.stops.set(id, stop);
    }
  }

  finish(): MeasuredHostCosts {
    const delays = [...this.toWorker.values()];
    const latency = median(delays);
    const wire = latency ?? 0;
    const workerDelay = delays.length > 0 ? Math.max(mean(delays) - wire, 0) : 0;
    const schedulerDelay = this.toSchedulerCount > 0 ? Math.max(this.toSchedulerSum / this.toSchedulerCount - wire, 0) : 0;
    // Over every graph: graphs taken in one message are simulated as one (workload-extract.ts),
    // which then takes what they took together, a cold start's extra included.
    let intake = 0;
    let tasks = 0;
    let graphs = 0;
    for (const [t, g] of this.graphs) {
      const took = Math.max(Math.min(g.next, g.arrived - t - wire - workerDelay), 0);
      if (!Number.isFinite(took)) continue;
      graphs += 1;
      intake += took;
      tasks += g.tasks;
    }
    // From a victim taking a message of steal requests to its first answer reaching the
    // scheduler, less what any message to the scheduler takes: the mean over messages.
    const answers = [...this.stealAnswered.values()];
    const stealAnswer = answers.length > 0 ? Math.max(mean(answers) - wire - schedulerDelay, 0) : 0;
    return {
      ...(latency !== undefined ? { latency: round(latency) } : {}),
      hostCosts: {
        schedulerDelay: round(schedulerDelay),
        workerDelay: round(workerDelay),
        taskStart: round(this.taskStarts > 0 ? this.taskStartSum / this.taskStarts : 0),
        schedulerOp: round(median(this.opGaps) ?? 0),
        graphIntake: tasks > 0 ? Math.round((intake / tasks) * 1e9) / 1e9 : 0,
        warmUp: 0,
        stealAnswer: round(stealAnswer),
      },
      samples: { toWorker: delays.length, toScheduler: this.toSchedulerCount, taskStart: this.taskStarts, schedulerOp: this.opGaps.length, graphs, stealAnswer: answers.length },
    };
  }
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

function median(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
