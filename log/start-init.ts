/**
 * The `init` of an actor's start record: what replay needs to rebuild the core the actor
 * hosted. Each role has one writer, used by every host (the live actors and the simulator),
 * and one reader, used by replay and the tools, so what is written is what is read back.
 */
import { resolveConfig, type Config } from "../machines/config.js";
import type { WorkerInit } from "../machines/worker/inputs.js";

/** A scheduler's start: the cluster it served and its resolved config. */
export interface SchedulerStart {
  /** Absent in a log that does not say (a scheduler rebuilt from a snapshot's config alone). */
  cluster?: string;
  config: Config;
}

export function schedulerStartInit(cluster: string, config: Config): Record<string, unknown> {
  return { cluster, config: serializableConfig(config) };
}

/** Throws an Error saying what is wrong when the record cannot rebuild a scheduler. */
export function readSchedulerStart(init: Record<string, unknown>): SchedulerStart {
  const config = readRecordedConfig(init.config, "the scheduler's start record");
  return typeof init.cluster === "string" ? { cluster: init.cluster, config } : { config };
}

/** A config as a record holds it (serializableConfig), resolved and checked. */
export function readRecordedConfig(value: unknown, where: string): Config {
  if (typeof value !== "object" || value === null) throw new Error(`${where} has no config`);
  // Records hold the resolved config, every key; one without workerSaturation would be from
  // before "adaptive" became the default, when the default was Dask's 1.1.
  if (!("workerSaturation" in value)) return resolveConfig({ ...value, workerSaturation: 1.1 }, where);
  return resolveConfig(value, where);
}

/** JSON cannot carry Infinity: the log stores it as the string "Infinity" (resolveConfig reads it back). */
export function serializableConfig(config: Config): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) out[k] = typeof v === "number" && !Number.isFinite(v) ? String(v) : v;
  return out;
}

/** The fields in the order logs have always had them; optional ones only when set. */
export function workerStartInit(init: WorkerInit): Record<string, unknown> {
  const out: Record<string, unknown> = { name: init.name, id: init.id, nthreads: init.nthreads, transferIncomingCountLimit: init.transferIncomingCountLimit };
  if (init.bandwidth !== undefined) out.bandwidth = init.bandwidth;
  if (init.maxTombstones !== undefined) out.maxTombstones = init.maxTombstones;
  if (init.fetchByHolder === true) out.fetchByHolder = true;
  if (init.roundTrips === false) out.roundTrips = false;
  return out;
}

/** Throws an Error saying what is missing when the record cannot rebuild a worker. */
export function readWorkerStart(init: Record<string, unknown>): WorkerInit {
  const { name, id, nthreads, transferIncomingCountLimit, bandwidth, maxTombstones, fetchByHolder, roundTrips } = init;
  if (typeof name !== "string" || typeof id !== "string" || typeof nthreads !== "number" || typeof transferIncomingCountLimit !== "number") {
    throw new Error("a worker's start record needs name, id, nthreads and transferIncomingCountLimit");
  }
  const out: WorkerInit = { name, id, nthreads, transferIncomingCountLimit };
  if (typeof bandwidth === "number") out.bandwidth = bandwidth;
  if (typeof maxTombstones === "number") out.maxTombstones = maxTombstones;
  if (fetchByHolder === true) out.fetchByHolder = true;
  if (roundTrips === false) out.roundTrips = false;
  return out;
}
