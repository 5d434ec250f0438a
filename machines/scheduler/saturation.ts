import type { Config } from "../config.js";
import type { GroupRec, WorkerRec } from "./state.js";

/**
 * Adaptive worker saturation (config workerSaturation "adaptive"; no Dask equivalent).
 *
 * Dask sends a worker ceil(1.1 x nthreads) root tasks. When a task takes less than the round
 * trip (the worker's report reaching the scheduler, the next task coming back), the thread
 * idles for the difference after every task. So a worker also holds
 * ceil(nthreads x roundTrip / duration) tasks, the ones it runs while its report is on the
 * way, measured per worker (its round trip) and per root-ish group (the duration of its
 * prefix, the output size of its tasks). Bounded by adaptiveSaturationCap tasks per thread
 * and by adaptiveSaturationMemory bytes of outputs; never below Dask's count. Anything
 * unmeasured: Dask's count.
 *
 * A worker on a wire that holds the reports of short tasks nobody else waits on (config
 * reportHold) sends them when it starts its last queued task, or when the oldest has waited
 * the hold. Each report it holds is a task the scheduler does not send yet, so such a worker
 * also holds the tasks its threads run during a hold, ceil(nthreads x hold / duration), for
 * tasks shorter than the hold and without dependents (whose reports are never held): its
 * queue then lasts the hold, and each message carries what its threads finished in it.
 *
 * For tasks far shorter than a worker's own cost per task (no-ops) the rule asks for
 * thousands and the cap decides. A worker running them on its event loop reports all it
 * holds in one message once it has run them all, so it waits out every round trip empty:
 * the cap is the batch each round trip carries, and sets how far the round trip and the
 * per-message costs are spread (docs/scheduling.md, "Adaptive saturation").
 */

/** Dask's worker-saturation default, the floor of the adaptive rule. */
export const DASK_SATURATION = 1.1;

/**
 * Why a worker got the queue slots it got (the `saturation` of a rootish-queuing reason):
 * `slots`, tasks it may process; `limit`, what decided it ("dask": something unmeasured,
 * given as -1; "round-trip", "cap", "memory": the bound that held); `rtt` (its smoothed
 * round trip, s), `duration` (the group's prefix, s), `nbytes` (the group's mean output).
 * A worker that measures no round trips (WorkerRec.noRoundTrips) gets `{ slots, limit:
 * "dask" }` alone: nothing measured could change its count.
 */
export interface SaturationWhy {
  slots: number;
  limit: "dask" | "round-trip" | "cap" | "memory";
  rtt?: number;
  duration?: number;
  nbytes?: number;
  /** The worker's report hold (s), present when it added the tasks its hold lasts (the task has no dependents, its group's tasks are shorter). */
  hold?: number;
}

const micro = (seconds: number): number => Math.round(seconds * 1e6) / 1e6;

/** Dask's count for a fixed saturation: max(ceil(saturation x nthreads), 1). */
export function fixedSlots(ws: WorkerRec, saturation: number): number {
  return Math.max(Math.ceil(saturation * ws.nthreads), 1);
}

/** The group's mean measured output size in bytes; -1 before any of its tasks finished. */
export function groupOutputSize(group: GroupRec): number {
  return group.outputCount > 0 ? group.outputBytes / group.outputCount : -1;
}

/**
 * Adaptive saturation: how many tasks `ws` may process while `group`'s root tasks are placed;
 * `leaf`: the task placed has no dependents (a holding worker may hold its report). A number
 * and nothing allocated: it is asked for every running worker at every placement and whenever
 * queue slots may have opened; adaptiveSlots gives the same count with its reasons.
 */
export function adaptiveSlotCount(config: Config, ws: WorkerRec, group: GroupRec, leaf: boolean): number {
  const base = fixedSlots(ws, DASK_SATURATION);
  const rtt = ws.roundTrip;
  // A configured duration counts as measured (Infinity samples); one reset by a long execution does not.
  const duration = group.prefix.durationAverage;
  const nbytes = groupOutputSize(group);
  if (rtt < 0 || duration < 0 || nbytes < 0) return base;
  return Math.max(Math.min(wantedSlots(ws, base, rtt, duration, leaf), capSlots(config, ws), memorySlots(config, nbytes)), base);
}

/**
 * The rule: Dask's count plus the tasks that cover a round trip at the group's duration (a zero
 * round trip wants nothing more, 0 / 0 included; a zero duration, infinitely many: the cap
 * holds), plus those that cover the hold of a worker that holds the reports of such tasks.
 */
function wantedSlots(ws: WorkerRec, base: number, rtt: number, duration: number, leaf: boolean): number {
  return base + (rtt === 0 ? 0 : Math.ceil((ws.nthreads * rtt) / duration)) + (holdsReports(ws, duration, leaf) ? Math.ceil((ws.nthreads * ws.reportHold) / duration) : 0);
}

/** The worker holds the reports of such tasks: no task waits on them, and they run for less than its hold. */
function holdsReports(ws: WorkerRec, duration: number, leaf: boolean): boolean {
  return leaf && ws.reportHold > 0 && duration < ws.reportHold;
}

function capSlots(config: Config, ws: WorkerRec): number {
  return Math.floor(config.adaptiveSaturationCap * ws.nthreads);
}

/** As many tasks as the memory budget holds of the group's mean output. */
function memorySlots(config: Config, nbytes: number): number {
  return nbytes > 0 ? Math.floor(config.adaptiveSaturationMemory / nbytes) : Infinity;
}

/** Adaptive saturation: the tasks `ws` may process while `group`'s root tasks are placed, and why (`leaf` as adaptiveSlotCount's). */
export function adaptiveSlots(config: Config, ws: WorkerRec, group: GroupRec, leaf: boolean): SaturationWhy {
  const base = fixedSlots(ws, DASK_SATURATION);
  if (ws.noRoundTrips) return { slots: base, limit: "dask" };
  const rtt = ws.roundTrip;
  const duration = group.prefix.durationAverage;
  const nbytes = groupOutputSize(group);
  const measured = { rtt: micro(rtt), duration: micro(duration), nbytes: Math.round(nbytes) };
  if (rtt < 0 || duration < 0 || nbytes < 0) return { slots: base, limit: "dask", ...measured };
  const why = holdsReports(ws, duration, leaf) ? { ...measured, hold: micro(ws.reportHold) } : measured;
  const cap = capSlots(config, ws);
  const byMemory = memorySlots(config, nbytes);
  let slots = wantedSlots(ws, base, rtt, duration, leaf);
  let limit: SaturationWhy["limit"] = "round-trip";
  if (cap < slots) {
    slots = cap;
    limit = "cap";
  }
  if (byMemory < slots) {
    slots = byMemory;
    limit = "memory";
  }
  return { slots: Math.max(slots, base), limit, ...why };
}

/**
 * A worker's smoothed round trip after a new sample (seconds): the first sample as it is,
 * then a quarter of each new one (RFC 6298's smoothing of TCP round trips weighs 1/8; a
 * worker reports far fewer samples than a TCP connection sees, so it follows faster).
 */
export function smoothRoundTrip(previous: number, sample: number): number {
  return previous < 0 ? sample : 0.75 * previous + 0.25 * sample;
}
