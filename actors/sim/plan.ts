/**
 * A validated scenario with every default filled in, and the timeline of what happens
 * when: workers joining, data placed, graphs submitted, workers killed.
 */
import type { Config } from "../../machines/config.js";
import type { NetworkFaultPlan } from "./faults.js";

export interface PlannedWorker {
  name: string;
  nthreads: number;
  host: string;
  resources: Record<string, number>;
}

export interface PlannedTask {
  key: string;
  deps: string[];
  duration: number;
  nbytes: number;
  priority: number | undefined;
  workers: string[] | undefined;
  hosts: string[] | undefined;
  resources: Record<string, number> | undefined;
  allowOtherWorkers: boolean | undefined;
  submitAt: number;
  error: string | undefined;
}

export interface PlannedData {
  key: string;
  nbytes: number;
  on: string[];
}

export interface PlannedSubmission {
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
  | { at: number; kind: "restart-scheduler" };

export interface Plan {
  seed: number;
  config: Config;
  latency: number;
  bandwidth: number;
  tasks: ReadonlyMap<string, PlannedTask>;
  timeline: PlannedEvent[];
  /** Network faults on mail between actors, or null (none). */
  faults: NetworkFaultPlan | null;
}
