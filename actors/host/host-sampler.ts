import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import type { HostMetrics } from "../../machines/protocol.js";

/** Fine enough for the stalls worth explaining, cheap on the loop. */
const RESOLUTION_MS = 10;

/**
 * What a worker's process measures of itself for its heartbeat: memory now, and the event
 * loop's delay since the last beat (its p99 and max). A loop that stalls shows here as the
 * gap between a message sent and the worker's input for it (issue 23: a 156 ms gap between
 * an ASSIGN and the compute-task had no explanation in the log).
 */
export class HostSampler {
  private readonly delay: IntervalHistogram;

  constructor() {
    this.delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.delay.enable();
  }

  /** The metrics since the last sample (the delay histogram starts again). */
  sample(): HostMetrics {
    const { rss, heapUsed } = process.memoryUsage();
    // The histogram holds the periods of its own 10 ms timer: the delay is what exceeds one.
    const ms = (ns: number) => (Number.isFinite(ns) && this.delay.count > 0 ? Math.max(0, Math.round((ns - RESOLUTION_MS * 1e6) / 1e4) / 100) : 0);
    const metrics = { rss, heapUsed, loopP99: ms(this.delay.percentile(99)), loopMax: ms(this.delay.max) };
    this.delay.reset();
    return metrics;
  }

  stop(): void {
    this.delay.disable();
  }
}
