import { isConfigKey, resolveConfig, type Config } from "../machines/config.js";
import { parseEnvValue } from "../machines/config-sources.js";
import { BadOptionError, ConfigError } from "../machines/errors.js";

/**
 * `--set key=value` flags as config settings. Values read like NATSCHED_* variables
 * ("false", "1.5", "inf", "100ms", '{"inc": 0.1}'); the result is validated as a whole,
 * so an unknown key or a bad value is a ConfigError naming the flag.
 */
export function parseConfigOverrides(flags: readonly string[]): Partial<Config> {
  const settings: Record<string, unknown> = {};
  for (const flag of flags) {
    const eq = flag.indexOf("=");
    if (eq <= 0) throw new BadOptionError("--set", `expected key=value, got "${flag}"`);
    const key = flag.slice(0, eq).trim();
    settings[key] = parseEnvValue(flag.slice(eq + 1), `--set ${key}`);
  }
  const resolved = resolveConfig(settings, "--set");
  const overrides: Partial<Record<keyof Config, unknown>> = {};
  for (const key of Object.keys(settings)) {
    if (!isConfigKey(key)) throw new ConfigError(key, "unknown setting (from --set)");
    overrides[key] = resolved[key];
  }
  return overrides as Partial<Config>;
}
