/**
 * What every host of the scheduler core (SchedulerActor, the simulator's SimScheduler) does
 * the same way: how often it runs an on-demand stealing pass, and the config it writes in the
 * scheduler's start record.
 */
import type { Config } from "../../machines/config.js";

/** Seconds between two on-demand stealing passes. */
export const ON_DEMAND_GAP = 0.02;

/** JSON cannot carry Infinity: the log stores it as the string "Infinity". */
export function serializableConfig(config: Config): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) out[k] = typeof v === "number" && !Number.isFinite(v) ? String(v) : v;
  return out;
}
