/**
 * What the hosts add to a run besides the network: the time a message waits in its
 * receiver's host before the core takes it, a worker's time to start each function, and
 * the scheduler's time to take a graph. All 0 unless the scenario has a `hostCosts` field:
 * `natsched what-if` fills it in from what a recorded log shows (tools/host-costs-extract.ts),
 * so that a simulated original lands close to the recorded run.
 */
import { readNumber, readObject } from "./scenario-fields.js";

export interface HostCostSpec {
  /** Seconds a message to the scheduler waits in its host, on top of the network's latency; default 0. */
  schedulerDelay?: number;
  /** Seconds a message to a worker waits in its host, on top of the network's latency; default 0. */
  workerDelay?: number;
  /** Seconds a worker's thread is held per execution before the task's duration starts (its host starting the function); default 0. */
  taskStart?: number;
  /**
   * Seconds the scheduler's host is busy per task of a graph it takes: what it sends meanwhile
   * leaves, and what is sent to it is taken, only once the graph is in; default 0.
   */
  graphIntake?: number;
  /**
   * Seconds the scheduler's host takes per op of a worker's message: it sends what the
   * message made once it has taken every op, and takes the next message after; default 0.
   */
  schedulerOp?: number;
  /** Seconds the scheduler's first graph takes on top of graphIntake (a fresh process compiling its code); default 0. */
  warmUp?: number;
  /**
   * Seconds a victim's host holds its mail after it takes steal requests: its answers, and
   * whatever else it sends meanwhile, leave then, in order; default 0.
   */
  stealAnswer?: number;
}

export type HostCosts = Required<HostCostSpec>;

export const NO_HOST_COSTS: HostCosts = Object.freeze({ schedulerDelay: 0, workerDelay: 0, taskStart: 0, schedulerOp: 0, graphIntake: 0, warmUp: 0, stealAnswer: 0 });

const FIELDS = ["schedulerDelay", "workerDelay", "taskStart", "schedulerOp", "graphIntake", "warmUp", "stealAnswer"] as const;

/** Checks a scenario's `hostCosts` field; undefined means no host costs. */
export function readHostCosts(value: unknown, path = "hostCosts"): HostCosts {
  if (value === undefined) return NO_HOST_COSTS;
  const raw = readObject(value, path, FIELDS);
  const costs = { ...NO_HOST_COSTS };
  for (const name of FIELDS) if (raw[name] !== undefined) costs[name] = readNumber(raw[name], `${path}.${name}`, { min: 0 });
  return costs;
}
