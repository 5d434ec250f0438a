import { doneReport, type SchedulerCore } from "../machines/scheduler/core.js";

/**
 * Answers to read-only questions about a scheduler's state (status, workers, who-has).
 * `totals`: the host's running totals, of which `status` tells the refused ops.
 */
export function answerQuery(core: SchedulerCore, q: { op?: string; keys?: unknown; client?: unknown }, totals?: { refused: number }): unknown {
  if (typeof q !== "object" || q === null || Array.isArray(q)) return { error: `a query must be an object with an \`op\`, got ${q === null ? "null" : Array.isArray(q) ? "an array" : typeof q}` };
  switch (q.op) {
    case "client-keys": {
      // What a client that heard a scheduler announce a new run, or whose connection came
      // back, asks: which of my keys do you know (in what state), and which do you hold for
      // me? (Client.reconcile in actors/client.ts.) `run` tells it whether this is still the
      // run it knew; `reports`, what it was told of its done keys (a report sent while its
      // connection was down is lost).
      const keys = Array.isArray(q.keys) ? q.keys.filter((k): k is string => typeof k === "string") : [];
      const client = typeof q.client === "string" ? q.client : "";
      const known: [string, string][] = [];
      const wanted: string[] = [];
      const reports: unknown[] = [];
      for (const key of keys) {
        const ts = core.tasks.get(key);
        if (ts === undefined || ts.state === "forgotten") continue;
        known.push([key, ts.state]);
        if (!ts.whoWants?.has(client)) continue;
        wanted.push(key);
        const report = doneReport(ts);
        if (report !== null) reports.push(report);
      }
      return { known: Object.fromEntries(known), wanted, run: core.run, reports };
    }
    case "workers":
      return { workers: workerSummaries(core) };
    case "who-has": {
      const keys = Array.isArray(q.keys) ? q.keys.filter((k): k is string => typeof k === "string") : [];
      // No prototype: a key such as "__proto__" is a property like any other, not a setter.
      const out: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
      for (const key of keys) out[key] = [...(core.tasks.get(key)?.whoHas ?? [])].map((ws) => ws.name);
      return { whoHas: out };
    }
    case "status":
      return {
        state: core.state,
        workers: workerSummaries(core),
        tasks: tasksByState(core),
        queued: core.queued.size,
        noWorker: core.unrunnable.size,
        stealing: stealingSummary(core),
        ...(totals !== undefined ? { refused: totals.refused } : {}),
      };
    default:
      return { error: `unknown query ${JSON.stringify(q.op)}` };
  }
}

export function workerSummaries(core: SchedulerCore) {
  return core.running.map((ws) => ({
    name: ws.name,
    id: ws.id,
    state: ws.state,
    nthreads: ws.nthreads,
    host: ws.host,
    processing: ws.processing.size,
    occupancy: ws.occupancy,
    nbytes: ws.nbytes,
    keys: ws.hasWhat.size,
  }));
}

export function tasksByState(core: SchedulerCore): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const ts of core.tasks.values()) counts[ts.state] = (counts[ts.state] ?? 0) + 1;
  return counts;
}

/**
 * Work stealing's counters (docs/stealing.md, "Observability"), or null when stealing is
 * off. Per level (index = level, 0..14): requests sent, and how they ended: confirmed
 * (moved to the thief), rejected (the victim had started it), aborted (the victim no longer
 * held the assignment, the thief left, or the task finished, failed or was released first).
 * requests = confirmed + rejected + aborted + the ones still in flight. `stale`: answers that
 * came after their request was over.
 */
export function stealingSummary(core: SchedulerCore): StealingSummary | null {
  const stealing = core.stealing;
  if (stealing === null) return null;
  const { requests, confirmed, rejected, aborted, stale } = stealing.metrics;
  return { requests: [...requests], confirmed: [...confirmed], rejected: [...rejected], aborted: [...aborted], stale, inFlight: stealing.inFlight.size };
}

export interface StealingSummary {
  requests: number[];
  confirmed: number[];
  rejected: number[];
  aborted: number[];
  stale: number;
  inFlight: number;
}
