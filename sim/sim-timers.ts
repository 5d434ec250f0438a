import type { HostTimers } from "../actors/host/host-timers.js";
import type { SimKernel } from "./kernel.js";

/** The host kit's timers on the simulator's virtual clock (a cancelled one still fires, doing nothing). */
export function simTimers(kernel: SimKernel): HostTimers {
  return {
    now: () => kernel.now,
    at: (t, fn) => {
      let due = true;
      kernel.at(t, () => {
        if (due) fn();
      });
      return () => {
        due = false;
      };
    },
  };
}
