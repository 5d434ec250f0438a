import type { HostMetrics } from "../../machines/protocol.js";

/** Seconds between two of a worker's host metrics in the scheduler's log, when they change little. */
export const METRICS_LOG_INTERVAL = 5;

/**
 * Which heartbeat metrics enter the scheduler's log: a worker's first, then one every
 * METRICS_LOG_INTERVAL seconds, sooner when they change a lot (memory by a quarter, the event
 * loop's max delay past 100 ms and double the last recorded). A heartbeat every 0.5 s from
 * each of many workers would otherwise be most of a quiet cluster's log.
 */
export class MetricsGate {
  private readonly last = new Map<string, { t: number; metrics: HostMetrics }>();

  /** Whether `metrics` heard from `worker` at `t` are recorded (and if so, they become the last recorded). */
  admit(worker: string, metrics: HostMetrics, t: number): boolean {
    const last = this.last.get(worker);
    if (last !== undefined && t - last.t < METRICS_LOG_INTERVAL && !changedALot(last.metrics, metrics)) return false;
    this.last.set(worker, { t, metrics });
    return true;
  }
}

function changedALot(before: HostMetrics, now: HostMetrics): boolean {
  const moved = (a: number, b: number) => Math.abs(b - a) > 0.25 * Math.max(a, 1);
  return moved(before.rss, now.rss) || moved(before.heapUsed, now.heapUsed) || (now.loopMax >= 100 && now.loopMax >= 2 * before.loopMax);
}
