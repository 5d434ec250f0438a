/**
 * A validated scenario with every default filled in, and the timeline of what happens
 * when: workers joining, data placed, graphs submitted, workers killed.
 */
import type { Config } from "../machines/config.js";
import type { NetworkFaultPlan } from "./faults.js";
import type { HostCosts } from "./host-costs.js";

export interface PlannedWorker {
  name: string;
  nthreads: number;
  host: string;
  resources: Record<string, number>;
  /** Seconds each message to it waits in its host on top of the network's latency and hostCosts.workerDelay. */
  delay: number;
  /** SimWorkerSpec.roundTrips: false when it measures none. */
  roundTrips: boolean;
  /** SimWorkerSpec.reportHold (0: it holds none). */
  reportHold: number;
}

export interface PlannedTask {
  key: string;
  deps: string[];
  duration: number;
  /** Seconds of the first runs in turn (SimTaskSpec.runs); later runs take `duration`. */
  runs: number[] | undefined;
  nbytes: number;
  priority: number | undefined;
  workers: string[] | undefined;
  hosts: string[] | undefined;
  resources: Record<string, number> | undefined;
  allowOtherWorkers: boolean | undefined;
  submitAt: number;
  /** The client whose graph it is part of. */
  client: string;
  error: string | undefined;
  /** With `error`: runs that fail before one succeeds; undefined: every run fails. */
  failures: number | undefined;
  retries: number | undefined;
  /** The client holds a future for it even if its graph builds on it (the scenario's `wanted`). */
  wanted: boolean | undefined;
}

export interface PlannedData {
  key: string;
  nbytes: number;
  on: string[];
}

export interface PlannedSubmission {
  /** The client that submits it. */
  client: string;
  /**
   * The specs sent: the graph's tasks, after those of every earlier task they depend on
   * (transitively), so that a dependency released and forgotten since is computed again.
   */
  tasks: PlannedTask[];
  /** Keys the client holds futures for: the graph's outputs and what later graphs build on. */
  wants: string[];
}

/** Timeline entries, in scheduling order (ties in time run in this order). */
export type PlannedEvent =
  | { at: number; kind: "join"; worker: PlannedWorker }
  | { at: number; kind: "place-data"; data: PlannedData[] }
  | { at: number; kind: "submit"; submission: PlannedSubmission }
  | { at: number; kind: "kill"; worker: string }
  | { at: number; kind: "balance" }
  | { at: number; kind: "restart-scheduler" }
  | { at: number; kind: "release"; client: string; keys: string[] }
  | { at: number; kind: "cancel"; client: string; keys: string[] }
  | { at: number; kind: "fire-and-forget"; client: string; keys: string[] }
  | { at: number; kind: "client-leave"; client: string }
  | { at: number; kind: "retire"; worker: string; timeout: number }
  | { at: number; kind: "lose"; worker: string; back: number }
  | { at: number; kind: "scatter"; client: string; data: { key: string; nbytes: number }[]; on: string[] }
  | { at: number; kind: "stop-scheduler" }
  | { at: number; kind: "start-scheduler" };

export interface Plan {
  seed: number;
  config: Config;
  latency: number;
  bandwidth: number;
  /** What the hosts add besides the network (all 0 by default). */
  hostCosts: HostCosts;
  tasks: ReadonlyMap<string, PlannedTask>;
  timeline: PlannedEvent[];
  /** Network faults on mail between actors, or null (none). */
  faults: NetworkFaultPlan | null;
}
