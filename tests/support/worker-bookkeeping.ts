/**
 * A worker's bookkeeping agrees with itself and with its data store, for the worker fuzz test
 * (tests/fuzz-worker.test.ts): every task record in a state of the wtask machine, dependencies
 * and dependents mirrored, the executions counted once, and the data store holding exactly
 * the keys its core has in memory, and every task to fetch queued (per holder: under each of
 * its holders, in a heap that knows its place).
 */
import { FETCH_AT, type WorkerCore, type WTask } from "../../machines/worker/core.js";
import type { FetchQueues } from "../../machines/worker/fetch-queues.js";
import { WORKER_TASK } from "../../machines/tables.js";

/** `store`: the host's data store, or null not to compare with one. */
export function workerBookkeepingProblems(core: WorkerCore, store: ReadonlyMap<string, unknown> | null): string[] {
  const problems: string[] = [];
  const states = new Set(WORKER_TASK.states);
  let executing = 0;
  for (const [key, ts] of core.tasks) {
    if (ts.key !== key) problems.push(`task record ${ts.key} is filed under ${key}`);
    if (!states.has(ts.state)) problems.push(`${key} is in ${ts.state}, no state of the wtask machine`);
    if (ts.state === "executing") executing++;
    for (const dts of ts.dependencies) {
      if (core.tasks.get(dts.key) !== dts) problems.push(`${key} depends on ${dts.key}, which the worker no longer tracks`);
      if (!dts.dependents.has(ts)) problems.push(`${key} depends on ${dts.key}, whose dependents do not list it`);
    }
    for (const d of ts.dependents) {
      if (core.tasks.get(d.key) !== d) problems.push(`${key} is an input of ${d.key}, which the worker no longer tracks`);
      if (!d.dependencies.includes(ts)) problems.push(`${key} lists dependent ${d.key}, which does not depend on it`);
    }
    if (ts.state === "memory" && store !== null && !store.has(key)) problems.push(`${key} is in memory with nothing in the data store`);
  }
  for (const key of store?.keys() ?? []) {
    if (core.tasks.get(key)?.state !== "memory") problems.push(`the data store holds ${key}, which the core has ${core.tasks.get(key)?.state ?? "not at all"}`);
  }
  if (core.executing !== core.runningCount) problems.push(`${core.executing} executions counted, ${core.runningCount} running`);
  if (core.executing > core.init.nthreads) problems.push(`${core.executing} executions on ${core.init.nthreads} threads`);
  if (executing > core.executing) problems.push(`${executing} tasks executing, ${core.executing} counted`);
  problems.push(...fetchQueueProblems(core));
  return problems;
}

function fetchQueueProblems(core: WorkerCore): string[] {
  const problems: string[] = [];
  const queues = (core as unknown as { fetchByHolder: FetchQueues<WTask> | null }).fetchByHolder;
  for (const [key, ts] of core.tasks) {
    const queued = queues === null ? ts[FETCH_AT] >= 0 : ts.fetchOrder >= 0;
    if ((ts.state === "fetch") !== queued) problems.push(`${key} is in ${ts.state} and ${queued ? "" : "not "}queued to fetch`);
  }
  if (queues === null) return problems;
  for (const [ts, holders] of queues.under) {
    if (core.tasks.get(ts.key) !== ts) problems.push(`${ts.key} is queued to fetch, and the worker no longer tracks it`);
    if ([...ts.holders.keys()].sort().join() !== [...holders].sort().join()) problems.push(`${ts.key} is queued under ${holders.join(",")}, held by ${[...ts.holders.keys()].join(",")}`);
    for (const holder of holders) if (queues.byHolder.get(holder)?.at.has(ts) !== true) problems.push(`${ts.key} is not in ${holder}'s queue`);
  }
  for (const [holder, q] of queues.byHolder) {
    if (q.size === 0) problems.push(`${holder}'s queue is kept empty`);
    q.items.forEach((ts, i) => {
      if (q.at.get(ts) !== i) problems.push(`${holder}'s queue has ${ts.key} at ${i}, its place says ${q.at.get(ts)}`);
      if (queues.under.get(ts)?.includes(holder) !== true) problems.push(`${holder}'s queue holds ${ts.key}, not queued under it`);
    });
    if (q.at.size !== q.items.length) problems.push(`${holder}'s queue places ${q.at.size} tasks, holds ${q.items.length}`);
  }
  return problems;
}
