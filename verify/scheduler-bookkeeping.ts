/**
 * The scheduler core's bookkeeping agrees with itself: task states with the processing, queue,
 * no-worker, replica and steal records, group counts, and the occupancy each worker and the
 * cluster derive from what they process and fetch (docs/invariants.md, "scheduler-bookkeeping"
 * and "occupancy"). Checked after every step of a simulated run (checker.ts) and after every
 * message of the wire fuzz tests (tests/fuzz-scheduler-host.test.ts).
 */
import type { SchedulerCore } from "../machines/scheduler/core.js";
import type { InvariantId } from "./invariants.js";

/** Calls `bad` once for each disagreement found in `core`. */
export function checkSchedulerBookkeeping(core: SchedulerCore, bad: (invariant: InvariantId, message: string) => void): void {
  for (const ts of core.tasks.values()) {
    const processing = ts.state === "processing.assigned" || ts.state === "processing.stealing";
    const on = ts.processingOn;
    if (processing !== (on !== null)) bad("scheduler-bookkeeping", `${ts.key} is ${ts.state} with processingOn ${on?.name ?? "null"}`);
    if (on !== null && (!on.processing.has(ts) || core.workers.get(on.name) !== on)) {
      bad("scheduler-bookkeeping", `${ts.key} is processing on ${on.name}, which does not list it or is gone`);
    }
    if ((ts.state === "queued") !== core.queued.has(ts)) bad("scheduler-bookkeeping", `${ts.key} is ${ts.state}, queued heap says ${core.queued.has(ts)}`);
    if ((ts.state === "no-worker") !== core.unrunnable.has(ts)) bad("scheduler-bookkeeping", `${ts.key} is ${ts.state}, no-worker set says ${core.unrunnable.has(ts)}`);
    if (ts.whoHas.size > 0 && ts.state !== "memory") bad("scheduler-bookkeeping", `${ts.key} is ${ts.state} but has replicas`);
    if (ts.state === "memory" && ts.whoHas.size === 0) bad("scheduler-bookkeeping", `${ts.key} is in memory with no replica`);
    for (const ws of ts.whoHas) {
      if (!ws.hasWhat.has(ts) || core.workers.get(ws.name) !== ws) bad("scheduler-bookkeeping", `${ts.key}'s replica on ${ws.name} is not mirrored or the worker is gone`);
    }
    const stealing = core.stealing;
    const inFlight = stealing?.inFlight.get(ts);
    if ((ts.state === "processing.stealing") !== (inFlight !== undefined)) {
      bad("scheduler-bookkeeping", `${ts.key} is ${ts.state}, steal in flight: ${inFlight !== undefined}`);
    } else if (inFlight !== undefined && ts.stealRequest !== inFlight.requestId) {
      bad("scheduler-bookkeeping", `${ts.key}: stealRequest ${ts.stealRequest} but ${inFlight.requestId} in flight`);
    }
  }
  if (core.queued.size + core.unrunnable.size > core.tasks.size) bad("scheduler-bookkeeping", "queue or no-worker set holds forgotten tasks");
  const pending = new Map<unknown, number>();
  for (const ts of core.tasks.values()) if (ts.state === "released" || ts.state === "waiting") pending.set(ts.group, (pending.get(ts.group) ?? 0) + 1);
  for (const tg of core.groups.values()) {
    if (tg.pending !== (pending.get(tg) ?? 0)) bad("scheduler-bookkeeping", `group ${tg.name} counts ${tg.pending} unscheduled tasks, ${pending.get(tg) ?? 0} are released or waiting`);
  }
  if (core.stealing !== null) {
    // The stealable index holds processing tasks only, and its bins agree with its level map.
    let processing = 0;
    for (const ws of core.running) processing += ws.processing.size;
    const { stealableCount, binnedCount } = core.stealing;
    if (binnedCount !== stealableCount) bad("scheduler-bookkeeping", `stealable index: ${binnedCount} entries in bins, ${stealableCount} levelled tasks`);
    if (stealableCount > processing) bad("scheduler-bookkeeping", `stealable index holds ${stealableCount} tasks, only ${processing} are processing`);
    // Every aborted request was logged with the task's transition out of processing.stealing.
    if (core.stealing.abortedPending > 0) bad("scheduler-bookkeeping", `${core.stealing.abortedPending} aborted steal requests were not logged`);
  }
  let threads = 0;
  for (const ws of core.running) threads += ws.nthreads;
  // Occupancy is derived (estimates.ts): what must agree is the bookkeeping it is derived
  // from, per worker and over the cluster, and the derivation itself.
  const globalCounts = new Map<unknown, number>();
  let globalBytes = 0;
  for (const ws of core.workers.values()) {
    const counts = new Map<unknown, number>();
    let expected = 0;
    for (const ts of ws.processing) {
      counts.set(ts.prefix, (counts.get(ts.prefix) ?? 0) + 1);
      expected += core.taskDuration(ts);
      if (ts.processingOn !== ws) bad("scheduler-bookkeeping", `${ws.name} lists ${ts.key}, which is processing on ${ts.processingOn?.name ?? "nothing"}`);
    }
    const sameCounts = counts.size === ws.prefixCount.size && [...counts].every(([p, n]) => ws.prefixCount.get(p as never) === n);
    if (!sameCounts) bad("occupancy", `${ws.name}: prefix counts ${describeCounts(ws.prefixCount)}, its processing tasks give ${describeCounts(counts)}`);
    let bytes = 0;
    for (const need of ws.needsWhat.values()) bytes += need.bytes;
    if (bytes !== ws.networkBytes) bad("occupancy", `${ws.name}: ${ws.networkBytes} bytes to fetch booked, its transfers sum to ${bytes}`);
    expected += bytes / core.bandwidth;
    if (!close(ws.occupancy, expected)) bad("occupancy", `${ws.name}: occupancy ${ws.occupancy}, its tasks and transfers sum to ${expected}`);
    for (const [p, n] of counts) globalCounts.set(p, (globalCounts.get(p) ?? 0) + n);
    globalBytes += bytes;
    for (const ts of ws.hasWhat) if (!ts.whoHas.has(ws)) bad("scheduler-bookkeeping", `${ws.name} has ${ts.key}, whose replicas do not list it`);
  }
  const sameGlobal = globalCounts.size === core.prefixCount.size && [...globalCounts].every(([p, n]) => core.prefixCount.get(p as never) === n);
  if (!sameGlobal) bad("occupancy", `cluster prefix counts ${describeCounts(core.prefixCount)}, the workers' sum to ${describeCounts(globalCounts)}`);
  if (globalBytes !== core.networkBytes) bad("occupancy", `cluster bytes to fetch ${core.networkBytes}, the workers' sum to ${globalBytes}`);
  if (core.totalNthreads !== threads) bad("scheduler-bookkeeping", `totalNthreads ${core.totalNthreads}, running workers have ${threads}`);
}

function close(actual: number, expected: number): boolean {
  return Math.abs(actual - expected) <= 1e-9 + 1e-7 * Math.max(Math.abs(actual), Math.abs(expected));
}

function describeCounts(counts: ReadonlyMap<unknown, number>): string {
  return `{${[...counts].map(([p, n]) => `${(p as { name: string }).name}: ${n}`).join(", ")}}`;
}
