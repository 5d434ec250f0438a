import type { HostTimers } from "../../actors/host/host-timers.js";

/** Timers on a clock that moves only when told to. */
export class FakeTimers implements HostTimers {
  private time = 0;
  private readonly due: { t: number; seq: number; fn: () => void }[] = [];
  private seq = 0;

  now(): number {
    return this.time;
  }

  at(t: number, fn: () => void): () => void {
    const entry = { t: Math.max(t, this.time), seq: this.seq++, fn };
    this.due.push(entry);
    return () => {
      const i = this.due.indexOf(entry);
      if (i >= 0) this.due.splice(i, 1);
    };
  }

  /** The times of the timers set and not yet run or cancelled, earliest first. */
  get pending(): number[] {
    return this.due.map((entry) => entry.t).sort((a, b) => a - b);
  }

  /** Runs everything due until `t`, in time order, and leaves the clock at `t`. */
  runUntil(t: number): void {
    for (;;) {
      this.due.sort((a, b) => a.t - b.t || a.seq - b.seq);
      const next = this.due[0];
      if (next === undefined || next.t > t) break;
      this.due.shift();
      this.time = next.t;
      next.fn();
    }
    this.time = t;
  }
}
