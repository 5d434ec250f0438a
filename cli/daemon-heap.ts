import { setFlagsFromString } from "node:v8";

/**
 * V8 tuning for the long-running daemons (`natsched scheduler`, `natsched worker`), which own
 * their process; a library never changes its host's flags, so the embedded cluster does not.
 *
 * V8's memory reducer watches each isolate for a drop in allocation and then runs up to three
 * full mark-compacts to shrink it. An executor thread running pure CPU, or the log's
 * formatting thread between bursts, looks idle to it: the daemons paid those collections
 * (their concurrent marking on V8's helper threads, the final pause on the thread itself)
 * in the middle of busy runs, about a quarter of their CPU beside the executors on W7
 * (docs/executors.md, "W7"). Their heaps are small and are collected by the ordinary
 * young- and old-generation collectors all the same. Must run before any thread starts:
 * an isolate reads the flag when it is created.
 */
export function tuneDaemonHeap(): void {
  setFlagsFromString("--no-memory-reducer");
}
