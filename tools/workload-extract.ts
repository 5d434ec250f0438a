/**
 * The workload of a recorded run, as a simulator scenario: what `natsched what-if` re-runs.
 *
 * From the scheduler's records: the graph (update-graph inputs: keys, dependencies,
 * restrictions, user priorities, submission times), scattered data (update-data), the
 * worker set (register-worker: nthreads, host, resources, join time; worker-lost and
 * unregister-worker: deaths and leaves) and the config (its start record). From the
 * workers' records: each task's measured duration and result size (execute-done /
 * execute-failed), and the network as the run saw it (one-way message latency, transfer
 * bandwidth). docs/replay.md lists the approximations; `notes` says which ones a log needed.
 */
import { resolveConfig, type Config } from "../machines/config.js";
import { BadOptionError } from "../machines/errors.js";
import { keySplit } from "../machines/graph/keys.js";
import type { TaskSpec } from "../machines/protocol.js";
import type { Scenario, SimAction, SimDataSpec, SimTaskSpec, SimWorkerSpec } from "../sim/scenario.js";
import { readReason } from "../machines/reasons.js";
import { silenceBeforeLoss } from "../actors/host/liveness.js";
import { MetricsCollector, type RunMetrics } from "./what-if-metrics.js";
import { HostCostCollector, type MeasuredHostCosts } from "./host-costs-extract.js";
import type { LogRecord } from "../log/types.js";

export interface WorkloadSummary {
  tasks: number;
  /** Submissions (update-graph inputs) that brought new tasks. */
  graphs: number;
  data: number;
  /** Workers present from the start, and workers that joined, died or left during the run. */
  workers: number;
  joins: number;
  leaves: number;
  /** Tasks whose duration was measured; tasks that never completed a run (duration guessed). */
  measured: number;
  estimated: number;
  /** Tasks whose last run failed: they fail in the simulation too. */
  failed: number;
}

export interface ExtractedWorkload {
  /** Runs on `simulate` as is; `config` is the recorded one as the log stores it (JSON-safe). */
  scenario: Scenario;
  /** The recorded config, resolved. */
  config: Config;
  /** The log time that is t=0 in the scenario: the first graph or scatter the scheduler took. */
  origin: number;
  /** The recorded run, measured on its log from `origin`. */
  recorded: RunMetrics;
  /** The host costs the log shows, with their sample counts: the scenario's `network.latency` and `hostCosts`. */
  hostCosts: MeasuredHostCosts;
  summary: WorkloadSummary;
  /** Approximations this log needed, in words. */
  notes: string[];
}

interface Incarnation {
  name: string;
  id: string;
  nthreads: number;
  host: string;
  resources: Record<string, number>;
  join: number;
  joinOrder: number;
  leave?: number;
  leaveOrder?: number;
  /** The scheduler was told of its death at once (its host saw it die): no liveness check had to find it. */
  toldAtOnce?: boolean;
  /** It registered with roundTrips: false (in process, its tasks on the scheduler's thread). */
  noRoundTrips?: boolean;
  /** It registered with a report hold (seconds: a worker on NATS, config reportHold). */
  reportHold?: number;
}

interface Execution {
  /** The last run's seconds. */
  duration: number;
  /** Seconds of every run, in the order they ended. */
  runs: number[];
  nbytes?: number;
  error?: string;
}

const MICRO = 1e6;
const round = (seconds: number): number => Math.round(seconds * MICRO) / MICRO;
/** Seconds between two update-graphs the scheduler took one after the other, nothing else between, that still count as one message (ops are stamped as they are fed; a pause of the host may come between). */
const BURST_GAP = 0.05;
/** Below this many bytes moved, the transfers say nothing about bandwidth (latency dominates). */
const BANDWIDTH_SAMPLE_BYTES = 1e6;

