/**
 * `replay(log, options)`: re-runs every actor of a log through its machines and checks
 * that each recorded transition is reproduced exactly. See docs/replay.md.
 */
import { BadOptionError } from "../machines/errors.js";
import { divergenceState } from "./divergence-state.js";
import { ReplayEngine } from "./replay-engine.js";
import { scanLogFile, scanRecordSource } from "./replay-scan.js";
import type { ReplayOptions, ReplayResult, ReplaySource, UntilKind } from "./replay-types.js";
import { schedulerStateView, workerCoreView, type ClusterStateView } from "./state-view.js";
import type { LogRecord } from "./types.js";

export async function replay(log: ReplaySource, options: ReplayOptions = {}): Promise<ReplayResult> {
  const until = cutOf(options);
  const engine = new ReplayEngine({ actor: options.actor, until });
  const began = performance.now();
  const { stopped } = typeof log === "string" ? await scanLogFile(log, engine) : await scanRecordSource(log, engine);
  engine.finish(stopped);
  const seconds = (performance.now() - began) / 1000;
  if (options.actor !== undefined && !engine.runs.has(options.actor)) {
    const known = [...engine.started].sort().join(", ") || "none";
    throw new BadOptionError("actor", `no records of actor "${options.actor}" in the log (actors: ${known})`);
  }

  const rereadable = typeof log === "string" || Array.isArray(log);
  const actors: ReplayResult["actors"] = {};
  let inputs = 0;
  let transitions = 0;
  let verified = true;
  for (const [name, run] of [...engine.runs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const summary = { ...run.summary, sent: run.sentCounts() };
    inputs += summary.inputs;
    transitions += summary.transitions;
    if (summary.divergence !== undefined || summary.halted !== undefined) verified = false;
    const divergence = summary.divergence;
    if (divergence !== undefined) {
      if (options.diffState === false) divergence.stateNote = "not asked for (diffState: false)";
      else if (!rereadable) divergence.stateNote = "the log was given as a stream, which cannot be read again";
      else divergence.state = await divergenceState(log as string | readonly LogRecord[], divergence);
    }
    actors[name] = summary;
  }
  const complete = engine.problems.length === 0;
  return {
    ok: complete && verified,
    complete,
    actors,
    problems: engine.problems,
    state: stateView(engine, options, until),
    stats: { records: engine.records, inputs, transitions, seconds, readTo: stopped ? "until" : "end" },
  };
}

function cutOf(options: ReplayOptions): { kind: UntilKind; value: number } | undefined {
  const { until, untilKind } = options;
  if (until === undefined) {
    if (untilKind !== undefined) throw new BadOptionError("untilKind", "is only meaningful with until");
    return undefined;
  }
  if (typeof until !== "number" || Number.isNaN(until)) throw new BadOptionError("until", `must be a number, got ${String(until)}`);
  const kind = untilKind ?? (Number.isInteger(until) ? "seq" : "time");
  if (kind !== "seq" && kind !== "time" && kind !== "elapsed") throw new BadOptionError("untilKind", `must be "seq", "time" or "elapsed", got ${String(kind)}`);
  if (kind === "seq" && !(Number.isInteger(until) && until >= 0)) throw new BadOptionError("until", `a seq is a whole number >= 0, got ${until}`);
  return { kind, value: until };
}

function stateView(engine: ReplayEngine, options: ReplayOptions, until: { kind: UntilKind; value: number } | undefined): ClusterStateView {
  const view: ClusterStateView = {
    at:
      until === undefined
        ? { until: "end" }
        : until.kind === "seq"
          ? { until: "seq", actor: options.actor ?? "scheduler", seq: until.value }
          : { until: "time", t: until.kind === "time" ? until.value : (engine.firstTime ?? 0) + until.value },
    t: engine.lastT,
    scheduler: null,
    workers: {},
  };
  for (const run of engine.runs.values()) {
    const host = run.host;
    if (host === null) continue;
    const diverged = run.summary.divergence !== undefined;
    if (host.role === "scheduler") {
      if (view.scheduler === null || run.name === "scheduler") view.scheduler = schedulerStateView(run.name, host.core, diverged);
    } else {
      view.workers[host.core.init.name] = workerCoreView(run.name, host.core, run.summary.stopped, diverged);
    }
  }
  return view;
}
