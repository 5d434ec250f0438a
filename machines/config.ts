/**
 * The one typed configuration object, its defaults (Dask distributed's, from
 * distributed.yaml unless noted) and its validation. Times are in seconds, sizes in
 * bytes. Pure: loading from files and the environment is actors/config-loader.ts.
 */
import { closestMatch } from "./did-you-mean.js";
import { ConfigError } from "./errors.js";
import {
  ValueProblem,
  formatValue,
  isPlainObject,
  readBoolean,
  readDuration,
  readDurationMap,
  readInteger,
  readNumberAtLeast,
  readPositiveOrInfinite,
  readSaturation,
  readSize,
} from "./config-values.js";

export interface Config {
  /** Move queued tasks from busy to idle workers. Dask `distributed.scheduler.work-stealing` (true). */
  workStealing: boolean;
  /** Seconds between stealing rounds. Dask `distributed.scheduler.work-stealing-interval` ("1s" since 2025, "100ms" before). */
  workStealingInterval: number;
  /**
   * Root tasks are sent to a worker only while it runs fewer than ceil(nthreads *
   * workerSaturation); the rest queue on the scheduler. Infinity disables queuing.
   * "adaptive": Dask's 1.1, plus enough tasks to cover the worker's measured round trip over
   * the root-ish group's measured duration, within adaptiveSaturationCap and
   * adaptiveSaturationMemory (machines/scheduler/saturation.ts; no Dask equivalent), the
   * default. Dask `distributed.scheduler.worker-saturation` (1.1): set 1.1 to match Dask.
   */
  workerSaturation: number | "adaptive";
  /**
   * Adaptive saturation: root tasks per worker thread, at most (queued on the worker and
   * running). It binds only for tasks shorter than a round trip over it (6 us under a 1.5 ms
   * NATS round trip), where a worker's own cost per task, not the task, sets the pace, and a
   * worker running them on its event loop finishes all it holds before its reports leave: each
   * round trip then moves at most this many tasks a thread (W1 on NATS: 16 gave half of the
   * queuing-off rate; 256 about all of it; docs/scheduling.md). A wrong estimate strands at
   * most this many tasks per thread on one worker until stealing moves them.
   */
  adaptiveSaturationCap: number;
  /**
   * Adaptive saturation: bytes of root-task outputs a worker may have in flight (tasks sent to
   * it times the group's measured output size), though never fewer tasks than Dask's share.
   * 1 MiB: W8 measured each extra queued root costing about three times its output in peak
   * memory (its result waits for its partner), so large outputs get Dask's count and the
   * small outputs of fast tasks (under 4 KiB a task) the whole cap.
   */
  adaptiveSaturationMemory: number;
  /** Seconds assumed for a task whose prefix has no measured duration yet. Dask `unknown-task-duration` ("500ms"). */
  unknownTaskDuration: number;
  /**
   * Seconds assumed per task prefix before any is measured; a user's map is merged over
   * the defaults. Dask `distributed.scheduler.default-task-durations`.
   */
  defaultTaskDurations: Record<string, number>;
  /** Estimated worker-to-worker bandwidth in bytes/s. Dask `distributed.scheduler.bandwidth` (100e6). */
  bandwidth: number;
  /** Bytes assumed for a result whose size is not known yet. Dask `distributed.scheduler.default-data-size` ("1kiB"). */
  defaultDataSize: number;
  /** Times a task may take its worker down before it is marked failed. Dask `distributed.scheduler.allowed-failures` (3). */
  allowedFailures: number;
  /** Fixed seconds added to every transfer estimate when deciding to steal. Dask `LATENCY` in distributed/stealing.py (0.1). */
  latency: number;
  /** Dependencies a worker fetches at once. Dask's counterpart is `distributed.worker.connections.outgoing` (50). */
  transferIncomingCountLimit: number;
  /** Seconds between worker heartbeats. Dask's Scheduler.heartbeat_interval gives 0.5 for up to 10 workers. */
  heartbeatInterval: number;
  /** Seconds without a heartbeat after which a worker is removed; Infinity never. Dask `distributed.scheduler.worker-ttl` ("5 minutes"). */
  workerTtl: number;
  /** Seconds a disconnected client's keys are kept before release, in case it reconnects. No Dask equivalent. */
  clientReleaseGrace: number;
  /**
   * A root-ish task whose inputs cost more to copy than the work a copy would let another
   * worker take stays with its inputs (machines/scheduler/placement.ts, inputsKeptLocal).
   * No Dask equivalent: Dask behaves as `false`, spreading root-ish tasks whatever their inputs weigh.
   */
  rootishInputLocality: boolean;
  /**
   * Stealing a task whose inputs cost 2^k times its compute to move (k >= 1) waits until its
   * prefix's duration rests on k measured durations, and no input costlier than the compute
   * moves on the unknown-task guess (machines/scheduler/stealing.ts, enoughEvidence).
   * No Dask equivalent: Dask behaves as `false`, stealing on the level alone.
   */
  costlyStealEvidence: boolean;
  /**
   * Seconds a worker keeps data a client scattered to it before asking the scheduler whether
   * it was registered (who-has): data the scheduler does not list there is released (a
   * client that died between its put-data and its update-data, data put by someone who never
   * registered it). Twice the client's default request timeout (30 s), so a client's scatter
   * has settled by then. Infinity: never checked. No Dask equivalent (Dask's scatter goes
   * through the scheduler).
   */
  scatterLease: number;
  /**
   * Bytes of JavaScript heap each executor thread may use (worker_threads' resourceLimits
   * maxOldGenerationSizeMb, rounded down to whole MiB, at least 1). A task past it ends only its
   * thread: the pool replaces it, and the scheduler counts the loss like a worker death for
   * that task (allowedFailures, then KilledWorker). 1 GiB: one thread's share of the 1-4 GiB
   * per core of common machines, below Node's own heap limit so one runaway task cannot take
   * the worker process down. No Dask equivalent (Dask's memory limit is per worker process).
   */
  executorThreadMemory: number;
  /**
   * Read by workers on a wire (NATS): seconds a worker that still has tasks queued for its
   * threads may hold the report of a finished task no other task waits on (the scheduler marks
   * the others `prompt`), to send it with the next ones. It sends what it holds when it starts
   * its last queued task, when it sends anything else to the scheduler, or when the oldest has
   * waited this long. Every report then costs the scheduler, the server and the client a message
   * fewer for each one it rides with (about half in W7: docs/executors.md). 0: every report goes
   * at once. No Dask equivalent (Dask's worker batches what it sends every 2 ms).
   */
  reportHold: number;
}