/** Feeds on a log's records in order (streaming), then builds the scenario. */
export class WorkloadExtractor {
  private rawConfig: Record<string, unknown> | undefined;
  private schedulerStarts = 0;
  private origin = Infinity;
  private order = 0;
  private readonly incarnations: Incarnation[] = [];
  private readonly specs = new Map<string, { spec: TaskSpec; t: number; graph: number }>();
  private graphCount = 0;
  /** The scheduler's last input, and when the run of update-graphs it is part of began. */
  private previous: { op: string; t: number } | null = null;
  private burst = 0;
  /** The client and cause of the burst's latest graph (undefined: the graph named none). */
  private burstCause: string | undefined;
  /** Keys a client asked for (an update-graph's wants): it holds futures for them. */
  private readonly wanted = new Set<string>();
  private readonly data = new Map<string, { nbytes: number; on: string[] }>();
  /**
   * The scheduler's latest update-data input, until its transitions say which keys it took:
   * a refused one (scatter never overwrites) makes none and places nothing.
   */
  private pendingData: { t: number; entries: Map<string, { nbytes: number; workers: string[] }[]> } | null = null;
  /** Keys the scheduler made a transition for: graphs it accepted. */
  private readonly accepted = new Set<string>();
  private readonly fromWorkers = new Map<string, Execution>();
  private readonly fromScheduler = new Map<string, Execution>();
  private readonly metrics = new MetricsCollector();
  private readonly hostCosts = new HostCostCollector();
  /** When a worker started a gather. */
  private readonly gatherStarts = new Map<string, number>();
  private readonly transferSamples: { bytes: number; seconds: number }[] = [];

  add(record: LogRecord): void {
    this.metrics.add(record);
    this.hostCosts.add(record);
    if (record.actor === "scheduler") this.scheduler(record);
    else if (record.actor.startsWith("worker.")) this.worker(record.actor.slice("worker.".length), record);
  }

  private scheduler(record: LogRecord): void {
    if (record.kind === "start") {
      this.schedulerStarts += 1;
      if (this.rawConfig === undefined) this.rawConfig = (record.init.config ?? {}) as Record<string, unknown>;
      return;
    }
    if (record.kind === "transition") {
      if (record.machine !== "task") return;
      this.accepted.add(record.id);
      if (record.event === "DATA" && readReason(record).kind === "scatter") this.scattered(record.id);
      return;
    }
    if (record.kind !== "input") return;
    this.pendingData = null;
    const e = record.event as Record<string, unknown>;
    const t = record.t;
    const previous = this.previous;
    this.previous = { op: String(e.op), t };
    switch (e.op) {
      case "register-worker":
        this.register(e, t);
        break;
      case "worker-lost": {
        // Lost by the liveness check: it died about as long before as it had been silent. The
        // simulator's own check then finds it lost as late as the recorded one did. A loss
        // the check did not decide (LocalCluster.killWorker tells the scheduler at once) is
        // simulated as told at once too.
        const silence = silenceBeforeLoss(String(e.reason));
        this.leave(String(e.name), String(e.id), t - (silence ?? 0), silence === undefined);
        break;
      }
      case "unregister-worker":
        this.leave(String(e.name), String(e.id), t);
        break;
      case "update-graph": {
        this.origin = Math.min(this.origin, t);
        this.graphCount += 1;
        // Graphs a client sent in one turn (the same cause: the client's stimulus that flushed
        // them) came in one message, however long the scheduler took to take them in (a loaded
        // machine pauses it midway): one graph at the first one's time, as one message makes one
        // stealing pass, and the scheduler's mail waits for the whole intake. Without causes,
        // graphs taken one right after the other count as one message.
        const cause = typeof e.cause === "number" ? `${String(e.client)}\u0000${e.cause}` : undefined;
        const together = previous?.op === "update-graph" && (cause !== undefined && this.burstCause !== undefined ? cause === this.burstCause : t - previous.t <= BURST_GAP);
        if (!together) this.burst = t;
        this.burstCause = cause;
        for (const key of (e.wants as string[] | undefined) ?? []) this.wanted.add(key);
        for (const spec of (e.tasks as TaskSpec[] | undefined) ?? []) {
          if (!this.specs.has(spec.key)) this.specs.set(spec.key, { spec, t: this.burst, graph: this.graphCount });
        }
        break;
      }
      case "update-data": {
        const entries = new Map<string, { nbytes: number; workers: string[] }[]>();
        for (const d of (e.data as { key: string; nbytes: number; workers: string[] }[] | undefined) ?? []) {
          let list = entries.get(d.key);
          if (list === undefined) entries.set(d.key, (list = []));
          list.push(d);
        }
        this.pendingData = { t, entries };
        break;
      }
      case "task-finished":
        this.fromScheduler.set(String(e.key), ran(this.fromScheduler.get(String(e.key)), Number(e.stop) - Number(e.start), { nbytes: Number(e.nbytes) }));
        break;
    }
  }

