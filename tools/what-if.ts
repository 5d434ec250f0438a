/**
 * "What if": a recorded run's workload re-run on the simulator, once under the recorded
 * config (how close the simulator comes to what happened) and once under a changed one.
 */
import type { Config } from "../machines/config.js";
import { readHostCosts, type HostCostSpec } from "../sim/host-costs.js";
import type { Scenario, SimResult } from "../sim/scenario.js";
import { simulate } from "../sim/simulator.js";
import { openLog } from "../log/reader.js";
import type { LogProblem, LogRecord } from "../log/types.js";
import { measureLog, type RunMetrics } from "./what-if-metrics.js";
import { WorkloadExtractor, type ExtractedWorkload } from "./workload-extract.js";

export interface SimulatedRun extends RunMetrics {
  /** Tasks that did not end in memory, released, forgotten or erred (stuck waiting). */
  unfinished: number;
}

export interface WhatIfResult {
  workload: ExtractedWorkload;
  /** The config settings changed for the what-if run (as given), or {} for none. */
  changes: Partial<Config>;
  recorded: RunMetrics;
  /** The workload simulated under the recorded config. */
  original: SimulatedRun;
  /** The workload simulated under the recorded config with `changes` over it (null without changes). */
  changed: SimulatedRun | null;
  /** Simulated original makespan / recorded makespan (1 is a perfect match; NaN if the recorded run is 0). */
  ratio: number;
}

export interface WhatIfOptions {
  /** Config settings to change (already validated, e.g. by parseConfigOverrides). */
  changes?: Partial<Config>;
  /**
   * Host costs to use instead of the measured ones, in both simulations (e.g. all 0: the
   * simulator's plain model). Checked as the scenario's `hostCosts` is.
   */
  hostCosts?: HostCostSpec;
}

/** What-if over records in memory. */
export function whatIf(records: Iterable<LogRecord>, options: WhatIfOptions = {}): WhatIfResult {
  const extractor = new WorkloadExtractor();
  for (const record of records) extractor.add(record);
  return compare(withHostCosts(extractor.finish(), options.hostCosts), options.changes ?? {});
}

/** What-if over a log file, streamed; `problems` are the log's (a damaged log still extracts what it can). */
export async function whatIfLog(path: string, options: WhatIfOptions = {}): Promise<WhatIfResult & { problems: LogProblem[] }> {
  const reader = await openLog(path);
  const extractor = new WorkloadExtractor();
  for await (const record of reader.records()) extractor.add(record);
  const result = compare(withHostCosts(extractor.finish(), options.hostCosts), options.changes ?? {});
  return { ...result, problems: [...reader.problems] };
}

/** The scenario with config settings changed over the recorded ones. */
export function withChanges(scenario: Scenario, changes: Partial<Config>): Scenario {
  const recorded = (scenario.config ?? {}) as Partial<Config>;
  const config: Partial<Config> = { ...recorded, ...changes };
  if (changes.defaultTaskDurations !== undefined) {
    config.defaultTaskDurations = { ...(recorded.defaultTaskDurations ?? {}), ...changes.defaultTaskDurations };
  }
  return { ...scenario, config };
}

/** The workload with host costs given over the measured ones (the scenario then runs with them). */
export function withHostCosts(workload: ExtractedWorkload, given: HostCostSpec | undefined): ExtractedWorkload {
  if (given === undefined) return workload;
  readHostCosts(given, "hostCosts");
  return { ...workload, scenario: { ...workload.scenario, hostCosts: { ...workload.scenario.hostCosts, ...given } } };
}

function compare(workload: ExtractedWorkload, changes: Partial<Config>): WhatIfResult {
  const names = workload.scenario.workers.map((w) => w.name);
  const original = measureSimulation(simulate(workload.scenario), names);
  const changed = Object.keys(changes).length > 0 ? measureSimulation(simulate(withChanges(workload.scenario, changes)), names) : null;
  const recorded = workload.recorded;
  return { workload, changes, recorded, original, changed, ratio: recorded.makespan > 0 ? original.makespan / recorded.makespan : NaN };
}

const FINISHED = new Set(["memory", "released", "forgotten", "erred"]);

function measureSimulation(result: SimResult, workerNames: string[]): SimulatedRun {
  const fromLog = measureLog(result.log, 0, workerNames);
  return {
    makespan: result.makespan,
    bytesTransferred: result.transfers.reduce((n, t) => n + t.nbytes, 0),
    transfers: result.transfers.length,
    stealsRequested: result.steals.length,
    stealsConfirmed: result.steals.filter((s) => s.outcome === "confirmed").length,
    workers: fromLog.workers,
    unfinished: Object.values(result.tasks).filter((t) => !FINISHED.has(t.state)).length,
  };
}
