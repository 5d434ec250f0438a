import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CONFIG_KEYS, DEFAULT_CONFIG, resolveConfig, resolveConfigLayers, type Config } from "../machines/config.js";
import { envVarName, kebabCase } from "../machines/config-sources.js";
import { parseDuration, parseSize } from "../machines/config-units.js";
import { closestMatch } from "../machines/did-you-mean.js";
import { ConfigError } from "../machines/errors.js";
import { loadConfig } from "../actors/config-loader.js";

/** The ConfigError `run` throws; fails the test if it throws anything else or nothing. */
function configError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError, but nothing was thrown");
}

/** Dask's defaults, but for workerSaturation: natsched's default is its own "adaptive" (Dask: 1.1). */
const DASK_DEFAULTS: Config = {
  workStealing: true,
  workStealingInterval: 1,
  workerSaturation: "adaptive",
  // natsched's own adaptive saturation's bounds (used only with workerSaturation "adaptive").
  adaptiveSaturationCap: 256,
  adaptiveSaturationMemory: 1024 * 1024,
  unknownTaskDuration: 0.5,
  defaultTaskDurations: {
    "rechunk-split": 1e-6,
    "split-shuffle": 1e-6,
    "split-taskshuffle": 1e-6,
    "split-stage": 1e-6,
  },
  bandwidth: 100_000_000,
  defaultDataSize: 1024,
  allowedFailures: 3,
  latency: 0.1,
  transferIncomingCountLimit: 50,
  heartbeatInterval: 0.5,
  workerTtl: 300,
  clientReleaseGrace: 10,
  // natsched's own guard (Dask has no such setting and behaves as `false`).
  rootishInputLocality: true,
  // natsched's own guard on stealing (Dask behaves as `false`).
  costlyStealEvidence: true,
  // natsched's own (Dask's scatter goes through its scheduler): twice the client's request timeout.
  scatterLease: 60,
  // natsched's own (Dask limits memory per worker process): per executor thread, 1 GiB.
  executorThreadMemory: 1024 * 1024 * 1024,
  // natsched's own (Dask's worker sends what it has every 2 ms): held reports wait at most 50 ms.
  reportHold: 0.05,
};

describe("defaults", () => {
  it("are Dask's, but for workerSaturation (adaptive)", () => {
    expect(DEFAULT_CONFIG).toStrictEqual(DASK_DEFAULTS);
  });

  it("are frozen, map included", () => {
    expect(Object.isFrozen(DEFAULT_CONFIG)).toBe(true);
    expect(Object.isFrozen(DEFAULT_CONFIG.defaultTaskDurations)).toBe(true);
  });

  it("are what resolveConfig gives for nothing, null or {}", () => {
    expect(resolveConfig(undefined)).toStrictEqual(DASK_DEFAULTS);
    expect(resolveConfig(null)).toStrictEqual(DASK_DEFAULTS);
    expect(resolveConfig({})).toStrictEqual(DASK_DEFAULTS);
  });

  it("list every key", () => {
    expect([...CONFIG_KEYS].sort()).toStrictEqual(Object.keys(DASK_DEFAULTS).sort());
  });
});

