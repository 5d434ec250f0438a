import type { LogRecord } from "../log/types.js";

/** One worker's host metrics as the scheduler recorded them (a `host-metrics` input). */
export interface HostMetricsRow {
  t: number;
  worker: string;
  /** Bytes. */
  rss: number;
  heapUsed: number;
  /** Event-loop delay since the worker's previous heartbeat, milliseconds. */
  loopP99: number;
  loopMax: number;
}

/** The host metrics in a log's records, in log order (each actor's in its order). */
export function hostMetricsRows(records: Iterable<LogRecord>): HostMetricsRow[] {
  const rows: HostMetricsRow[] = [];
  for (const r of records) {
    if (r.kind !== "input" || r.event.op !== "host-metrics") continue;
    const e = r.event as Record<string, unknown>;
    const num = (k: string) => (typeof e[k] === "number" ? (e[k] as number) : NaN);
    rows.push({ t: r.t, worker: String(e.worker), rss: num("rss"), heapUsed: num("heapUsed"), loopP99: num("loopP99"), loopMax: num("loopMax") });
  }
  return rows;
}

/** A table, times in seconds from `t0` (the log's first record), memory in MB. */
export function formatHostMetrics(rows: readonly HostMetricsRow[], t0: number): string {
  if (rows.length === 0) return "no host metrics in this log (workers before natsched recorded them, or none ran a heartbeat)";
  const width = Math.max(6, ...rows.map((r) => r.worker.length));
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1).padStart(9);
  const ms = (v: number) => v.toFixed(2).padStart(9);
  const out = [`${"+s".padStart(10)}  ${"worker".padEnd(width)}  ${"rss MB".padStart(9)}  ${"heap MB".padStart(9)}  ${"loop p99".padStart(9)}  ${"loop max".padStart(9)}  (ms)`];
  for (const r of rows) out.push(`${(r.t - t0).toFixed(3).padStart(10)}  ${r.worker.padEnd(width)}  ${mb(r.rss)}  ${mb(r.heapUsed)}  ${ms(r.loopP99)}  ${ms(r.loopMax)}`);
  return out.join("\n");
}