export type ConfigKey = keyof Config;

export const DEFAULT_CONFIG: Readonly<Config> = Object.freeze({
  workStealing: true,
  workStealingInterval: 1,
  workerSaturation: "adaptive",
  adaptiveSaturationCap: 256,
  adaptiveSaturationMemory: 1024 * 1024,
  unknownTaskDuration: 0.5,
  defaultTaskDurations: Object.freeze({
    "rechunk-split": 1e-6,
    "split-shuffle": 1e-6,
    "split-taskshuffle": 1e-6,
    "split-stage": 1e-6,
  }) as Record<string, number>,
  bandwidth: 100e6,
  defaultDataSize: 1024,
  allowedFailures: 3,
  latency: 0.1,
  transferIncomingCountLimit: 50,
  heartbeatInterval: 0.5,
  workerTtl: 300,
  clientReleaseGrace: 10,
  rootishInputLocality: true,
  costlyStealEvidence: true,
  scatterLease: 60,
  executorThreadMemory: 1024 * 1024 * 1024,
  reportHold: 0.05,
});

const READERS: { readonly [K in ConfigKey]: (value: unknown) => Config[K] } = {
  workStealing: readBoolean,
  workStealingInterval: (value) => readDuration(value, { positive: true }),
  workerSaturation: readSaturation,
  adaptiveSaturationCap: (value) => readNumberAtLeast(value, 1),
  adaptiveSaturationMemory: (value) => readSize(value, { integer: true }),
  unknownTaskDuration: (value) => readDuration(value),
  defaultTaskDurations: readDurationMap,
  bandwidth: (value) => readSize(value, { positive: true, perSecond: true }),
  defaultDataSize: (value) => readSize(value, { integer: true }),
  allowedFailures: (value) => readInteger(value, 0),
  latency: (value) => readDuration(value),
  transferIncomingCountLimit: (value) => readInteger(value, 1),
  heartbeatInterval: (value) => readDuration(value, { positive: true }),
  workerTtl: (value) => readDuration(value, { positive: true, allowInfinity: true }),
  clientReleaseGrace: (value) => readDuration(value),
  rootishInputLocality: readBoolean,
  costlyStealEvidence: readBoolean,
  scatterLease: (value) => readDuration(value, { positive: true, allowInfinity: true }),
  executorThreadMemory: (value) => readSize(value, { positive: true, integer: true }),
  reportHold: (value) => readDuration(value),
};

