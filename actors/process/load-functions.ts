import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import { BadOptionError } from "../../machines/errors.js";
import type { TaskFunction, TaskFunctions } from "../functions.js";

/**
 * The task functions a worker process offers, from a module: the functions of its default
 * export (an object of name -> function) and its named function exports.
 */
export async function loadFunctions(path: string, cwd = process.cwd()): Promise<TaskFunctions> {
  const url = pathToFileURL(resolve(cwd, path)).href;
  let module: Record<string, unknown>;
  try {
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new BadOptionError("functions", `cannot load ${path}: ${(error as Error).message}`);
  }
  const functions: Record<string, TaskFunction> = {};
  const fromDefault = module.default;
  if (typeof fromDefault === "object" && fromDefault !== null) {
    for (const [name, value] of Object.entries(fromDefault)) if (typeof value === "function") functions[name] = value as TaskFunction;
  }
  for (const [name, value] of Object.entries(module)) {
    if (name !== "default" && typeof value === "function") functions[name] = value as TaskFunction;
  }
  if (Object.keys(functions).length === 0) {
    throw new BadOptionError("functions", `${path} exports no functions (export them by name, or default-export an object of functions)`);
  }
  return functions;
}
