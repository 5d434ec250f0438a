/**
 * What a scheduler or worker still holds, counted from outside: the task records, the data
 * store, and the size of every other table (Map, Set, array, heap, queue) on the actor, its
 * core and their parts, found by walking their fields, so a table added later is counted
 * without changing this file. Fields that are JavaScript-private (`#x`) cannot be seen;
 * their memory shows in the heap. Used by the SOAK workload, in process (embedded) and in
 * each NATS process (bench/soak-node.ts).
 */
import { getHeapStatistics } from "node:v8";
import type { LocalCluster, SchedulerActor, WorkerActor } from "../index.js";

/** One actor's counts after a round. */
export interface ActorCounts {
  /** Task records: SchedulerCore.tasks or WorkerCore.tasks. */
  records: number;
  /** Records by state. */
  states: Record<string, number>;
  /** Workers: keys in the data store (WorkerActor.store). The scheduler: its clients (SchedulerCore.clients). */
  stored?: number;
  clients?: number;
  /** Tombstones (WorkerCore.voided): bounded (MAX_TOMBSTONES), reported apart, and their bound. */
  tombstones?: number;
  tombstoneCap?: number;
  /** Running executions (workers); processing tasks summed over workers (scheduler). */
  busy: number;
  /** Every table found, by path: "core.tasks", "liveness.clients", ... */
  tables: Record<string, number>;
}

/** Tables that are bounded by design and grow until their bound (reported, not judged). */
export const BOUNDED_TABLES: Record<string, string> = {
  "core.voided": "tombstones, at most MAX_TOMBSTONES (65,536) a worker (machines/worker/core.ts)",
  "liveness.released": "released clients remembered, at most 1,000 (actors/host/liveness.ts)",
  // One batch per subject sent to, a client's among them: idle ones dropped past 4,096.
  "outbox.batches": "one batch per subject, idle ones dropped past 4,096 (actors/outbox.ts)",
  "outbox.lingers": "one flag per subject, cleared past 4,096 (actors/outbox.ts)",
  // A NATS worker's reports for a restarted scheduler (actors/process/worker-resync.ts).
  "opts.transport.reports": "reports of tasks, pruned to the tasks held once past 2 x tasks + 1,024 (ReportJournal)",
};

/** The size of a table-like value, or undefined if it is not one. */
function sizeOf(value: unknown): number | undefined {
  if (value instanceof Map || value instanceof Set) return value.size;
  if (Array.isArray(value)) return value.length;
  if (typeof value === "object" && value !== null) {
    const size = (value as { size?: unknown }).size;
    if (typeof size === "number") return size;
  }
  return undefined;
}

/** Every table among `root`'s own fields, as `<prefix><field>`; descends into the fields named in `descend`. */
function walk(root: unknown, prefix: string, descend: Record<string, string[]>, into: Record<string, number>): void {
  if (typeof root !== "object" || root === null) return;
  for (const [field, value] of Object.entries(root)) {
    const path = prefix + field;
    const size = sizeOf(value);
    if (size !== undefined) into[path] = size;
    const deeper = descend[path];
    if (deeper !== undefined && typeof value === "object" && value !== null) walk(value, path + ".", descend, into);
  }
}

/** The parts of an actor whose own tables are counted too (others, like config, hold none per key). */
const SCHEDULER_PARTS: Record<string, string[]> = {
  core: [],
  "core.stealing": [],
  "core.retirements": [],
  "core.estimates": [],
  liveness: [],
  outbox: [],
};

const WORKER_PARTS: Record<string, string[]> = {
  core: [],
  outbox: [],
  dataServer: [],
  "dataServer.transfers": [],
  // On NATS the actor's transport is the process's ReportJournal (actors/process/worker-resync.ts).
  opts: [],
  "opts.transport": [],
};

function byState<T extends { state: string }>(records: Iterable<T>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of records) out[r.state] = (out[r.state] ?? 0) + 1;
  return out;
}

export function schedulerCounts(actor: SchedulerActor): ActorCounts {
  const core = actor.core;
  const tables: Record<string, number> = {};
  walk(actor, "", SCHEDULER_PARTS, tables);
  // Per-worker tables, summed over the workers: tasks processing, held, to be fetched.
  let busy = 0;
  const perWorker: Record<string, number> = {};
  for (const ws of core.workers.values()) {
    busy += ws.processing.size;
    const one: Record<string, number> = {};
    walk(ws, "", {}, one);
    for (const [k, v] of Object.entries(one)) perWorker[`workers[].${k}`] = (perWorker[`workers[].${k}`] ?? 0) + v;
  }
  Object.assign(tables, perWorker);
  // Per-client sets of wanted tasks, summed.
  let wanted = 0;
  for (const set of core.clients.values()) wanted += set.size;
  tables["core.clients[].tasks"] = wanted;
  return { records: core.tasks.size, states: byState(core.tasks.values()), clients: core.clients.size, busy, tables };
}

export function workerCounts(actor: WorkerActor): ActorCounts {
  const tables: Record<string, number> = {};
  walk(actor, "", WORKER_PARTS, tables);
  const core = actor.core;
  return {
    records: core.tasks.size,
    states: byState(core.tasks.values()),
    stored: actor.store.size,
    tombstones: core.voided.size,
    tombstoneCap: core.voided.max,
    busy: core.executing,
    tables,
  };
}

/** Tables of the embedded host itself (LocalCluster): clients and transports it keeps. */
export function localClusterTables(cluster: LocalCluster): Record<string, number> {
  const tables: Record<string, number> = {};
  walk(cluster, "", {}, tables);
  return tables;
}

/** global.gc, which `node --expose-gc` provides (bench/run.ts starts every case with it). */
export function forceGc(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("SOAK measures the heap after a full GC: run node with --expose-gc (bench/run.ts does)");
  // Twice: objects with finalizers (FinalizationRegistry, weak maps) need a second pass.
  gc();
  gc();
}

/** Heap used after a full GC, in MB. */
export function heapAfterGcMB(): number {
  forceGc();
  return Number((getHeapStatistics().used_heap_size / 2 ** 20).toFixed(2));
}