  /** The scheduler took scattered `key` from its latest update-data. */
  private scattered(key: string): void {
    const pending = this.pendingData;
    const entries = pending?.entries.get(key);
    if (pending === null || entries === undefined) return;
    pending.entries.delete(key);
    this.origin = Math.min(this.origin, pending.t);
    for (const d of entries) {
      const seen = this.data.get(key);
      if (seen === undefined) this.data.set(key, { nbytes: d.nbytes, on: [...d.workers] });
      else for (const w of d.workers) if (!seen.on.includes(w)) seen.on.push(w);
    }
  }

  private register(e: Record<string, unknown>, t: number): void {
    const name = String(e.name);
    const id = String(e.id);
    const alive = this.alive(name);
    if (alive !== undefined) {
      if (alive.id === id) return;
      // A new incarnation under a live name: the scheduler removes the old one first.
      alive.leave = t;
      alive.leaveOrder = this.order++;
    }
    this.incarnations.push({
      name,
      id,
      nthreads: Number(e.nthreads) || 1,
      host: typeof e.host === "string" && e.host !== "" ? e.host : "localhost",
      resources: (e.resources as Record<string, number> | undefined) ?? {},
      join: t,
      joinOrder: this.order++,
      ...(e.roundTrips === false ? { noRoundTrips: true } : {}),
      ...(typeof e.reportHold === "number" && e.reportHold > 0 && Number.isFinite(e.reportHold) ? { reportHold: e.reportHold } : {}),
    });
  }

  private leave(name: string, id: string, t: number, toldAtOnce = false): void {
    const alive = this.alive(name);
    if (alive === undefined || alive.id !== id) return;
    alive.leave = Math.max(t, alive.join);
    alive.leaveOrder = this.order++;
    if (toldAtOnce) alive.toldAtOnce = true;
  }

  private alive(name: string): Incarnation | undefined {
    for (let i = this.incarnations.length - 1; i >= 0; i--) {
      const inc = this.incarnations[i]!;
      if (inc.name === name) return inc.leave === undefined ? inc : undefined;
    }
    return undefined;
  }

  private worker(name: string, record: LogRecord): void {
    if (record.kind === "transition") {
      if (record.machine === "wtask" && record.event === "GATHER") this.gatherStarts.set(`${name}\u0000${record.id}`, record.t);
      return;
    }
    if (record.kind !== "input") return;
    const e = record.event as Record<string, unknown>;
    switch (e.op) {
      // The function's own time: the host's time to start it is hostCosts.taskStart.
      case "execute-done":
        this.fromWorkers.set(String(e.key), ran(this.fromWorkers.get(String(e.key)), Number(e.stop) - Number(e.start), { nbytes: Number(e.nbytes) }));
        break;
      case "execute-failed": {
        const error = e.error as { name?: string; message?: string } | undefined;
        const text = `${error?.name ?? "Error"}: ${error?.message ?? ""}`.trim();
        this.fromWorkers.set(String(e.key), ran(this.fromWorkers.get(String(e.key)), Number(e.stop) - Number(e.start), { error: text }));
        break;
      }
      case "gather-done": {
        let bytes = 0;
        let started = Infinity;
        for (const item of (e.received as { key: string; nbytes: number }[] | undefined) ?? []) {
          bytes += Math.max(Number(item.nbytes) || 0, 0);
          const at = this.gatherStarts.get(`${name}\u0000${item.key}`);
          if (at !== undefined) started = Math.min(started, at);
          this.gatherStarts.delete(`${name}\u0000${item.key}`);
        }
        if (Number.isFinite(started) && bytes > 0) this.transferSamples.push({ bytes, seconds: record.t - started });
        break;
      }
    }
  }

