/**
 * The time a host runs its own duties on (stealing passes, liveness checks): the real clock
 * for the live actors, the virtual one for the simulator. Seconds, as the Clock.
 */
import type { Clock } from "./clock.js";

export interface HostTimers {
  now(): number;
  /** Call `fn` once at time `t` (at once if it has passed); returns what cancels it. */
  at(t: number, fn: () => void): () => void;
}

/** Timers on a clock that follows the wall clock (setTimeout; they keep no process alive). */
export function realTimers(clock: Clock): HostTimers {
  return {
    now: () => clock.now(),
    at(t, fn) {
      const timer = setTimeout(fn, Math.max(0, (t - clock.now()) * 1000));
      timer.unref?.();
      return () => clearTimeout(timer);
    },
  };
}