describe("parseDuration", () => {
  it.each([
    ["100ms", 0.1],
    ["1s", 1],
    ["1.5 s", 1.5],
    ["5 minutes", 300],
    ["2us", 2e-6],
    ["1us", 1e-6],
    ["3ms", 0.003],
    ["9ms", 0.009],
    ["5us", 5e-6],
    ["250 µs", 250e-6],
    ["10ns", 1e-8],
    ["1m", 60],
    ["2h", 7200],
    ["1 hour", 3600],
    ["1d", 86400],
    ["1w", 604800],
    ["0.5", 0.5],
    [".5s", 0.5],
    ["1e-3s", 0.001],
    ["  42  ", 42],
    ["100MS", 0.1],
    ["-1s", -1],
  ])("%j is %d seconds", (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });

  it.each(["", "ms", "fast", "5 fortnights", "1h30m", "1,5s", "1 s s", "Infinity"])("%j is not a duration", (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe("parseSize", () => {
  it.each([
    ["100MB", 100e6],
    ["1 GiB", 2 ** 30],
    ["1kiB", 1024],
    ["1 KiB", 1024],
    ["1kB", 1000],
    ["1k", 1000],
    ["5Mi", 5 * 2 ** 20],
    ["12.5 mb", 12_500_000],
    ["0.29kB", 290],
    ["512", 512],
    ["512 bytes", 512],
    ["1TB", 1e12],
    ["2 PiB", 2 * 2 ** 50],
  ])("%j is %d bytes", (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  it("accepts a /s suffix only for rates", () => {
    expect(parseSize("100MB/s", { perSecond: true })).toBe(100e6);
    expect(parseSize("1 GiB / s", { perSecond: true })).toBe(2 ** 30);
    expect(parseSize("100MB", { perSecond: true })).toBe(100e6);
    expect(parseSize("100MB/s")).toBeUndefined();
  });

  it.each(["", "MB", "lots", "100 XB", "100MB/h", "1,000"])("%j is not a size", (text) => {
    expect(parseSize(text, { perSecond: true })).toBeUndefined();
  });
});

describe("closestMatch", () => {
  const keys = ["workStealing", "workerSaturation", "latency"];
  it("finds typos and ignores case, dashes and underscores", () => {
    expect(closestMatch("workStealng", keys)).toBe("workStealing");
    expect(closestMatch("work-stealing", keys)).toBe("workStealing");
    expect(closestMatch("WORKER_SATURATON", keys)).toBe("workerSaturation");
  });
  it("suggests nothing for a name far from all of them", () => {
    expect(closestMatch("colour", keys)).toBeUndefined();
    expect(closestMatch("x", keys)).toBeUndefined();
  });
});

describe("resolveConfig", () => {
  it("merges a partial over the defaults", () => {
    expect(resolveConfig({ workStealing: false, allowedFailures: 0 })).toStrictEqual({
      ...DASK_DEFAULTS,
      workStealing: false,
      allowedFailures: 0,
    });
  });

  it("merges defaultTaskDurations over the default map", () => {
    const config = resolveConfig({ defaultTaskDurations: { inc: 0.1, "rechunk-split": "1ms" } });
    expect(config.defaultTaskDurations).toStrictEqual({
      "rechunk-split": 0.001,
      "split-shuffle": 1e-6,
      "split-taskshuffle": 1e-6,
      "split-stage": 1e-6,
      inc: 0.1,
    });
  });

  it("parses human strings for time and size keys", () => {
    const config = resolveConfig({
      workStealingInterval: "100ms",
      unknownTaskDuration: "2us",
      latency: "5ms",
      heartbeatInterval: "1s",
      workerTtl: "5 minutes",
      clientReleaseGrace: "1 minute",
      bandwidth: "1GB/s",
      defaultDataSize: "1 KiB",
    });
    expect(config.workStealingInterval).toBe(0.1);
    expect(config.unknownTaskDuration).toBe(2e-6);
    expect(config.latency).toBe(0.005);
    expect(config.heartbeatInterval).toBe(1);
    expect(config.workerTtl).toBe(300);
    expect(config.clientReleaseGrace).toBe(60);
    expect(config.bandwidth).toBe(1e9);
    expect(config.defaultDataSize).toBe(1024);
  });

  it.each([Infinity, "inf", "Infinity", "INF", ".inf"])("takes %j as an infinite workerSaturation", (value) => {
    expect(resolveConfig({ workerSaturation: value }).workerSaturation).toBe(Infinity);
  });

  it.each(["adaptive", "Adaptive", " ADAPTIVE "])("takes %j as adaptive saturation", (value) => {
    expect(resolveConfig({ workerSaturation: value }).workerSaturation).toBe("adaptive");
  });

  it("takes inf as a workerTtl that never expires", () => {
    expect(resolveConfig({ workerTtl: "inf" }).workerTtl).toBe(Infinity);
  });

  it("accepts the lowest values in range", () => {
    const config = resolveConfig({
      allowedFailures: 0,
      transferIncomingCountLimit: 1,
      unknownTaskDuration: 0,
      latency: 0,
      defaultDataSize: 0,
      clientReleaseGrace: 0,
      workerSaturation: 0.01,
    });
    expect([config.allowedFailures, config.transferIncomingCountLimit, config.unknownTaskDuration]).toStrictEqual([0, 1, 0]);
    expect([config.latency, config.defaultDataSize, config.clientReleaseGrace, config.workerSaturation]).toStrictEqual([
      0, 0, 0, 0.01,
    ]);
  });

  it("treats an undefined value as not set", () => {
    expect(resolveConfig({ workStealing: undefined }).workStealing).toBe(true);
  });

  it("returns a frozen config and leaves the defaults alone", () => {
    const config = resolveConfig({ defaultTaskDurations: { inc: 1 } });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.defaultTaskDurations)).toBe(true);
    expect(DEFAULT_CONFIG.defaultTaskDurations).not.toHaveProperty("inc");
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    // wrong types
    ["a string for a boolean", { workStealing: "yes" }, "workStealing", 'expected true or false, got "yes"'],
    ["a number for a boolean", { workStealing: 1 }, "workStealing", "expected true or false, got 1"],
    ["a string for an integer", { allowedFailures: "3" }, "allowedFailures", 'expected an integer >= 0, got "3"'],
    ["an array for the map", { defaultTaskDurations: [1] }, "defaultTaskDurations", "expected a map from task prefix to duration, got an array"],
    ["a boolean for a size", { bandwidth: true }, "bandwidth", 'expected a size in bytes/s (a number, or a string like "100MB/s"), got true'],
    ["an object for a ratio", { workerSaturation: {} }, "workerSaturation", 'expected a number > 0, "inf" to disable queuing, or "adaptive", got an object'],
    ["null for a duration", { latency: null }, "latency", 'expected a duration (seconds, or a string like "100ms" or "5 minutes"), got null'],
    // unparseable strings
    ["a bad duration string", { unknownTaskDuration: "fast" }, "unknownTaskDuration", 'expected a duration (seconds, or a string like "100ms" or "5 minutes"), got "fast"'],
    ["a bad size string", { defaultDataSize: "lots" }, "defaultDataSize", 'expected a size in bytes (a number, or a string like "100MB" or "1 GiB"), got "lots"'],
    ["a rate for a size", { defaultDataSize: "1MB/s" }, "defaultDataSize", 'expected a size in bytes (a number, or a string like "100MB" or "1 GiB"), got "1MB/s"'],
    ["a bad map entry", { defaultTaskDurations: { inc: "soon" } }, "defaultTaskDurations", 'entry "inc": expected a duration (seconds, or a string like "100ms" or "5 minutes"), got "soon"'],
    // ranges
    ["zero saturation", { workerSaturation: 0 }, "workerSaturation", 'must be > 0 (or "inf" to disable queuing, or "adaptive"), got 0'],
    ["negative saturation", { workerSaturation: -1.1 }, "workerSaturation", 'must be > 0 (or "inf" to disable queuing, or "adaptive"), got -1.1'],
    ["NaN saturation", { workerSaturation: NaN }, "workerSaturation", 'expected a number > 0, "inf" to disable queuing, or "adaptive", got NaN'],
    ["another word for a saturation", { workerSaturation: "auto" }, "workerSaturation", 'expected a number > 0, "inf" to disable queuing, or "adaptive", got "auto"'],
    ["a cap below one task per thread", { adaptiveSaturationCap: 0.5 }, "adaptiveSaturationCap", "expected a finite number >= 1, got 0.5"],
    ["an infinite cap", { adaptiveSaturationCap: Infinity }, "adaptiveSaturationCap", "expected a finite number >= 1, got Infinity"],
    ["a negative memory budget", { adaptiveSaturationMemory: -1 }, "adaptiveSaturationMemory", "must be >= 0 bytes, got -1"],
    ["negative failures", { allowedFailures: -1 }, "allowedFailures", "expected an integer >= 0, got -1"],
    ["fractional failures", { allowedFailures: 1.5 }, "allowedFailures", "expected an integer >= 0, got 1.5"],
    ["zero transfer limit", { transferIncomingCountLimit: 0 }, "transferIncomingCountLimit", "expected an integer >= 1, got 0"],
    ["infinite transfer limit", { transferIncomingCountLimit: Infinity }, "transferIncomingCountLimit", "expected an integer >= 1, got Infinity"],
    ["negative duration", { unknownTaskDuration: -0.5 }, "unknownTaskDuration", "must be >= 0 seconds, got -0.5"],
    ["negative duration string", { latency: "-5ms" }, "latency", 'must be >= 0 seconds, got "-5ms"'],
    ["zero interval", { workStealingInterval: 0 }, "workStealingInterval", "must be > 0 seconds, got 0"],
    ["zero heartbeat", { heartbeatInterval: "0s" }, "heartbeatInterval", 'must be > 0 seconds, got "0s"'],
    ["zero ttl", { workerTtl: 0 }, "workerTtl", "must be > 0 seconds, got 0"],
    ["infinite duration", { unknownTaskDuration: Infinity }, "unknownTaskDuration", "must be finite, got Infinity"],
    ["inf where infinity means nothing", { clientReleaseGrace: "inf" }, "clientReleaseGrace", 'expected a duration (seconds, or a string like "100ms" or "5 minutes"), got "inf"'],
    ["NaN duration", { latency: NaN }, "latency", 'expected a duration (seconds, or a string like "100ms" or "5 minutes"), got NaN'],
    ["negative map entry", { defaultTaskDurations: { inc: -1 } }, "defaultTaskDurations", 'entry "inc": must be >= 0 seconds, got -1'],
    ["zero bandwidth", { bandwidth: 0 }, "bandwidth", "must be > 0 bytes/s, got 0"],
    ["infinite bandwidth", { bandwidth: Infinity }, "bandwidth", "must be finite, got Infinity"],
    ["negative data size", { defaultDataSize: -1 }, "defaultDataSize", "must be >= 0 bytes, got -1"],
    ["fractional data size", { defaultDataSize: 1.5 }, "defaultDataSize", "must be a whole number of bytes, got 1.5"],
  ])("rejects %s", (_, partial, key, message) => {
    const error = configError(() => resolveConfig(partial));
    expect(error.key).toBe(key);
    expect(error.code).toBe("CONFIG");
    expect(error.message).toBe(`config ${key}: ${message}`);
  });

  it("names the source in the message", () => {
    const error = configError(() => resolveConfig({ workerSaturation: -1 }, "natsched.config.yaml"));
    expect(error.message).toBe('config workerSaturation: must be > 0 (or "inf" to disable queuing, or "adaptive"), got -1 (from natsched.config.yaml)');
  });

  it("rejects an unknown key and suggests the near miss", () => {
    const error = configError(() => resolveConfig({ workStealng: false }, "overrides"));
    expect(error.key).toBe("workStealng");
    expect(error.message).toBe('config workStealng: unknown setting; did you mean "workStealing"? (from overrides)');
  });

  it("rejects an unknown key with no near miss by listing the known ones", () => {
    const error = configError(() => resolveConfig({ colour: "blue" }));
    expect(error.message).toBe(`config colour: unknown setting (known settings: ${CONFIG_KEYS.join(", ")})`);
  });

  it("rejects settings that are not an object", () => {
    expect(configError(() => resolveConfig([1, 2], "overrides")).message).toBe(
      "config overrides: expected an object of settings, got an array",
    );
    expect(configError(() => resolveConfig("workStealing")).message).toBe(
      'config settings: expected an object of settings, got "workStealing"',
    );
  });

  it("rejects a workerTtl no longer than the heartbeat interval", () => {
    const error = configError(() => resolveConfig({ heartbeatInterval: 10, workerTtl: 10 }, "overrides"));
    expect(error.key).toBe("workerTtl");
    expect(error.message).toBe("config workerTtl: must be greater than heartbeatInterval (10 s), got 10 (from overrides)");
  });

  it("checks workerTtl against the heartbeat only once all layers are in", () => {
    const config = resolveConfigLayers([
      { settings: { heartbeatInterval: 600 }, source: "a" },
      { settings: { workerTtl: 1200 }, source: "b" },
    ]);
    expect([config.heartbeatInterval, config.workerTtl]).toStrictEqual([600, 1200]);
  });
});

describe("loadConfig", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "natsched-config-"));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const load = (env: Record<string, string> = {}, overrides?: Partial<Config>, file?: string | false) =>
    loadConfig({ cwd: dir, env, ...(overrides ? { overrides } : {}), ...(file !== undefined ? { file } : {}) });

  it("gives the defaults with no file, no variables and no overrides", () => {
    expect(load()).toStrictEqual(DASK_DEFAULTS);
  });

  describe("config file", () => {
    it("reads flat camelCase JSON", () => {
      write("natsched.config.json", JSON.stringify({ workStealing: false, bandwidth: "1GB", defaultTaskDurations: { inc: 0.25 } }));
      const config = load();
      expect(config.workStealing).toBe(false);
      expect(config.bandwidth).toBe(1e9);
      expect(config.defaultTaskDurations["inc"]).toBe(0.25);
      expect(config.defaultTaskDurations["split-stage"]).toBe(1e-6);
    });

    it("reads Dask-style nested kebab-case YAML", () => {
      write(
        "natsched.config.yaml",
        [
          "scheduler:",
          "  work-stealing: False",
          "  work-stealing-interval: 250ms",
          "  worker-saturation: .inf",
          "  worker-ttl: 5 minutes",
          "  default-data-size: 1kiB",
          "  default-task-durations:",
          "    rechunk-split: 1us",
          "    my-prefix: 2s",
          "",
        ].join("\n"),
      );
      const config = load();
      expect(config.workStealing).toBe(false);
      expect(config.workStealingInterval).toBe(0.25);
      expect(config.workerSaturation).toBe(Infinity);
      expect(config.workerTtl).toBe(300);
      expect(config.defaultDataSize).toBe(1024);
      // prefixes inside the map are task names, kept as written
      expect(config.defaultTaskDurations).toStrictEqual({ ...DASK_DEFAULTS.defaultTaskDurations, "my-prefix": 2 });
    });

    it("reads adaptive saturation and its bounds from a file", () => {
      write("natsched.config.yaml", "scheduler:\n  worker-saturation: adaptive\n  adaptive-saturation-cap: 4\n  adaptive-saturation-memory: 1 GiB\n");
      const config = load();
      expect([config.workerSaturation, config.adaptiveSaturationCap, config.adaptiveSaturationMemory]).toStrictEqual(["adaptive", 4, 2 ** 30]);
    });

    it("reads camelCase inside scheduler, alongside flat keys, from .yml", () => {
      write("natsched.config.yml", "allowedFailures: 5\nscheduler:\n  workerSaturation: 2\n");
      const config = load();
      expect([config.allowedFailures, config.workerSaturation]).toStrictEqual([5, 2]);
    });

    it("takes the first of .json, .yaml, .yml", () => {
      write("natsched.config.yml", "allowedFailures: 7\n");
      write("natsched.config.yaml", "allowedFailures: 6\n");
      expect(load().allowedFailures).toBe(6);
      write("natsched.config.json", '{"allowedFailures": 5}');
      expect(load().allowedFailures).toBe(5);
    });

    it("uses the file named by NATSCHED_CONFIG, relative to cwd", () => {
      write("natsched.config.json", '{"allowedFailures": 5}');
      mkdirSync(join(dir, "conf"));
      write("conf/custom.yaml", "allowedFailures: 9\n");
      expect(load({ NATSCHED_CONFIG: "conf/custom.yaml" }).allowedFailures).toBe(9);
    });

    it("prefers opts.file to NATSCHED_CONFIG", () => {
      write("a.json", '{"allowedFailures": 1}');
      write("b.json", '{"allowedFailures": 2}');
      expect(load({ NATSCHED_CONFIG: "a.json" }, undefined, "b.json").allowedFailures).toBe(2);
    });

    it("reads no file at all when file is false", () => {
      write("natsched.config.json", '{"allowedFailures": 5}');
      write("other.json", '{"allowedFailures": 6}');
      expect(load({ NATSCHED_CONFIG: "other.json" }, undefined, false)).toStrictEqual(DASK_DEFAULTS);
    });

    it("treats an empty file as no settings", () => {
      write("natsched.config.yaml", "# nothing here\n");
      expect(load()).toStrictEqual(DASK_DEFAULTS);
    });

    it("rejects malformed JSON, naming the file", () => {
      const path = write("natsched.config.json", '{"workStealing": false,}');
      const error = configError(() => load());
      expect(error.key).toBe(path);
      expect(error.message.startsWith(`config ${path}: malformed JSON: `)).toBe(true);
    });

    it("rejects malformed YAML, naming the file", () => {
      const path = write("natsched.config.yaml", "scheduler:\n  work-stealing: [false\n");
      const error = configError(() => load());
      expect(error.key).toBe(path);
      expect(error.message.startsWith(`config ${path}: malformed YAML: `)).toBe(true);
    });

    it("rejects duplicate YAML keys as malformed", () => {
      const path = write("natsched.config.yaml", "allowedFailures: 1\nallowedFailures: 2\n");
      expect(configError(() => load()).message.startsWith(`config ${path}: malformed YAML: `)).toBe(true);
    });

    it("rejects a named file that does not exist", () => {
      const error = configError(() => load({}, undefined, "missing.yaml"));
      expect(error.message).toBe(`config ${join(dir, "missing.yaml")}: cannot read config file (ENOENT)`);
    });

    it("rejects a file whose top level is not a mapping", () => {
      const path = write("natsched.config.json", "[1, 2]");
      expect(configError(() => load()).message).toBe(`config ${path}: expected a mapping of settings at the top level, got an array`);
    });

    it("rejects a scheduler entry that is not a mapping", () => {
      const path = write("natsched.config.yaml", "scheduler: fast\n");
      expect(configError(() => load()).message).toBe(
        `config scheduler: expected a mapping of scheduler settings, got "fast" (from ${path})`,
      );
    });

    it("rejects an unknown kebab-case key with a kebab-case suggestion", () => {
      const path = write("natsched.config.yaml", "scheduler:\n  work-stealng: false\n");
      const error = configError(() => load());
      expect(error.key).toBe("scheduler.work-stealng");
      expect(error.message).toBe(`config scheduler.work-stealng: unknown setting; did you mean "scheduler.work-stealing"? (from ${path})`);
    });

    it("rejects an unknown flat key with a camelCase suggestion", () => {
      const path = write("natsched.config.json", '{"workerSaturaton": 2}');
      expect(configError(() => load()).message).toBe(
        `config workerSaturaton: unknown setting; did you mean "workerSaturation"? (from ${path})`,
      );
    });

    it("rejects a key set twice", () => {
      const path = write("natsched.config.yaml", "workStealing: true\nscheduler:\n  work-stealing: false\n");
      expect(configError(() => load()).message).toBe(
        `config scheduler.work-stealing: set twice, also as "workStealing" (from ${path})`,
      );
    });

    it("rejects a bad value, naming the key and the file", () => {
      const path = write("natsched.config.yaml", "scheduler:\n  worker-saturation: 0\n");
      const error = configError(() => load());
      expect(error.key).toBe("workerSaturation");
      expect(error.message).toBe(`config workerSaturation: must be > 0 (or "inf" to disable queuing, or "adaptive"), got 0 (from ${path})`);
    });
  });

  describe("environment", () => {
    it.each<[string, string, keyof Config, unknown]>([
      ["NATSCHED_SCHEDULER__WORK_STEALING", "false", "workStealing", false],
      ["NATSCHED_SCHEDULER__WORK_STEALING", "False", "workStealing", false],
      ["NATSCHED_SCHEDULER__WORK_STEALING", "TRUE", "workStealing", true],
      ["NATSCHED_SCHEDULER__WORKER_SATURATION", "inf", "workerSaturation", Infinity],
      ["NATSCHED_SCHEDULER__WORKER_SATURATION", "Infinity", "workerSaturation", Infinity],
      ["NATSCHED_SCHEDULER__WORKER_SATURATION", "2.5", "workerSaturation", 2.5],
      ["NATSCHED_SCHEDULER__WORKER_SATURATION", "adaptive", "workerSaturation", "adaptive"],
      ["NATSCHED_SCHEDULER__ADAPTIVE_SATURATION_CAP", "8", "adaptiveSaturationCap", 8],
      ["NATSCHED_SCHEDULER__ADAPTIVE_SATURATION_MEMORY", "64MiB", "adaptiveSaturationMemory", 64 * 2 ** 20],
      ["NATSCHED_SCHEDULER__WORK_STEALING_INTERVAL", "100ms", "workStealingInterval", 0.1],
      ["NATSCHED_SCHEDULER__WORKER_TTL", "5 minutes", "workerTtl", 300],
      ["NATSCHED_SCHEDULER__LATENCY", "0.05", "latency", 0.05],
      ["NATSCHED_SCHEDULER__UNKNOWN_TASK_DURATION", '"2us"', "unknownTaskDuration", 2e-6],
      ["NATSCHED_SCHEDULER__BANDWIDTH", "100MB/s", "bandwidth", 100e6],
      ["NATSCHED_SCHEDULER__DEFAULT_DATA_SIZE", "1 GiB", "defaultDataSize", 2 ** 30],
      ["NATSCHED_SCHEDULER__ALLOWED_FAILURES", "0", "allowedFailures", 0],
      ["NATSCHED_SCHEDULER__TRANSFER_INCOMING_COUNT_LIMIT", "10", "transferIncomingCountLimit", 10],
      ["NATSCHED_SCHEDULER__HEARTBEAT_INTERVAL", "1s", "heartbeatInterval", 1],
      ["NATSCHED_SCHEDULER__CLIENT_RELEASE_GRACE", "30", "clientReleaseGrace", 30],
      ["NATSCHED_SCHEDULER__EXECUTOR_THREAD_MEMORY", "512MiB", "executorThreadMemory", 512 * 2 ** 20],
      ["NATSCHED_SCHEDULER__REPORT_HOLD", "0", "reportHold", 0],
    ])("%s=%s sets %s", (variable, text, key, value) => {
      expect(load({ [variable]: text })[key]).toBe(value);
    });

    it("reads a JSON map and merges it over the defaults", () => {
      const config = load({ NATSCHED_SCHEDULER__DEFAULT_TASK_DURATIONS: '{"inc": 0.1, "load": "2s"}' });
      expect(config.defaultTaskDurations).toStrictEqual({ ...DASK_DEFAULTS.defaultTaskDurations, inc: 0.1, load: 2 });
    });

    it("has a variable for every key", () => {
      const texts: Record<keyof Config, string> = {
        workStealing: "false",
        workStealingInterval: "7",
        workerSaturation: "7",
        adaptiveSaturationCap: "7",
        adaptiveSaturationMemory: "7MiB",
        unknownTaskDuration: "7",
        defaultTaskDurations: '{"x": 7}',
        bandwidth: "7",
        defaultDataSize: "7",
        allowedFailures: "7",
        latency: "7",
        transferIncomingCountLimit: "7",
        heartbeatInterval: "7",
        workerTtl: "70",
        clientReleaseGrace: "7",
        rootishInputLocality: "false",
        costlyStealEvidence: "false",
        scatterLease: "7",
        executorThreadMemory: "64MiB",
        reportHold: "7ms",
      };
      const env = Object.fromEntries(CONFIG_KEYS.map((key) => [envVarName(key), texts[key]]));
      expect(load(env)).toStrictEqual({
        workStealing: false,
        workStealingInterval: 7,
        workerSaturation: 7,
        adaptiveSaturationCap: 7,
        adaptiveSaturationMemory: 7 * 2 ** 20,
        unknownTaskDuration: 7,
        defaultTaskDurations: { ...DASK_DEFAULTS.defaultTaskDurations, x: 7 },
        bandwidth: 7,
        defaultDataSize: 7,
        allowedFailures: 7,
        latency: 7,
        transferIncomingCountLimit: 7,
        heartbeatInterval: 7,
        workerTtl: 70,
        clientReleaseGrace: 7,
        rootishInputLocality: false,
        costlyStealEvidence: false,
        scatterLease: 7,
        executorThreadMemory: 64 * 2 ** 20,
        reportHold: 0.007,
      });
    });

    it("ignores empty variables and other NATSCHED_ variables", () => {
      expect(load({ NATSCHED_SCHEDULER__WORK_STEALING: "", NATSCHED_NATS_URL: "nats://x:4222" })).toStrictEqual(DASK_DEFAULTS);
    });

    it("rejects an unknown NATSCHED_SCHEDULER__ variable, naming it", () => {
      const error = configError(() => load({ NATSCHED_SCHEDULER__WORK_STEALNG: "false" }));
      expect(error.key).toBe("NATSCHED_SCHEDULER__WORK_STEALNG");
      expect(error.message).toBe(
        "config NATSCHED_SCHEDULER__WORK_STEALNG: unknown environment variable; did you mean NATSCHED_SCHEDULER__WORK_STEALING?",
      );
    });

    it("rejects an unknown variable with no near miss by listing the known ones", () => {
      const error = configError(() => load({ NATSCHED_SCHEDULER__COLOUR: "blue" }));
      expect(error.message).toBe(
        `config NATSCHED_SCHEDULER__COLOUR: unknown environment variable (known: ${CONFIG_KEYS.map(envVarName).join(", ")})`,
      );
    });

    it("rejects a bad value, naming the variable", () => {
      const error = configError(() => load({ NATSCHED_SCHEDULER__WORKER_SATURATION: "-1" }));
      expect(error.key).toBe("workerSaturation");
      expect(error.message).toBe(
        'config workerSaturation: must be > 0 (or "inf" to disable queuing, or "adaptive"), got -1 (from NATSCHED_SCHEDULER__WORKER_SATURATION)',
      );
    });

    it("rejects malformed JSON, naming the variable", () => {
      const error = configError(() => load({ NATSCHED_SCHEDULER__DEFAULT_TASK_DURATIONS: '{"inc": 0.1' }));
      expect(error.key).toBe("NATSCHED_SCHEDULER__DEFAULT_TASK_DURATIONS");
      expect(error.message.startsWith("config NATSCHED_SCHEDULER__DEFAULT_TASK_DURATIONS: malformed JSON: ")).toBe(true);
    });
  });

  describe("precedence", () => {
    it("is defaults < file < environment < overrides", () => {
      write("natsched.config.json", JSON.stringify({ allowedFailures: 1, latency: 1, bandwidth: 1, workStealing: false }));
      const env = { NATSCHED_SCHEDULER__LATENCY: "2", NATSCHED_SCHEDULER__BANDWIDTH: "2" };
      const config = load(env, { bandwidth: 3 });
      expect(config.allowedFailures).toBe(1); // file over default
      expect(config.workStealing).toBe(false); // file over default
      expect(config.latency).toBe(2); // environment over file
      expect(config.bandwidth).toBe(3); // overrides over environment
      expect(config.workerSaturation).toBe("adaptive"); // default where nothing is set
    });

    it("merges defaultTaskDurations across every layer", () => {
      write("natsched.config.yaml", "scheduler:\n  default-task-durations:\n    a: 1\n    b: 1\n    c: 1\n");
      const config = load({ NATSCHED_SCHEDULER__DEFAULT_TASK_DURATIONS: '{"b": 2, "c": 2}' }, { defaultTaskDurations: { c: 3 } });
      expect(config.defaultTaskDurations).toStrictEqual({ ...DASK_DEFAULTS.defaultTaskDurations, a: 1, b: 2, c: 3 });
    });

    it("names overrides as the source of a bad override", () => {
      const error = configError(() => load({}, { allowedFailures: -1 }));
      expect(error.message).toBe("config allowedFailures: expected an integer >= 0, got -1 (from overrides)");
    });

    it("lets a later layer fix the heartbeat/ttl relation an earlier layer would break", () => {
      write("natsched.config.json", '{"heartbeatInterval": 600}');
      expect(load({ NATSCHED_SCHEDULER__WORKER_TTL: "1h" }).workerTtl).toBe(3600);
      const path = join(dir, "natsched.config.json");
      expect(configError(() => load()).message).toBe(
        `config workerTtl: must be greater than heartbeatInterval (600 s), got 300 (from ${path})`,
      );
    });
  });
});

describe("docs/config.md", () => {
  const docs = readFileSync(new URL("../docs/config.md", import.meta.url), "utf8");
  it.each([...CONFIG_KEYS])("documents %s with its environment variable and file name", (key) => {
    expect(docs).toContain(`\`${key}\``);
    expect(docs).toContain(`\`${envVarName(key)}\``);
    expect(docs).toContain(`\`${kebabCase(key)}\``);
  });
});
