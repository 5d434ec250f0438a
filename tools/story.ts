import { explainReasons, type ReasonContext } from "./story-reasons.js";
import type { LogRecord } from "../log/types.js";
import type { LoggedWhy } from "../machines/reasons.js";

/** One line of a task's story: when, who, what happened, and why. */
export interface StoryLine {
  t: number;
  actor: string;
  seq: number;
  text: string;
  /** The decision's reasons in words (placement candidates and objective values, steal costs), if any. */
  reasons?: string[];
  /** The reasons as the log records them. */
  why?: LoggedWhy;
  /** The first lines of a failure's stack (the first input of the story that carries one). */
  stack?: string[];
}

/** Lines of a failure's stack a story shows: the message and the frames nearest the raise. */
export const STORY_STACK_LINES = 6;

/**
 * A task's life across the scheduler and workers, in the order the actors saw it, with the
 * reasons of each decision. `ctx.bandwidth` (the scheduler's config) lets placement reasons
 * show transfer estimates in seconds.
 */
export function storyLines(records: Iterable<LogRecord>, key: string, ctx: ReasonContext = {}): StoryLine[] {
  const lines: StoryLine[] = [];
  let stackShown = false;
  for (const r of records) {
    if (r.kind === "transition") {
      if (r.id !== key) continue;
      const line: StoryLine = { t: r.t, actor: r.actor, seq: r.seq, text: `${r.machine} ${r.from} -> ${r.to} (${r.event})` };
      const reasons = explainReasons(r, ctx);
      if (reasons.length > 0) line.reasons = reasons;
      if (r.why !== undefined) line.why = r.why;
      lines.push(line);
    } else if (r.kind === "input") {
      const text = describeInput(r.event, key);
      if (text === undefined) continue;
      const line: StoryLine = { t: r.t, actor: r.actor, seq: r.seq, text };
      const stack = (r.event as { error?: { stack?: unknown } }).error?.stack;
      if (!stackShown && r.event.key === key && typeof stack === "string") {
        line.stack = stack.split("\n").slice(0, STORY_STACK_LINES);
        stackShown = true;
      }
      lines.push(line);
    }
  }
  lines.sort((a, b) => a.t - b.t || (a.actor === b.actor ? a.seq - b.seq : a.actor < b.actor ? -1 : 1));
  return lines;
}

function describeInput(event: { op: string; [k: string]: unknown }, key: string): string | undefined {
  const e = event as Record<string, unknown>;
  if (e.key === key) {
    const detail: string[] = [];
    if (typeof e.worker === "string") detail.push(`from ${e.worker}`);
    if (typeof e.nbytes === "number") detail.push(`${e.nbytes} B`);
    if (typeof e.start === "number" && typeof e.stop === "number") detail.push(`ran ${formatSeconds(e.stop - e.start)}`);
    if (typeof e.outcome === "string") detail.push(e.outcome);
    const err = e.error as { name?: string; message?: string } | undefined;
    if (err?.message) detail.push(`${err.name ?? "Error"}: ${err.message}`);
    return `input ${event.op}${detail.length ? ` (${detail.join(", ")})` : ""}`;
  }
  if (Array.isArray(e.keys) && e.keys.some((k) => k === key || (typeof k === "object" && k !== null && (k as { key?: unknown }).key === key))) {
    return `input ${event.op}${typeof e.client === "string" ? ` from ${e.client}` : ""}${typeof e.from === "string" ? ` from ${e.from}` : ""}`;
  }
  if (Array.isArray(e.received) && e.received.some((k) => (k as { key?: unknown }).key === key)) return `input ${event.op} (received from ${String(e.from)})`;
  if (Array.isArray(e.tasks)) {
    const spec = e.tasks.find((t) => (t as { key?: unknown }).key === key) as { func?: string; deps?: string[] } | undefined;
    if (spec) return `input ${event.op}${typeof e.client === "string" ? ` from ${e.client}` : ""}: ${spec.func}(${(spec.deps ?? []).length} deps${spec.deps?.length ? `: ${spec.deps.join(", ")}` : ""})`;
  }
  if (Array.isArray(e.data) && e.data.some((d) => (d as { key?: unknown }).key === key)) return `input ${event.op} (scattered)`;
  if (Array.isArray(e.ops)) {
    const inner = e.ops
      .filter((op): op is { op: string } => typeof op === "object" && op !== null && typeof (op as { op?: unknown }).op === "string")
      .map((op) => describeInput(op, key))
      .filter((text): text is string => text !== undefined);
    if (inner.length > 0) return `input ${event.op}: ${inner.map((text) => text.replace(/^input /, "")).join("; ")}`;
  }
  return undefined;
}

function formatSeconds(s: number): string {
  return s < 1e-3 ? `${(s * 1e6).toFixed(0)} us` : s < 1 ? `${(s * 1e3).toFixed(2)} ms` : `${s.toFixed(3)} s`;
}

/** Render story lines with times from `start` (the run's start; default the first line); reasons go indented under their line. */
export function formatStory(lines: StoryLine[], start?: number): string {
  if (lines.length === 0) return "";
  const t0 = start ?? lines[0]!.t;
  const width = Math.max(...lines.map((l) => l.actor.length));
  const out: string[] = [];
  for (const l of lines) {
    const prefix = `+${(l.t - t0).toFixed(6)}s  ${l.actor.padEnd(width)}  `;
    out.push(`${prefix}#${l.seq}  ${l.text}`);
    const indent = " ".repeat(prefix.length + 4);
    for (const reason of l.reasons ?? []) out.push(`${indent}${reason}`);
    for (const frame of l.stack ?? []) out.push(`${indent}| ${frame}`);
  }
  return out.join("\n");
}
