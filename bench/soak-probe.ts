/** What the SOAK processes on NATS (bench/soak-node.ts) and the benchmark (bench/soak-nats.ts) agree on. */
import type { ActorCounts } from "./soak-tables.js";

/** The line a soak process prints once it serves. */
export const SOAK_NODE_READY = "@@soak-node ready";

export interface SoakNodeOptions {
  role: "scheduler" | "worker";
  url: string;
  cluster: string;
  /** The worker's name. */
  name?: string;
  nthreads?: number;
  /** This process's event log file, or false. */
  log: string | false;
}

/** Where a soak process answers with its counts: `{}`, or `{ "gc": true }` for its heap after a full GC too. */
export function probeSubject(cluster: string, name: string): string {
  return `natsched-bench.${cluster}.soak.${name}`;
}

export interface ProbeAnswer {
  counts: ActorCounts;
  heapMB?: number;
}
