/**
 * A human-readable report of a simulation, for `natsched simulate`. Pure: text in, text
 * out, no I/O.
 */
import type { SimResult } from "./scenario.js";

export interface FormatOptions {
  /** At most this many unfinished tasks are listed by key; default 20. */
  maxListed?: number;
}

/** States a task ends in when all went well (outputs in memory, intermediates released). */
const SETTLED = new Set(["memory", "released", "forgotten"]);

export function formatSimResult(result: SimResult, options: FormatOptions = {}): string {
  const maxListed = options.maxListed ?? 20;
  const tasks = Object.entries(result.tasks);
  const lines: string[] = [];
  lines.push(`makespan   ${seconds(result.makespan)} (virtual)`);

  const byState = countBy(tasks.map(([, t]) => t.state));
  const executions = tasks.reduce((n, [, t]) => n + t.executions, 0);
  lines.push(`tasks      ${tasks.length} (${[...byState].map(([s, n]) => `${s} ${n}`).join(", ")}); ${executions} executions`);

  const perWorker = new Map<string, { tasks: number; busy: number }>();
  for (const [, t] of tasks) {
    if (t.worker === "") continue;
    const w = perWorker.get(t.worker) ?? { tasks: 0, busy: 0 };
    w.tasks += 1;
    w.busy += t.end - t.start;
    perWorker.set(t.worker, w);
  }
  if (perWorker.size > 0) {
    lines.push("workers    (tasks whose last run ended there, and the seconds those runs took)");
    const width = Math.max(...[...perWorker.keys()].map((name) => name.length));
    for (const [name, w] of [...perWorker].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      const count = `${w.tasks} task${w.tasks === 1 ? "" : "s"}`;
      lines.push(`  ${name.padEnd(width)}  ${count.padStart(13)}  ${seconds(w.busy).padStart(12)}`);
    }
  }

  const bytes = result.transfers.reduce((n, t) => n + t.nbytes, 0);
  lines.push(`transfers  ${result.transfers.length} (${size(bytes)})`);
  const outcomes = countBy(result.steals.map((s) => s.outcome));
  lines.push(`steals     ${result.steals.length}${outcomes.size > 0 ? ` (${[...outcomes].map(([o, n]) => `${o} ${n}`).join(", ")})` : ""}`);

  const unsettled = tasks.filter(([, t]) => !SETTLED.has(t.state));
  if (unsettled.length > 0) {
    lines.push(`not done   ${unsettled.length}`);
    for (const [key, t] of unsettled.slice(0, maxListed)) lines.push(`  ${key}  ${t.state}`);
    if (unsettled.length > maxListed) lines.push(`  ... and ${unsettled.length - maxListed} more`);
  }
  const pending = Object.entries(result.futures ?? {}).flatMap(([client, futures]) =>
    Object.entries(futures)
      .filter(([, f]) => f.state === "pending")
      .map(([key]) => `${client}: ${key}`),
  );
  if (pending.length > 0) {
    lines.push(`waiting    ${pending.length} future${pending.length === 1 ? "" : "s"} never settled`);
    for (const entry of pending.slice(0, maxListed)) lines.push(`  ${entry}`);
    if (pending.length > maxListed) lines.push(`  ... and ${pending.length - maxListed} more`);
  }
  lines.push(`log        ${result.log.length} records`);
  return lines.join("\n");
}

function countBy(values: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return new Map([...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)));
}

function seconds(s: number): string {
  return `${Number(s.toFixed(3))} s`;
}

function size(bytes: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${Number(value.toFixed(unit === 0 ? 0 : 1))} ${units[unit]}`;
}
