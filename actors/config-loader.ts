/**
 * Loads the Config from its four layers, later winning: defaults < config file <
 * environment < overrides passed in code. The only part of configuration that does I/O.
 */
import { readFileSync, existsSync } from "node:fs";
import { extname, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { resolveConfigLayers, type Config, type ConfigLayer } from "../machines/config.js";
import { envConfigLayers, settingsFromFile } from "../machines/config-sources.js";
import { ConfigError } from "../machines/errors.js";

/** Looked for in this order in the working directory when no file is named. */
export const CONFIG_FILE_NAMES = ["natsched.config.json", "natsched.config.yaml", "natsched.config.yml"] as const;

/** Names a config file to use instead of looking in the working directory. */
export const CONFIG_FILE_ENV_VAR = "NATSCHED_CONFIG";

export interface LoadConfigOptions {
  /** Highest-precedence settings, from code. */
  overrides?: Partial<Config>;
  /** Where relative file paths are resolved and config files are looked for; default process.cwd(). */
  cwd?: string;
  /** Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** A config file path (must exist), or false for no config file at all. */
  file?: string | false;
}

function chooseConfigFile(options: LoadConfigOptions, env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  if (options.file === false) return undefined;
  if (options.file !== undefined) return resolve(cwd, options.file);
  const named = env[CONFIG_FILE_ENV_VAR];
  if (named) return resolve(cwd, named);
  return CONFIG_FILE_NAMES.map((name) => resolve(cwd, name)).find((path) => existsSync(path));
}

/** JSON for .json files, YAML (a superset of JSON) for anything else. */
function parseConfigText(text: string, path: string): unknown {
  if (text.trim() === "") return null;
  const isJson = extname(path).toLowerCase() === ".json";
  try {
    return isJson ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ConfigError(path, `malformed ${isJson ? "JSON" : "YAML"}: ${(error as Error).message}`);
  }
}

export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(path, `cannot read config file (${reason})`);
  }
  return settingsFromFile(parseConfigText(text, path), path);
}

export function loadConfig(options: LoadConfigOptions = {}): Config {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const layers: ConfigLayer[] = [];
  const file = chooseConfigFile(options, env, cwd);
  if (file !== undefined) layers.push({ settings: readConfigFile(file), source: file });
  layers.push(...envConfigLayers(env));
  if (options.overrides !== undefined) layers.push({ settings: options.overrides, source: "overrides" });
  return resolveConfigLayers(layers);
}
