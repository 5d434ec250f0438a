/**
 * The live dashboard's thread yields the cores to the cluster it watches: it lowers its own
 * CPU priority, so that on a busy machine the cluster's threads run first and the dashboard
 * falls behind, catching up when the cluster leaves it time (bench/dashboard-w1.ts measures
 * how far behind). On Linux a nice value is a thread's own (setpriority on the thread's id);
 * elsewhere it would be the whole process's, so nothing changes there.
 */
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";

/** A nice value: 10 leaves the dashboard about a tenth of a core the cluster wants (Linux's weights 110 : 1024). */
export const DASHBOARD_NICE = 10;

/** Lowers the calling thread's priority to `nice` (Linux only); false where it could not. */
export function lowerThreadPriority(nice: number): boolean {
  if (process.platform !== "linux") return false;
  try {
    // /proc/thread-self -> "<pid>/task/<tid>"
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
}
