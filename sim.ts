/**
 * natsched/sim: the deterministic simulator. The scheduler and worker machines of the
 * runtime, on a virtual clock with a modelled network; see docs/simulator.md.
 */
import "./log/runtime-check.js";
export { simulate } from "./sim/simulator.js";
export { simulateFile, readScenarioFile } from "./sim/file.js";
export { formatSimResult, type FormatOptions } from "./sim/format.js";
export {
  DEFAULT_LATENCY,
  DEFAULT_TASK_NBYTES,
  SIM_CLIENT,
  type NetworkSpec,
  type Scenario,
  type SimAction,
  type SimDataSpec,
  type SimFuture,
  type SimOptions,
  type SimView,
  type SimResult,
  type SimSteal,
  type SimStealOutcome,
  type SimTaskResult,
  type SimTaskSpec,
  type SimTransfer,
  type SimWorkerSpec,
} from "./sim/scenario.js";
export type { SimObserver } from "./sim/scenario.js";
export { DEFAULT_MAX_FAULT_DELAY, type NetworkFaultSpec } from "./sim/faults.js";