  finish(): ExtractedWorkload {
    if (!Number.isFinite(this.origin)) {
      throw new BadOptionError("log", "the log has no task graph or scattered data taken by the scheduler: there is no workload to extract");
    }
    const notes: string[] = [];
    const origin = this.origin;
    if (this.rawConfig === undefined) notes.push("the log has no scheduler start record: the default config is used");
    if (this.schedulerStarts > 1) notes.push(`the scheduler started ${this.schedulerStarts} times: the first start's config is used, and the run is simulated as one scheduler`);
    const rawConfig = this.rawConfig ?? {};
    const config = resolveConfig(rawConfig, "the log's scheduler start record");
    const lastEnd = this.metrics.lastEnd;

    const { workers, actions, present, joins, leaves } = this.workerSet(origin, lastEnd, notes);
    const data = this.scatteredData(present, notes);
    const { tasks, measured, estimated, failed, graphs } = this.taskList(origin, new Set(data.map((d) => d.key)), notes);

    const network: Scenario["network"] = {};
    const hostCosts = this.hostCosts.finish();
    if (hostCosts.latency !== undefined) network.latency = hostCosts.latency;
    const bandwidth = this.bandwidth(hostCosts.latency ?? 0);
    if (bandwidth !== undefined) network.bandwidth = bandwidth;

    const scenario: Scenario = { config: { ...rawConfig } as Scenario["config"], network, hostCosts: { ...hostCosts.hostCosts }, workers, tasks };
    if (data.length > 0) scenario.data = data;
    if (actions.length > 0) scenario.actions = actions;
    return {
      scenario,
      config,
      origin,
      recorded: this.metrics.finish(origin, workers.map((w) => w.name)),
      hostCosts,
      summary: { tasks: tasks.length, graphs, data: data.length, workers: workers.length, joins, leaves, measured, estimated, failed },
      notes,
    };
  }

  /**
   * Incarnations gone before the origin are left out, and so are leaves after the last
   * execution ended (the cluster shutting down, not part of the workload).
   */
  private workerSet(origin: number, lastEnd: number, notes: string[]) {
    const workers: SimWorkerSpec[] = [];
    const events: { at: number; order: number; action: SimAction }[] = [];
    const present = new Set<string>();
    const seen = new Set<string>();
    let joins = 0;
    let leaves = 0;
    let toldAtOnce = 0;
    let early = 0;
    for (const inc of this.incarnations) {
      if (inc.leave !== undefined && inc.leave <= origin) {
        early += 1;
        continue;
      }
      const spec = {
        name: inc.name,
        nthreads: inc.nthreads,
        ...(inc.host !== "localhost" ? { host: inc.host } : {}),
        ...(Object.keys(inc.resources).length > 0 ? { resources: { ...inc.resources } } : {}),
        ...(inc.noRoundTrips === true ? { roundTrips: false as const } : {}),
        ...(inc.reportHold !== undefined ? { reportHold: inc.reportHold } : {}),
      };
      const at = round(Math.max(inc.join - origin, 0));
      if (!seen.has(inc.name)) {
        seen.add(inc.name);
        workers.push(at > 0 ? { ...spec, joinAt: at } : spec);
        if (at === 0) present.add(inc.name);
        if (at > 0) joins += 1;
      } else {
        events.push({ at, order: inc.joinOrder, action: { at, do: "add-worker", worker: spec } });
        joins += 1;
      }
      if (inc.leave !== undefined && inc.leave < lastEnd) {
        const leaveAt = round(inc.leave - origin);
        // Told at once: the scheduler loses it (worker-lost) as it dies; the kill, at the same
        // instant and after it, comes before the lost worker's return, so it never returns.
        if (inc.toldAtOnce) toldAtOnce += 1;
        if (inc.toldAtOnce) events.push({ at: leaveAt, order: inc.leaveOrder!, action: { at: leaveAt, do: "lose-worker", worker: inc.name, back: 0 } });
        events.push({ at: leaveAt, order: inc.leaveOrder!, action: { at: leaveAt, do: "kill-worker", worker: inc.name } });
        leaves += 1;
      }
    }
    if (early > 0) notes.push(`${early} worker incarnation(s) left before the first graph: left out`);
    if (leaves > toldAtOnce) notes.push(`${leaves - toldAtOnce} worker death(s) or leave(s) during the run are simulated as kills, found by the simulated scheduler's liveness check (a clean leave is found seconds later than it was)`);
    if (toldAtOnce > 0) notes.push(`${toldAtOnce} worker death(s) the host told the scheduler of at once are simulated so: lost as they die`);
    events.sort((a, b) => a.at - b.at || a.order - b.order);
    return { workers, actions: events.map((e) => e.action), present, joins, leaves };
  }

