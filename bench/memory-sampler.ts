/**
 * Peak of the bytes held by all workers together (W8): per-worker stored bytes are read on
 * a timer (and wherever the workload calls `sample()`), summed, and the highest sum kept.
 * A sampled peak: a spike shorter than the interval between two samples can be missed, so
 * it is a lower bound of the true peak.
 */
export interface SamplerOptions {
  intervalMs: number;
  /** Over this many bytes, `onOverBudget` is called once (the workload stops the run). */
  budgetBytes?: number;
  onOverBudget?: (bytes: number) => void;
}

export class StoredBytesSampler {
  peak = 0;
  /** Milliseconds from start() to the sample that saw the peak. */
  peakAtMs = 0;
  /** The per-worker bytes at the peak. */
  peakPerWorker: number[] = [];
  samples = 0;
  last = 0;
  overBudget = false;
  private timer: ReturnType<typeof setInterval> | null = null;
  private inFlight = false;
  private t0 = performance.now();

  constructor(
    private readonly read: () => number[] | Promise<number[]>,
    private readonly options: SamplerOptions,
  ) {}

  start(): void {
    this.t0 = performance.now();
    this.timer = setInterval(() => void this.sample().catch(() => undefined), this.options.intervalMs);
  }

  /** Read every worker now and record the sum; a read still under way is not doubled. */
  async sample(): Promise<number> {
    // Only an asynchronous read is ever in flight (a synchronous one records at once).
    if (this.inFlight) return this.last;
    const now = this.read();
    if (Array.isArray(now)) return this.record(now);
    this.inFlight = true;
    try {
      return this.record(await now);
    } finally {
      this.inFlight = false;
    }
  }

  /** Record one reading of every worker's bytes; returns their sum. */
  record(perWorker: readonly number[]): number {
    let sum = 0;
    for (const b of perWorker) sum += b;
    this.samples++;
    this.last = sum;
    if (sum > this.peak) {
      this.peak = sum;
      this.peakAtMs = performance.now() - this.t0;
      this.peakPerWorker = [...perWorker];
    }
    const budget = this.options.budgetBytes;
    if (budget !== undefined && sum > budget && !this.overBudget) {
      this.overBudget = true;
      this.options.onOverBudget?.(sum);
    }
    return sum;
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
