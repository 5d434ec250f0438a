import type { HostTimers } from "./host-timers.js";

/**
 * A timer that ticks at whole multiples of `interval` on the host's clock, armed only when
 * its owner has something for it to do: so a simulated run with nothing to do ends, and a
 * live host sets no timer it does not need. A tick disarms it; the owner arms it again.
 */
export class PeriodicTicks {
  /** Index of the next tick (it falls at index * interval), or -1 while disarmed. */
  private next = -1;
  private last = 0;
  private cancel: (() => void) | null = null;
  private stopped = false;

  constructor(
    private readonly timers: HostTimers,
    private readonly interval: number,
    private readonly onTick: (t: number) => void,
  ) {}

  get armed(): boolean {
    return this.next >= 0;
  }

  /** The next tick, if none is due: the first multiple of the interval after now (and after the last tick). */
  arm(): void {
    if (this.next >= 0 || this.stopped) return;
    const next = (this.next = Math.max(this.last + 1, Math.floor(this.timers.now() / this.interval) + 1));
    this.cancel = this.timers.at(next * this.interval, () => {
      this.cancel = null;
      if (this.stopped) return;
      this.last = next;
      this.next = -1;
      this.onTick(this.timers.now());
    });
  }

  /** Disarmed, for good. */
  stop(): void {
    this.stopped = true;
    this.next = -1;
    this.cancel?.();
    this.cancel = null;
  }
}
