/**
 * Text for people: a replay's summary, its divergences and problems, and the cluster state.
 */
import type { Divergence, ReplayResult, StateChange, TransitionFacts } from "./replay-types.js";
import type { TimeBase } from "../log/time-base.js";
import type { ClusterStateView } from "./state-view.js";

const MAX_KEYS_SHOWN = 8;

export function formatSummary(result: ReplayResult, location: string): string {
  const { stats } = result;
  const rate = stats.seconds > 0 ? Math.round(stats.transitions / stats.seconds) : 0;
  const verdict = result.ok ? "ok" : [result.complete ? "" : "INCOMPLETE", divergences(result).length ? "DIVERGED" : ""].filter(Boolean).join(", ") || "NOT VERIFIED";
  const lines = [
    `replay of ${location}: ${verdict}`,
    `  ${stats.records} records, ${stats.inputs} inputs re-fed, ${stats.transitions} transitions reproduced in ${stats.seconds.toFixed(2)} s (${rate.toLocaleString("en-US")} transitions/s${stats.threads > 1 ? ` on ${stats.threads} threads` : ""})${stats.readTo === "until" ? ", read up to --until" : ""}`,
  ];
  const width = Math.max(0, ...Object.keys(result.actors).map((a) => a.length));
  for (const [name, a] of Object.entries(result.actors)) {
    const status = a.divergence ? "DIVERGED" : a.halted ? `halted at #${a.halted.seq}` : a.stopped ? "stopped" : "running";
    lines.push(`  ${name.padEnd(width)}  ${String(a.inputs).padStart(8)} inputs  ${String(a.transitions).padStart(9)} transitions  last #${a.lastSeq}  ${status}`);
    if (a.halted) lines.push(`  ${"".padEnd(width)}  halted: ${a.halted.reason}`);
    for (const t of a.threw ?? []) lines.push(`  ${"".padEnd(width)}  warning: the core threw at input #${t.seq} (${t.op}): ${t.message}`);
  }
  return lines.join("\n");
}

export function formatProblems(result: ReplayResult): string {
  const line = (p: ReplayResult["problems"][number]) => `  ${p.kind}${p.line !== undefined ? ` at line ${p.line}` : ""}${p.actor !== undefined ? ` (${p.actor})` : ""}: ${p.message}`;
  const foreign = result.problems.filter((p) => p.kind === "foreign");
  const damage = result.problems.filter((p) => p.kind !== "foreign");
  const lines: string[] = [];
  if (damage.length > 0) lines.push(`INCOMPLETE LOG: ${damage.length} problem(s); replay cannot vouch for what is missing:`, ...damage.map(line));
  // Messages on a JetStream log's subjects that no writer of the log published: skipped, the log is whole without them.
  if (foreign.length > 0) lines.push(`FOREIGN MESSAGES: ${foreign.length} message(s) on the log's subjects that are not the log, skipped:`, ...foreign.map(line));
  return lines.join("\n");
}

export function divergences(result: ReplayResult): Divergence[] {
  return Object.values(result.actors).flatMap((a) => (a.divergence ? [a.divergence] : []));
}

