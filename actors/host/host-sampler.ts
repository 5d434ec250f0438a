import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import type { HostMetrics } from "../../machines/protocol.js";

/**
 * What a worker's process measures of itself for its heartbeat: memory now, and the event
 * loop's delay since the last beat (its p99 and max). A loop that stalls shows here as the
 * gap between a message sent and the worker's input for it (issue 23: a 156 ms gap between
 * an ASSIGN and the compute-task had no explanation in the log).
 */
export class HostSampler {
  private readonly delay: IntervalHistogram;

  constructor() {
    // 10 ms resolution: fine enough for the stalls worth explaining, cheap on the loop.
    this.delay = monitorEventLoopDelay({ resolution: 10 });
    this.delay.enable();
  }

  /** The metrics since the last sample (the delay histogram starts again). */
  sample(): HostMetrics {
    const { rss, heapUsed } = process.memoryUsage();
    const ms = (ns: number) => (Number.isFinite(ns) ? Math.round(ns / 1e4) / 100 : 0);
    const metrics = { rss, heapUsed, loopP99: ms(this.delay.percentile(99)), loopMax: ms(this.delay.max) };
    this.delay.reset();
    return metrics;
  }

  stop(): void {
    this.delay.disable();
  }
}
