import type { Config } from "../config.js";
import type { PrefixRec } from "./state.js";

/**
 * The scheduler's estimates, as Dask's SchedulerState keeps them: a duration per task
 * prefix and a transfer bandwidth, both learned as the run goes. Occupancy is derived from
 * them on demand (Dask's `_calc_occupancy`): per prefix, the tasks processing times the
 * prefix's current estimate, plus the bytes still to fetch over the bandwidth. So when an
 * estimate changes, every worker's occupancy follows at once, with nothing to re-book.
 */
export class Estimates {
  /** Bytes per second between workers: config.bandwidth, then what workers measure (learnBandwidth). */
  bandwidth: number;

  constructor(readonly config: Config) {
    this.bandwidth = config.bandwidth;
  }

  /** A new prefix starts from its configured duration, or unknown (-1). Dask's TaskPrefix(). */
  initialAverage(prefixName: string): number {
    return this.config.defaultTaskDurations[prefixName] ?? -1;
  }

  /**
   * Dask's `_get_prefix_duration`: the measured (or configured) average; for a prefix with
   * none, twice the longest execution seen so far, or the unknown-task duration.
   */
  prefixDuration(prefix: PrefixRec): number {
    const average = prefix.durationAverage;
    if (average >= 0) return average;
    return prefix.maxExecTime > 0 ? 2 * prefix.maxExecTime : this.config.unknownTaskDuration;
  }

  /** Dask's `TaskPrefix.add_duration` (compute): a finished task's duration. True if it was the prefix's first. */
  learnDuration(prefix: PrefixRec, seconds: number): boolean {
    const first = prefix.durationAverage < 0;
    prefix.durationAverage = first ? seconds : 0.5 * seconds + 0.5 * prefix.durationAverage;
    prefix.samples = first ? 1 : prefix.samples + 1;
    return first;
  }

  /**
   * Dask's `TaskPrefix.add_exec_time`: a task reported still executing after `seconds`.
   * An execution over twice the average makes the average unknown again, so the prefix is
   * estimated from its longest execution until the next one finishes.
   */
  learnExecTime(prefix: PrefixRec, seconds: number): void {
    if (seconds > prefix.maxExecTime) prefix.maxExecTime = seconds;
    if (seconds > 2 * prefix.durationAverage) {
      prefix.durationAverage = -1;
      prefix.samples = 0;
    }
  }

  /** Dask's heartbeat_worker: each worker's report moves the estimate by 1 / (number of workers). */
  learnBandwidth(reported: number, workers: number): void {
    const frac = 1 / Math.max(workers, 1);
    this.bandwidth = this.bandwidth * (1 - frac) + reported * frac;
  }

  /** Dask's `_calc_occupancy`: seconds of work for these prefix counts and bytes to fetch. */
  occupancy(prefixCount: ReadonlyMap<PrefixRec, number>, networkBytes: number): number {
    let seconds = 0;
    for (const [prefix, count] of prefixCount) seconds += count * this.prefixDuration(prefix);
    const occupancy = seconds + networkBytes / this.bandwidth;
    return occupancy > 0 ? occupancy : 0;
  }
}

/** Adds `delta` to a count map, dropping entries that reach zero. */
export function addCount<K>(counts: Map<K, number>, key: K, delta: number): void {
  const n = (counts.get(key) ?? 0) + delta;
  if (n === 0) counts.delete(key);
  else counts.set(key, n);
}