export function formatDivergence(d: Divergence): string {
  const lines = [`DIVERGENCE: ${d.message}`];
  lines.push(`  actor:      ${d.actor}`);
  lines.push(`  ${(d.cause === "input" ? "input:" : `${d.cause} record:`).padEnd(12)}#${d.seq}${d.input ? ` ${JSON.stringify(d.input)}` : ""}`);
  lines.push(`  recorded:   ${d.recorded ? `#${d.recorded.seq} ${transition(d.recorded)}` : "(nothing: the log has no further transition for it)"}`);
  lines.push(`  reproduced: ${d.reproduced ? transition(d.reproduced) : "(nothing: the machines made no further transition)"}`);
  if (d.error !== undefined) lines.push(`  the core threw: ${d.error}`);
  if (d.stateNote !== undefined) lines.push(`  state diff: ${d.stateNote}`);
  for (const instance of d.state ?? []) {
    lines.push(`  ${instance.machine} ${instance.id}, before -> after the input (as replayed):`);
    if (instance.changes.length === 0) lines.push(`    (unchanged) ${JSON.stringify(instance.after)}`);
    for (const change of instance.changes) lines.push(`    ${formatChange(change)}`);
  }
  return lines.join("\n");
}

function transition(t: TransitionFacts): string {
  return `${t.machine} ${t.id}: ${t.from} -> ${t.to} (${t.event})${t.why === undefined ? "" : ` why ${JSON.stringify(t.why)}`}`;
}

function formatChange(change: StateChange): string {
  const { before, after } = change;
  if (Array.isArray(before) && Array.isArray(after)) {
    const removed = before.filter((x) => !after.includes(x));
    const added = after.filter((x) => !before.includes(x));
    if (removed.length + added.length === 0) return `${change.path}: reordered ${show(before)} -> ${show(after)}`;
    return `${change.path}: ${[...removed.map((x) => `-${show(x)}`), ...added.map((x) => `+${show(x)}`)].join(" ")}`;
  }
  return `${change.path}: ${show(before)} -> ${show(after)}`;
}

function show(value: unknown): string {
  return value === undefined ? "(absent)" : JSON.stringify(value);
}

/** The state in words; with `time` (the run's start), times are seconds from it, the start printed once. */
export function formatState(view: ClusterStateView, time?: TimeBase): string {
  const when = (t: number): string => (time === undefined ? `t=${t}` : time.at(t, 3));
  const at = view.at.until === "end" ? "the end of the log" : view.at.until === "seq" ? `${view.at.actor} #${view.at.seq}` : when(view.at.t);
  const lines = [`cluster state at ${at}${view.t !== null ? ` (last record ${time === undefined ? "" : "at "}${when(view.t)})` : ""}:`];
  if (time !== undefined) lines.push(`  ${time.describe()}`);
  const s = view.scheduler;
  if (s === null) {
    lines.push("  scheduler: not replayed");
  } else {
    const total = Object.values(s.tasks).reduce((n, keys) => n + keys.length, 0);
    lines.push(`  scheduler (${s.state}${s.diverged ? ", DIVERGED: the replay's state" : ""}): ${total} tasks, ${s.queued} queued, ${s.noWorker} no-worker, ${s.clients} clients`);
    for (const [state, keys] of Object.entries(s.tasks)) {
      const shown = keys.slice(0, MAX_KEYS_SHOWN).join(", ");
      lines.push(`    ${state.padEnd(20)} ${String(keys.length).padStart(7)}  ${shown}${keys.length > MAX_KEYS_SHOWN ? ", ..." : ""}`);
    }
    lines.push(`  workers as the scheduler sees them:`);
    lines.push(`    ${"name".padEnd(16)} ${"state".padEnd(8)} threads  occupancy  processing   held      nbytes`);
    for (const w of s.workers) {
      lines.push(
        `    ${w.name.padEnd(16)} ${w.state.padEnd(8)} ${String(w.nthreads).padStart(7)}  ${w.occupancy.toFixed(3).padStart(9)}  ${String(w.processing).padStart(10)}  ${String(w.held).padStart(5)}  ${String(w.nbytes).padStart(10)}`,
      );
    }
    lines.push(s.steals.length === 0 ? "  steals in flight: none" : `  steals in flight: ${s.steals.length}`);
    for (const steal of s.steals) lines.push(`    ${steal.key}: ${steal.victim ?? "?"} -> ${steal.thief ?? "?"} (request ${steal.requestId ?? "?"})`);
  }
  const workers = Object.entries(view.workers);
  if (workers.length > 0) {
    lines.push(`  worker cores:`);
    lines.push(`    ${"name".padEnd(16)} ${"state".padEnd(8)} executing  ready  waiting  fetching  in-flight  memory`);
    for (const [name, w] of workers) {
      const flags = [w.stopped ? "stopped" : "", w.diverged ? "DIVERGED" : ""].filter(Boolean).join(", ");
      lines.push(
        `    ${name.padEnd(16)} ${w.state.padEnd(8)} ${String(w.executing).padStart(9)}  ${String(w.ready).padStart(5)}  ${String(w.waiting).padStart(7)}  ${String(w.fetching).padStart(8)}  ${String(w.inFlight).padStart(9)}  ${String(w.memory).padStart(6)}${flags ? `  (${flags})` : ""}`,
      );
    }
  }
  return lines.join("\n");
}