  /** Scattered data is placed at t=0, on those of its holders present then. */
  private scatteredData(present: Set<string>, notes: string[]): SimDataSpec[] {
    const out: SimDataSpec[] = [];
    let moved = 0;
    let dropped = 0;
    const fallback = [...present][0];
    for (const [key, { nbytes, on }] of this.data) {
      if (this.specs.has(key) && this.accepted.has(key)) continue;
      let holders = on.filter((w) => present.has(w));
      if (holders.length === 0) {
        if (fallback === undefined) {
          dropped += 1;
          continue;
        }
        holders = [fallback];
        moved += 1;
      }
      out.push({ key, nbytes: Math.max(Math.round(nbytes), 0), on: holders });
    }
    if (this.data.size > 0) notes.push(`${this.data.size} scattered key(s) are placed at t=0`);
    if (moved > 0) notes.push(`${moved} scattered key(s) whose holders were not there at the start are placed on ${fallback}`);
    if (dropped > 0) notes.push(`${dropped} scattered key(s) are left out: no worker is there at the start`);
    return out;
  }

  private taskList(origin: number, dataKeys: Set<string>, notes: string[]) {
    // Keys of graphs the scheduler accepted, first submission wins; then drop, until none
    // is left, tasks depending on a key the workload does not have.
    const keep = new Map<string, { spec: TaskSpec; t: number; graph: number }>();
    for (const [key, entry] of this.specs) if (this.accepted.has(key) && !dataKeys.has(key)) keep.set(key, entry);
    let dropped = 0;
    for (let changed = true; changed; ) {
      changed = false;
      for (const [key, { spec }] of keep) {
        if (spec.deps.every((d) => keep.has(d) || dataKeys.has(d))) continue;
        keep.delete(key);
        dropped += 1;
        changed = true;
      }
    }
    if (dropped > 0) notes.push(`${dropped} task(s) depend on keys the log does not define: left out`);

    if (this.fromWorkers.size === 0 && this.fromScheduler.size > 0) notes.push("the log has no worker execution records: durations and sizes come from the scheduler's task-finished inputs");
    const runs = new Map<string, Execution>(this.fromScheduler);
    for (const [key, run] of this.fromWorkers) runs.set(key, run);
    const guess = new Guesses();
    for (const [key, run] of runs) if (keep.has(key) && run.error === undefined) guess.add(keySplit(key), run);
    const typical = new TypicalRuns();
    for (const [key, run] of runs) if (keep.has(key)) typical.add(keySplit(key), run.runs);

    const dependedOn = new Set<string>();
    for (const { spec } of keep.values()) for (const dep of spec.deps) dependedOn.add(dep);
    const tasks: SimTaskSpec[] = [];
    const graphs = new Set<number>();
    let measured = 0;
    let estimated = 0;
    let failed = 0;
    for (const [key, { spec, t, graph }] of keep) {
      graphs.add(graph);
      const run = runs.get(key);
      const task: SimTaskSpec = { key, duration: 0 };
      if (spec.deps.length > 0) task.deps = [...new Set(spec.deps)];
      if (run !== undefined) {
        measured += 1;
        // Each recorded run as measured, in turn: a run stretched by a stall of the machine
        // (a loaded host, a GC pause) happened at that moment. A run the recording did not
        // make (the simulation recomputes a key it did not) takes the typical run of its
        // prefix, not a stall that belonged to another moment.
        task.duration = round(typical.of(keySplit(key)));
        task.runs = run.runs.map((d) => round(Math.max(d, 0)));
        if (run.nbytes !== undefined && Number.isFinite(run.nbytes)) task.nbytes = Math.max(Math.round(run.nbytes), 0);
        if (run.error !== undefined) {
          task.error = run.error || "failed";
          failed += 1;
        }
      } else {
        estimated += 1;
        const g = guess.of(keySplit(key));
        task.duration = round(g.duration);
        if (g.nbytes !== undefined) task.nbytes = Math.round(g.nbytes);
      }
      if (spec.priority !== undefined && spec.priority !== 0) task.priority = spec.priority;
      if (spec.workers !== undefined) task.workers = [...spec.workers];
      if (spec.hosts !== undefined) task.hosts = [...spec.hosts];
      if (spec.resources !== undefined) task.resources = { ...spec.resources };
      if (spec.allowOtherWorkers !== undefined) task.allowOtherWorkers = spec.allowOtherWorkers;
      // A graph merged from several keeps what each asked for, which its own dependents would hide.
      if (this.wanted.has(key) && dependedOn.has(key)) task.wanted = true;
      const submitAt = round(Math.max(t - origin, 0));
      if (submitAt > 0) task.submitAt = submitAt;
      tasks.push(task);
    }
    if (estimated > 0) notes.push(`${estimated} task(s) never completed a run: their duration and size are the mean of their prefix's measured runs (or of all runs)`);
    return { tasks, measured, estimated, failed, graphs: graphs.size };
  }

