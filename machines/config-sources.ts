/**
 * The two outside shapes settings arrive in, turned into ConfigLayers: a parsed config
 * file (flat camelCase keys, or Dask-style `scheduler: { work-stealing: ... }`) and
 * NATSCHED_SCHEDULER__<UPPER_SNAKE> environment variables. Pure: the caller reads the
 * file and passes the environment in.
 */
import { CONFIG_KEYS, isConfigKey, type ConfigKey, type ConfigLayer } from "./config.js";
import { closestMatch } from "./did-you-mean.js";
import { ConfigError } from "./errors.js";
import { formatValue, isPlainObject } from "./config-values.js";

export const ENV_PREFIX = "NATSCHED_SCHEDULER__";

export function kebabCase(key: ConfigKey): string {
  return key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

function camelCase(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
}

/** The environment variable for a key: workerSaturation -> NATSCHED_SCHEDULER__WORKER_SATURATION. */
export function envVarName(key: ConfigKey): string {
  return ENV_PREFIX + key.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase();
}

const KEY_BY_ENV_VAR: ReadonlyMap<string, ConfigKey> = new Map(CONFIG_KEYS.map((key) => [envVarName(key), key]));

/**
 * Settings from a parsed config file. Top-level keys and the keys inside `scheduler`
 * may be camelCase or kebab-case; an unknown key is reported as written, with a
 * suggestion in the same style. An empty file (null) is no settings.
 */
export function settingsFromFile(parsed: unknown, file: string): Record<string, unknown> {
  if (parsed === null || parsed === undefined) return {};
  if (!isPlainObject(parsed)) {
    throw new ConfigError(file, `expected a mapping of settings at the top level, got ${formatValue(parsed)}`);
  }
  const settings: Record<string, unknown> = {};
  const writtenAs = new Map<ConfigKey, string>();
  const add = (name: string, value: unknown, prefix: string) => {
    const written = prefix + name;
    const key = camelCase(name);
    if (!isConfigKey(key)) {
      const candidates = name.includes("-") ? CONFIG_KEYS.map(kebabCase) : CONFIG_KEYS;
      const suggestion = closestMatch(name, candidates);
      const hint = suggestion ? `; did you mean "${prefix}${suggestion}"?` : "";
      throw new ConfigError(written, `unknown setting${hint} (from ${file})`);
    }
    const earlier = writtenAs.get(key);
    if (earlier !== undefined) throw new ConfigError(written, `set twice, also as "${earlier}" (from ${file})`);
    writtenAs.set(key, written);
    // A plain assignment would treat a "__proto__" key specially; defineProperty doesn't.
    Object.defineProperty(settings, key, { value, enumerable: true, writable: true, configurable: true });
  };
  for (const [name, value] of Object.entries(parsed)) {
    if (name !== "scheduler") {
      add(name, value, "");
    } else if (isPlainObject(value)) {
      for (const [inner, innerValue] of Object.entries(value)) add(inner, innerValue, "scheduler.");
    } else {
      throw new ConfigError("scheduler", `expected a mapping of scheduler settings, got ${formatValue(value)} (from ${file})`);
    }
  }
  return settings;
}

/**
 * An environment variable's text as a raw setting: JSON when it parses ("false", "1.5",
 * '{"inc": 0.1}'), true/false in any case, otherwise the trimmed string, which the key's
 * reader may parse further ("100ms", "1 GiB", "inf").
 */
export function parseEnvValue(text: string, variable: string): unknown {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed);
  } catch (error) {
    if (/^[[{"]/.test(trimmed)) {
      throw new ConfigError(variable, `malformed JSON: ${(error as Error).message}`);
    }
  }
  if (/^(true|false)$/i.test(trimmed)) return trimmed.toLowerCase() === "true";
  return trimmed;
}

function unknownVariableError(variable: string): ConfigError {
  const known = [...KEY_BY_ENV_VAR.keys()];
  const suggestion = closestMatch(
    variable.slice(ENV_PREFIX.length),
    known.map((name) => name.slice(ENV_PREFIX.length)),
  );
  const hint = suggestion ? `; did you mean ${ENV_PREFIX}${suggestion}?` : ` (known: ${known.join(", ")})`;
  return new ConfigError(variable, `unknown environment variable${hint}`);
}

/**
 * One layer per NATSCHED_SCHEDULER__* variable (so errors name the variable), in
 * name order. Empty variables count as unset; an unknown one is an error naming it.
 * Other NATSCHED_* variables are not config settings and are ignored here.
 */
export function envConfigLayers(env: Readonly<Record<string, string | undefined>>): ConfigLayer[] {
  const layers: ConfigLayer[] = [];
  for (const variable of Object.keys(env).filter((name) => name.startsWith(ENV_PREFIX)).sort()) {
    const text = env[variable];
    if (text === undefined || text.trim() === "") continue;
    const key = KEY_BY_ENV_VAR.get(variable);
    if (key === undefined) throw unknownVariableError(variable);
    layers.push({ settings: { [key]: parseEnvValue(text, variable) }, source: variable });
  }
  return layers;
}
