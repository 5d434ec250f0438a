/**
 * `replay(log, options)`: re-runs every actor of a log through its machines and checks
 * that each recorded transition is reproduced exactly. See docs/replay.md.
 */
import { statSync } from "node:fs";
import { inflateRawSync } from "node:zlib";
import { BadOptionError, LogCorruptError } from "../machines/errors.js";
import { divergenceState } from "./divergence-state.js";
import type { CutSpec } from "./log-cut.js";
import { openProblems, ReplayEngine } from "./replay-engine.js";
import { defaultParts, replayInParts, runView, type PartOutcome, type RunOutcome } from "./replay-parallel.js";
import { scanLogFile, scanRecordSource } from "./replay-scan.js";
import type { ActorReplay, ReplayOptions, ReplayProblem, ReplayResult, ReplaySource } from "./replay-types.js";
import type { ClusterStateView } from "./state-view.js";
import type { LogRecord } from "../log/types.js";
import { isSliceFile, sliceStartsOfFile, type SliceStart } from "../log/slice-header.js";
import { readLogHeader } from "../log/header-file.js";
import { buildDifferences, thisBuild } from "./build-differences.js";
import { restoreCore } from "../log/core-snapshot.js";
import type { AnyCore } from "../log/core-snapshot-format.js";
import { buildHost } from "./replay-cores.js";

export async function replay(log: ReplaySource, givenOptions: ReplayOptions = {}): Promise<ReplayResult> {
  const out = await replayRecords(log, givenOptions);
  if (typeof log === "string") {
    const header = await readLogHeader(log);
    if (header !== undefined) out.buildDifferences = buildDifferences(header.meta, thisBuild(givenOptions.functions));
  }
  return out;
}

async function replayRecords(log: ReplaySource, givenOptions: ReplayOptions): Promise<ReplayResult> {
  // A slice (natsched export) ends its actors before their stop records on purpose.
  const options = givenOptions.openOk === undefined && typeof log === "string" && (await isSliceFile(log)) ? { ...givenOptions, openOk: true } : givenOptions;
  const until = cutOf(options);
  // A slice may start actors from snapshots of their cores (natsched export): one pass, those cores restored first.
  const starts = typeof log === "string" ? await sliceStartsOfFile(log) : new Map<string, SliceStart>();
  const parts = starts.size > 0 ? 1 : partsOf(log, options, until);
  if (parts > 1) {
    const began = performance.now();
    const outcomes = await replayInParts(log as string, parts);
    if (outcomes !== undefined) return merged(log as string, options, outcomes, (performance.now() - began) / 1000);
  }
  const engine = new ReplayEngine({ actor: options.actor, until });
  const began = performance.now();
  for (const [actor, start] of starts) if (options.actor === undefined || options.actor === actor) adoptSnapshot(engine, actor, start);
  const { stopped } = typeof log === "string" ? await scanLogFile(log, engine) : await scanRecordSource(log, engine);
  engine.finish(stopped, options.openOk === true);
  const seconds = (performance.now() - began) / 1000;
  if (options.actor !== undefined && !engine.runs.has(options.actor)) {
    const known = [...engine.started].sort().join(", ") || "none";
    throw new BadOptionError("actor", `no records of actor "${options.actor}" in the log (actors: ${known})`);
  }
  const runs = [...engine.runs.values()].map((run) => ({ name: run.name, summary: { ...run.summary, sent: run.sentCounts() }, view: runView(run) }));
  return result(log, options, {
    runs,
    problems: engine.problems,
    state: { at: atOf(engine, options, until), t: engine.lastT },
    stats: { records: engine.records, seconds, readTo: stopped ? "until" : "end", threads: 1 },
  });
}

/** `actor` replays on from the snapshot of its core a slice starts it from. */
function adoptSnapshot(engine: ReplayEngine, actor: string, start: SliceStart): void {
  engine.started.add(actor);
  engine.open.set(actor, start.seq);
  engine.adopt(
    actor,
    (fx) => {
      const host = buildHost({ actor, seq: -1, t: 0, kind: "start", role: start.role, init: start.init }, fx);
      if (start.role === "client") throw new LogCorruptError(`${actor}: a slice cannot start a client from a snapshot`);
      restoreCore(inflateRawSync(Buffer.from(start.core, "base64")), host.core as AnyCore);
      return host;
    },
    start.seq,
  );
}

