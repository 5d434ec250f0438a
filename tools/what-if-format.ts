/** The side-by-side table `natsched what-if` prints. Pure: a result in, text out. */
import type { WorkerMetrics } from "./what-if-metrics.js";
import type { WhatIfResult } from "./what-if.js";

export function formatWhatIf(result: WhatIfResult, source: string): string {
  const { workload, recorded, original, changed } = result;
  const s = workload.summary;
  const lines: string[] = [];
  const workers = `${s.workers} worker${s.workers === 1 ? "" : "s"}${s.joins ? `, ${s.joins} joined later` : ""}${s.leaves ? `, ${s.leaves} died or left` : ""}`;
  lines.push(`what-if on ${source}: ${s.tasks} tasks in ${s.graphs} graph(s), ${s.data} scattered key(s), ${workers}`);
  lines.push(`  durations: ${s.measured} measured, ${s.estimated} estimated${s.failed ? `, ${s.failed} failed runs` : ""}; network: ${network(result)}`);
  lines.push(`  host costs: ${hostCosts(result)}`);
  lines.push(`  changes: ${changed === null ? "none (give --set key=value)" : formatChanges(result.changes)}`);
  lines.push("");

  const columns = [recorded, original, ...(changed ? [changed] : [])];
  const header = ["", "recorded", "simulated", ...(changed ? ["what-if"] : [])];
  const rows: string[][] = [header];
  rows.push(["makespan", ...columns.map((c) => seconds(c.makespan))]);
  rows.push(["bytes transferred", ...columns.map((c) => bytes(c.bytesTransferred))]);
  rows.push(["transfers", ...columns.map((c) => String(c.transfers))]);
  rows.push(["steals (confirmed)", ...columns.map((c) => `${c.stealsRequested} (${c.stealsConfirmed})`)]);
  const names = [...new Set(columns.flatMap((c) => Object.keys(c.workers)))].sort();
  const cell = (c: { workers: Record<string, WorkerMetrics> }, name: string, pick: (w: WorkerMetrics) => string) =>
    c.workers[name] === undefined ? "-" : pick(c.workers[name]!);
  for (const name of names) rows.push([`tasks on ${name}`, ...columns.map((c) => cell(c, name, (w) => String(w.tasks)))]);
  for (const name of names) rows.push([`busy ${name}`, ...columns.map((c) => cell(c, name, (w) => seconds(w.busy)))]);
  const stuck = [original, ...(changed ? [changed] : [])];
  if (stuck.some((c) => c.unfinished > 0)) rows.push(["tasks not finished", "-", ...stuck.map((c) => String(c.unfinished))]);
  lines.push(...table(rows).map((line) => `  ${line}`));
  lines.push("");

  const ratio = Number.isFinite(result.ratio) ? result.ratio.toFixed(2) : "n/a";
  const off = Number.isFinite(result.ratio) ? ` (${result.ratio >= 1 ? "+" : ""}${((result.ratio - 1) * 100).toFixed(0)}%)` : "";
  lines.push(`simulated original vs recorded: makespan ${seconds(original.makespan)} vs ${seconds(recorded.makespan)}, ratio ${ratio}${off}`);
  if (changed !== null && original.makespan > 0) {
    lines.push(`what-if vs simulated original: makespan ${seconds(changed.makespan)} vs ${seconds(original.makespan)}, ratio ${(changed.makespan / original.makespan).toFixed(2)}`);
  }
  if (workload.notes.length > 0) {
    lines.push("notes:");
    for (const note of workload.notes) lines.push(`  - ${note}`);
  }
  return lines.join("\n");
}

export function formatChanges(changes: object): string {
  return Object.entries(changes)
    .map(([k, v]) => `${k}=${typeof v === "number" && !Number.isFinite(v) ? "inf" : typeof v === "object" ? JSON.stringify(v) : String(v)}`)
    .join(" ");
}

function network(result: WhatIfResult): string {
  const n = result.workload.scenario.network ?? {};
  const latency = n.latency === undefined ? "default latency" : `latency ${(n.latency * 1e3).toFixed(3)} ms (measured)`;
  const bandwidth = n.bandwidth === undefined ? "bandwidth as configured" : `bandwidth ${bytes(n.bandwidth)}/s (measured)`;
  return `${latency}, ${bandwidth}`;
}

/** The host costs the simulations ran with, as the log showed them (or as given: --host). */
function hostCosts(result: WhatIfResult): string {
  const c = result.workload.scenario.hostCosts ?? {};
  const ms = (s: number | undefined) => `${((s ?? 0) * 1e3).toFixed(3)} ms`;
  const us = (s: number | undefined) => `${((s ?? 0) * 1e6).toFixed(1)} us`;
  return [
    `to worker +${ms(c.workerDelay)}`,
    `to scheduler +${ms(c.schedulerDelay)}`,
    `function start ${ms(c.taskStart)}`,
    `scheduler ${us(c.schedulerOp)}/op`,
    `graph intake ${us(c.graphIntake)}/task (first graph +${ms(c.warmUp)})`,
    `steal answers +${ms(c.stealAnswer)}`,
  ].join(", ");
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("   ").trimEnd());
}

function seconds(s: number): string {
  const digits = s >= 100 ? 1 : s >= 1 ? 3 : 4;
  return `${s.toFixed(digits)} s`;
}

function bytes(n: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 ? value.toFixed(0) : value.toFixed(1)} ${units[unit]}`;
}
