/**
 * The dashboard's summary (ClusterAt) from the facts its two folds keep, each in its own
 * maps: DashFold (inspect's ClusterFold plus the dashboard's counts) and the lean FirstFold.
 * Built only when viewed, so the folds' per-record work is untouched.
 */
import { COMPUTE_STATES, runningStatus, workerName } from "../../log/cluster-rules.js";
import type { RecordPlace } from "../../log/cluster-fold.js";
import type { ClusterAt, ProgressRow, WorkerRow } from "./wire-types.js";

/** Tasks done and steals in and out, per worker. */
export interface Tally {
  done: number;
  stealsIn: number;
  stealsOut: number;
}

/** What a summary is built from: the folds' own maps (by worker actor, worker name or key as named). */
export interface ClusterFacts {
  records: number;
  last: RecordPlace | undefined;
  schedulerState: string | undefined;
  /** By actor. */
  actors: ReadonlyMap<string, { role: string; stopped?: { reason: string | undefined }; nthreads?: number }>;
  /** The scheduler's worker machines, by worker name. */
  workers: ReadonlyMap<string, { state: string; reason?: string; nthreads?: number }>;
  /** Worker-side tasks by worker actor, then key. */
  workerTasks: ReadonlyMap<string, ReadonlyMap<string, { state: string; duration?: number | undefined }>>;
  steals: ReadonlyMap<string, { key: string; victim?: string; thief?: string }>;
  progressRows: ReadonlyMap<string, ProgressRow>;
  /** By worker name. */
  tallies: ReadonlyMap<string, Tally>;
  /** Bytes of each key in memory, as reported. */
  nbytes: ReadonlyMap<string, number>;
  /** Tasks the scheduler has processing, by worker name. */
  processing: ReadonlyMap<string, number>;
}

export function clusterAt(facts: ClusterFacts): ClusterAt {
  const names = new Set<string>(facts.workers.keys());
  for (const [actor, own] of facts.actors) if (own.role === "worker") names.add(workerName(actor));
  const workers = [...names].sort().map((name) => workerRow(facts, name));
  const steals = [...facts.steals.values()].map(({ key, victim, thief }) => ({ key, ...(victim !== undefined ? { victim } : {}), ...(thief !== undefined ? { thief } : {}) }));
  const progress = [...facts.progressRows.values()].map((row) => ({ ...row })).sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0));
  const at: ClusterAt = { records: facts.records, workers, progress, steals };
  if (facts.last) at.last = { actor: facts.last.actor, seq: facts.last.seq, t: facts.last.t };
  if (facts.schedulerState !== undefined) at.schedulerState = facts.schedulerState;
  return at;
}

/** A worker as inspect shows it (tools/inspect-view.ts), with the dashboard's counts. */
function workerRow(facts: ClusterFacts, name: string): WorkerRow {
  const own = facts.actors.get(`worker.${name}`);
  const seen = facts.workers.get(name);
  const executing: string[] = [];
  let occupancy = 0;
  let inMemory = 0;
  let bytes = 0;
  for (const [key, task] of facts.workerTasks.get(`worker.${name}`) ?? []) {
    if (task.state === "executing") executing.push(key);
    if (COMPUTE_STATES.has(task.state)) occupancy += task.duration ?? 0;
    if (task.state === "memory") {
      inMemory++;
      bytes += facts.nbytes.get(key) ?? 0;
    }
  }
  const tally = facts.tallies.get(name);
  const row: WorkerRow = {
    name,
    status: runningStatus(own, seen),
    executing: executing.sort(),
    occupancy,
    processing: facts.processing.get(name) ?? 0,
    inMemory,
    bytes,
    done: tally?.done ?? 0,
    stealsIn: tally?.stealsIn ?? 0,
    stealsOut: tally?.stealsOut ?? 0,
  };
  if (seen !== undefined) row.schedulerState = seen.state;
  const reason = own?.stopped?.reason ?? seen?.reason;
  if (reason !== undefined) row.reason = reason;
  const nthreads = own?.nthreads ?? seen?.nthreads;
  if (nthreads !== undefined) row.nthreads = nthreads;
  return row;
}
