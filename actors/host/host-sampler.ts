import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import type { HostMetrics } from "../../machines/protocol.js";

/**
 * Fine enough for the stalls worth explaining (a stall of S ms reads as S - 20 to S; the
 * scheduler's gate looks for 100 ms), cheap on the loop: each period is a wake-up of the
 * process, which on a machine whose cores run executor threads takes one off a core.
 */
const RESOLUTION_MS = 20;

/**
 * What a worker's process measures of itself for its heartbeat: memory now, and the event
 * loop's delay since the last sample (its p99 and max). A loop that stalls shows here as the
 * gap between a message sent and the worker's input for it (issue 23: a 156 ms gap between
 * an ASSIGN and the compute-task had no explanation in the log).
 *
 * One per process, shared by its workers (an embedded cluster's): they share the loop it
 * measures, and one timer serves them all. A sample taken less than `maxAgeMs` ago is
 * handed out again, so workers beating in the same round report the same window.
 */
export class HostSampler {
  private static shared: HostSampler | null = null;

  /** The process's sampler, started with its first user; `release` when done with it. */
  static acquire(): HostSampler {
    const sampler = (HostSampler.shared ??= new HostSampler());
    sampler.users += 1;
    return sampler;
  }

  private readonly delay: IntervalHistogram;
  private users = 0;
  private last: { at: number; metrics: HostMetrics } | null = null;

  private constructor() {
    this.delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.delay.enable();
  }

  /** The metrics since the previous sample (the delay histogram starts again), or that sample if younger than `maxAgeMs`. */
  sample(maxAgeMs = 0): HostMetrics {
    const now = performance.now();
    if (this.last !== null && now - this.last.at < maxAgeMs) return this.last.metrics;
    const { rss, heapUsed } = process.memoryUsage();
    // The histogram holds the periods of its own timer: the delay is what exceeds one.
    const ms = (ns: number) => (Number.isFinite(ns) && this.delay.count > 0 ? Math.max(0, Math.round((ns - RESOLUTION_MS * 1e6) / 1e4) / 100) : 0);
    const metrics = { rss, heapUsed, loopP99: ms(this.delay.percentile(99)), loopMax: ms(this.delay.max) };
    this.delay.reset();
    this.last = { at: now, metrics };
    return metrics;
  }

  release(): void {
    this.users -= 1;
    if (this.users > 0) return;
    this.delay.disable();
    if (HostSampler.shared === this) HostSampler.shared = null;
  }
}
