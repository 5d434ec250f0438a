import type { WorkerSummary } from "../actors/client.js";
import { NatschedError } from "../machines/errors.js";
import { NatsTransport } from "../transport/nats.js";
import { subjects } from "../transport/subjects.js";
import { clusterName, NATS_FLAGS, NATS_FLAGS_USAGE, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";
import type { StealingSummary } from "../actors/scheduler-queries.js";

export const STATUS_USAGE = `usage: natsched status [--nats <url>] [--cluster <name>] [--json]

Asks the cluster's scheduler for its workers, their load and its tasks by state.
  --json                   print the scheduler's answer as JSON
${NATS_FLAGS_USAGE}`;

interface StatusReply {
  state: string;
  workers: WorkerSummary[];
  tasks: Record<string, number>;
  queued: number;
  noWorker: number;
  /** Per-level steal counters; null with stealing off (absent from an older scheduler). */
  stealing?: StealingSummary | null;
  /** Ops the scheduler refused for their sender's role or incarnation (absent from an older scheduler). */
  refused?: number;
}

export async function statusCommand(args: string[], io: Io): Promise<number> {
  const { values } = parseFlags(args, { ...NATS_FLAGS, json: { type: "boolean" }, help: { type: "boolean", short: "h" } });
  if (values.help) {
    io.out(STATUS_USAGE);
    return 0;
  }
  const cluster = clusterName(values);
  const transport = await NatsTransport.connect({ ...natsOptions(values), name: `natsched-status-${cluster}`, resend: false, timeout: 5000 });
  let status: StatusReply;
  try {
    status = (await transport.request(subjects(cluster).query, { op: "status" }, { timeout: 5000 })) as StatusReply;
  } catch (error) {
    if (error instanceof NatschedError && (error.code === "PROTOCOL" || error.code === "TIMEOUT")) {
      io.err(`natsched status: no scheduler answers for cluster ${cluster} (${error.message})`);
      return 1;
    }
    throw error;
  } finally {
    await transport.close();
  }
  if (values.json) {
    io.out(JSON.stringify(status, null, 2));
    return 0;
  }
  io.out(formatStatus(cluster, status));
  return 0;
}

export function formatStatus(cluster: string, status: StatusReply): string {
  const lines = [`cluster ${cluster}: scheduler ${status.state}, ${status.workers.length} worker(s), ${status.workers.reduce((n, w) => n + w.nthreads, 0)} thread(s)`];
  if (status.workers.length > 0) {
    const header = ["worker", "host", "threads", "processing", "occupancy(s)", "keys", "bytes", "state"];
    const rows = status.workers.map((w) => [w.name, w.host, String(w.nthreads), String(w.processing), w.occupancy.toFixed(3), String(w.keys), formatBytes(w.nbytes), w.state]);
    lines.push(...table([header, ...rows]).map((l) => `  ${l}`));
  }
  const states = Object.entries(status.tasks)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([state, n]) => `${state} ${n}`);
  lines.push(`tasks: ${states.length === 0 ? "none" : states.join(", ")}; queued ${status.queued}, no-worker ${status.noWorker}`);
  const st = status.stealing;
  if (st === null) lines.push("stealing: off");
  else if (st !== undefined) {
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const levels = st.requests.flatMap((n, level) => (n > 0 ? [`L${level} ${n}/${st.confirmed[level] ?? 0}/${st.rejected[level] ?? 0}/${st.aborted[level] ?? 0}`] : []));
    lines.push(
      `stealing: ${sum(st.requests)} requested, ${sum(st.confirmed)} confirmed, ${sum(st.rejected)} rejected, ${sum(st.aborted)} aborted, ${st.inFlight} in flight, ${st.stale} stale answers` +
        (levels.length > 0 ? `; per level (requested/confirmed/rejected/aborted): ${levels.join(", ")}` : ""),
    );
  }
  if (status.refused !== undefined && status.refused > 0) {
    lines.push(`refused: ${status.refused} op(s) out of their sender's role or from a worker incarnation it does not have (FORBIDDEN; the scheduler's output says which)`);
  }
  return lines.join("\n");
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === 0 || i === 1 || i === r.length - 1 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ").trimEnd());
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}