export const CONFIG_KEYS: readonly ConfigKey[] = Object.freeze(Object.keys(READERS) as ConfigKey[]);

export function isConfigKey(name: string): name is ConfigKey {
  return Object.hasOwn(READERS, name);
}

/** One layer of settings and where it came from (a file path, an environment variable, "overrides"). */
export interface ConfigLayer {
  readonly settings: unknown;
  readonly source?: string | undefined;
}

function fromSource(source: string | undefined): string {
  return source === undefined ? "" : ` (from ${source})`;
}

function unknownKeyError(key: string, source: string | undefined): ConfigError {
  const suggestion = closestMatch(key, CONFIG_KEYS);
  const hint = suggestion ? `; did you mean "${suggestion}"?` : ` (known settings: ${CONFIG_KEYS.join(", ")})`;
  return new ConfigError(key, `unknown setting${hint}${fromSource(source)}`);
}

function readLayer({ settings, source }: ConfigLayer): Partial<Config> {
  if (settings === undefined || settings === null) return {};
  if (!isPlainObject(settings)) {
    throw new ConfigError(source ?? "settings", `expected an object of settings, got ${formatValue(settings)}`);
  }
  const values: Partial<Record<ConfigKey, unknown>> = {};
  for (const [key, raw] of Object.entries(settings)) {
    if (!isConfigKey(key)) throw unknownKeyError(key, source);
    if (raw === undefined) continue; // `{ workStealing: undefined }` means "not set", as with spread options
    try {
      values[key] = READERS[key](raw);
    } catch (error) {
      if (error instanceof ValueProblem) throw new ConfigError(key, `${error.message}${fromSource(source)}`);
      throw error;
    }
  }
  return values as Partial<Config>;
}

/**
 * Defaults, then each layer in order (later wins); each layer is validated and errors
 * name the key and the layer's source. defaultTaskDurations maps merge rather than replace.
 * The result is frozen.
 */
export function resolveConfigLayers(layers: readonly ConfigLayer[]): Config {
  const merged: Config = { ...DEFAULT_CONFIG };
  const setBy = new Map<ConfigKey, string | undefined>();
  for (const layer of layers) {
    const values = readLayer(layer);
    for (const key of Object.keys(values) as ConfigKey[]) setBy.set(key, layer.source);
    const { defaultTaskDurations, ...rest } = values;
    Object.assign(merged, rest);
    if (defaultTaskDurations) merged.defaultTaskDurations = { ...merged.defaultTaskDurations, ...defaultTaskDurations };
  }
  // Checked once at the end, so one layer may raise heartbeatInterval and a later one workerTtl.
  if (merged.workerTtl <= merged.heartbeatInterval) {
    const source = setBy.has("workerTtl") ? setBy.get("workerTtl") : setBy.get("heartbeatInterval");
    throw new ConfigError(
      "workerTtl",
      `must be greater than heartbeatInterval (${merged.heartbeatInterval} s), got ${merged.workerTtl}${fromSource(source)}`,
    );
  }
  return Object.freeze({ ...merged, defaultTaskDurations: Object.freeze({ ...merged.defaultTaskDurations }) });
}

/**
 * The defaults with `partial` merged over them, every key validated: unknown keys,
 * wrong types and out-of-range values throw a ConfigError naming the key (and `source`,
 * if given). Time keys also take strings like "100ms", size keys strings like "1 GiB".
 */
export function resolveConfig(partial: unknown, source?: string): Config {
  return resolveConfigLayers([{ settings: partial, source }]);
}