  /** Bytes per second over the transfers, once enough bytes moved to tell. */
  private bandwidth(latency: number): number | undefined {
    let bytes = 0;
    let seconds = 0;
    for (const s of this.transferSamples) {
      bytes += s.bytes;
      seconds += Math.max(s.seconds - latency, 0);
    }
    if (bytes < BANDWIDTH_SAMPLE_BYTES || seconds <= 0) return undefined;
    return Math.round(bytes / seconds);
  }
}

/** The last run's result (size or error) with this run's seconds added to the runs before. */
function ran(before: Execution | undefined, seconds: number, result: { nbytes?: number; error?: string }): Execution {
  return { duration: seconds, runs: [...(before?.runs ?? []), seconds], ...result };
}

/** The median run of each key prefix: what a run the recording did not make takes. */
class TypicalRuns {
  private readonly byPrefix = new Map<string, number[]>();

  add(prefix: string, runs: readonly number[]): void {
    let list = this.byPrefix.get(prefix);
    if (list === undefined) this.byPrefix.set(prefix, (list = []));
    for (const d of runs) list.push(Math.max(d, 0));
  }

  of(prefix: string): number {
    const list = this.byPrefix.get(prefix);
    if (list === undefined || list.length === 0) return 0;
    list.sort((a, b) => a - b);
    return list[Math.floor(list.length / 2)]!;
  }
}

/** Mean duration and size of completed runs, per prefix and overall, for tasks that never ran. */
class Guesses {
  private readonly byPrefix = new Map<string, { n: number; duration: number; nbytes: number; sized: number }>();
  private readonly all = { n: 0, duration: 0, nbytes: 0, sized: 0 };

  add(prefix: string, run: Execution): void {
    let p = this.byPrefix.get(prefix);
    if (p === undefined) this.byPrefix.set(prefix, (p = { n: 0, duration: 0, nbytes: 0, sized: 0 }));
    for (const acc of [p, this.all]) {
      acc.n += 1;
      acc.duration += Math.max(run.duration, 0);
      if (run.nbytes !== undefined && Number.isFinite(run.nbytes)) {
        acc.nbytes += run.nbytes;
        acc.sized += 1;
      }
    }
  }

  of(prefix: string): { duration: number; nbytes?: number } {
    const acc = this.byPrefix.get(prefix) ?? this.all;
    if (acc.n === 0) return { duration: 0 };
    return acc.sized > 0 ? { duration: acc.duration / acc.n, nbytes: acc.nbytes / acc.sized } : { duration: acc.duration / acc.n };
  }
}

/** The workload of a log held in memory (a MemoryLogSink's records, a simulation's log). */
export function extractWorkload(records: Iterable<LogRecord>): ExtractedWorkload {
  const extractor = new WorkloadExtractor();
  for (const record of records) extractor.add(record);
  return extractor.finish();
}