/** How many parts to replay the log in (replay-parallel.ts): only a whole file, read to its end. */
function partsOf(log: ReplaySource, options: ReplayOptions, until: unknown): number {
  const threads = options.threads;
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) throw new BadOptionError("threads", `must be a whole number >= 1, got ${String(threads)}`);
  if (typeof log !== "string" || until !== undefined || options.actor !== undefined) return 1;
  if (threads !== undefined) return threads;
  let bytes: number;
  try {
    bytes = statSync(log).size;
  } catch {
    return 1; // the one-pass reader reports it
  }
  return defaultParts(bytes);
}

/** The outcomes of the parts of a log, as one result: problems in line order, actors in order of appearance. */
async function merged(log: string, options: ReplayOptions, outcomes: PartOutcome[], seconds: number): Promise<ReplayResult> {
  const runs = outcomes.flatMap((o) => o.runs).sort((a, b) => a.firstLine - b.firstLine);
  const problems = outcomes.flatMap((o) => o.problems).sort((a, b) => a.line! - b.line!);
  for (const run of runs) if (run.truncated !== undefined) problems.push(run.truncated);
  if (options.openOk !== true) problems.push(...openProblems(outcomes.flatMap((o) => o.open)));
  let t: number | null = null;
  for (const o of outcomes) if (o.lastT !== null && (t === null || o.lastT > t)) t = o.lastT;
  return result(log, options, {
    runs,
    problems,
    state: { at: { until: "end" }, t },
    stats: { records: outcomes.reduce((n, o) => n + o.records, 0), seconds, readTo: "end", threads: 1 + outcomes.filter((o) => o.onThread === true).length },
  });
}

interface Replayed {
  /** The actors replayed, in the order they first appear in the log. */
  runs: { name: string; summary: ActorReplay; view: RunOutcome["view"] }[];
  problems: ReplayProblem[];
  state: Pick<ClusterStateView, "at" | "t">;
  stats: Pick<ReplayResult["stats"], "records" | "seconds" | "readTo" | "threads">;
}

async function result(log: ReplaySource, options: ReplayOptions, replayed: Replayed): Promise<ReplayResult> {
  const rereadable = typeof log === "string" || Array.isArray(log);
  const actors: ReplayResult["actors"] = {};
  let inputs = 0;
  let transitions = 0;
  let verified = true;
  for (const { name, summary } of [...replayed.runs].sort(({ name: a }, { name: b }) => (a < b ? -1 : a > b ? 1 : 0))) {
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
  const state: ClusterStateView = { ...replayed.state, scheduler: null, workers: {} };
  for (const { name, view } of replayed.runs) {
    if (view === null) continue;
    if ("scheduler" in view) {
      if (state.scheduler === null || name === "scheduler") state.scheduler = view.scheduler;
    } else {
      state.workers[view.worker] = view.view;
    }
  }
  const complete = replayed.problems.length === 0;
  return {
    ok: complete && verified,
    complete,
    actors,
    problems: replayed.problems,
    state,
    stats: { ...replayed.stats, inputs, transitions },
  };
}

function cutOf(options: ReplayOptions): CutSpec | undefined {
  const { until, untilKind, untilActor } = options;
  if (until === undefined) {
    if (untilKind !== undefined) throw new BadOptionError("untilKind", "is only meaningful with until");
    return undefined;
  }
  if (typeof until !== "number" || Number.isNaN(until)) throw new BadOptionError("until", `must be a number, got ${String(until)}`);
  const kind = untilKind ?? (Number.isInteger(until) ? "seq" : "time");
  if (kind !== "seq" && kind !== "time" && kind !== "elapsed") throw new BadOptionError("untilKind", `must be "seq", "time" or "elapsed", got ${String(kind)}`);
  if (kind === "seq" && !(Number.isInteger(until) && until >= 0)) throw new BadOptionError("until", `a seq is a whole number >= 0, got ${until}`);
  if (untilActor !== undefined && kind !== "seq") throw new BadOptionError("untilActor", "is only meaningful with a seq");
  // The engine reads only the replayed actor's records against the cut.
  if (untilActor !== undefined && options.actor !== undefined && untilActor !== options.actor) {
    throw new BadOptionError("untilActor", `a cut at ${untilActor}'s record with only ${options.actor} replayed: cut at ${options.actor}'s records, or replay every actor`);
  }
  return { kind, value: until, actor: untilActor };
}

function atOf(engine: ReplayEngine, options: ReplayOptions, until: CutSpec | undefined): ClusterStateView["at"] {
  return until === undefined
    ? { until: "end" }
    : until.kind === "seq"
      ? { until: "seq", actor: until.actor ?? options.actor ?? "scheduler", seq: until.value }
      : { until: "time", t: until.kind === "time" ? until.value : (engine.firstTime ?? 0) + until.value };
}
