import { isAbsolute, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BadOptionError } from "../machines/errors.js";
import type { TaskFunction, TaskFunctions } from "./functions.js";

/**
 * Where a module function runs: "threads" (the default), on one of its worker's executor
 * threads; "loop", on the worker's event loop (async I/O functions gain nothing from a thread).
 * Functions given as plain objects always run on the loop: a closure cannot move to a thread.
 */
export type Executor = "threads" | "loop";

/** A module of task functions, with where its functions run (default: the worker's setting). */
export interface FunctionModuleEntry {
  module: string | URL;
  executor?: Executor;
}

/**
 * The task functions a worker offers: an object of name -> function, a module (a path,
 * relative to the working directory, or a `file:` URL), a module entry, or a list of these
 * (a later one wins a name).
 */
export type FunctionsSource = TaskFunctions | string | URL | FunctionModuleEntry;
export type FunctionsOption = FunctionsSource | readonly FunctionsSource[];

/** The functions resolved: all of them by name, and for those from a module, its URL and chosen executor. */
export interface ResolvedFunctions {
  functions: TaskFunctions;
  modules: ReadonlyMap<string, { url: string; executor?: Executor }>;
}

export async function resolveFunctions(option: FunctionsOption, cwd = process.cwd()): Promise<ResolvedFunctions> {
  const sources = Array.isArray(option) ? (option as readonly FunctionsSource[]) : [option as FunctionsSource];
  if (sources.length === 0) throw new BadOptionError("functions", "an empty list names no functions");
  const functions: Record<string, TaskFunction> = {};
  const modules = new Map<string, { url: string; executor?: Executor }>();
  for (const source of sources) {
    const entry = moduleEntry(source);
    if (entry === null) {
      for (const [name, fn] of Object.entries(plainFunctions(source))) {
        functions[name] = fn;
        modules.delete(name);
      }
      continue;
    }
    const url = moduleUrl(entry.module, cwd);
    for (const [name, fn] of Object.entries(await importFunctions(url, String(entry.module)))) {
      functions[name] = fn;
      modules.set(name, { url, ...(entry.executor !== undefined ? { executor: entry.executor } : {}) });
    }
  }
  return { functions, modules };
}

/** A module's task functions: the functions of its default export (an object) and its named function exports. */
function exportedFunctions(module: Record<string, unknown>): Record<string, TaskFunction> {
  const functions: Record<string, TaskFunction> = {};
  const fromDefault = module.default;
  if (typeof fromDefault === "object" && fromDefault !== null) {
    for (const [name, value] of Object.entries(fromDefault)) if (typeof value === "function") functions[name] = value as TaskFunction;
  }
  for (const [name, value] of Object.entries(module)) {
    if (name !== "default" && typeof value === "function") functions[name] = value as TaskFunction;
  }
  return functions;
}

export function checkExecutor(value: unknown, option = "executor"): Executor | undefined {
  if (value === undefined || value === "threads" || value === "loop") return value;
  throw new BadOptionError(option, `must be "threads" or "loop", got ${JSON.stringify(value)}`);
}

function moduleEntry(source: FunctionsSource): FunctionModuleEntry | null {
  if (typeof source === "string" || source instanceof URL) return { module: source };
  if (typeof source !== "object" || source === null) throw new BadOptionError("functions", `expected an object of functions, a module path or URL, or a list of these; got ${JSON.stringify(source)}`);
  const module = (source as { module?: unknown }).module;
  if (typeof module !== "string" && !(module instanceof URL)) return null;
  checkExecutor((source as FunctionModuleEntry).executor, "functions.executor");
  return source as FunctionModuleEntry;
}

function plainFunctions(source: FunctionsSource): TaskFunctions {
  for (const [name, fn] of Object.entries(source)) {
    if (typeof fn !== "function") throw new BadOptionError("functions", `${name} is not a function`);
  }
  return source as TaskFunctions;
}

function moduleUrl(module: string | URL, cwd: string): string {
  if (module instanceof URL || module.startsWith("file:")) {
    try {
      return pathToFileURL(fileURLToPath(module)).href;
    } catch (error) {
      throw new BadOptionError("functions", `${String(module)}: not a file URL (${(error as Error).message})`);
    }
  }
  if (module.length === 0) throw new BadOptionError("functions", "an empty string names no module");
  return pathToFileURL(isAbsolute(module) ? module : resolve(cwd, module)).href;
}

async function importFunctions(url: string, label: string): Promise<Record<string, TaskFunction>> {
  let module: Record<string, unknown>;
  try {
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new BadOptionError("functions", `cannot load ${label}: ${(error as Error).message}`);
  }
  const functions = exportedFunctions(module);
  if (Object.keys(functions).length === 0) {
    throw new BadOptionError("functions", `${label} exports no functions (export them by name, or default-export an object of functions)`);
  }
  return functions;
}

/** The functions a worker runs on its executor threads (name -> module URL), given its executor setting. */
export function threadFunctions(resolved: ResolvedFunctions, workerExecutor: Executor = "threads"): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, { url, executor }] of resolved.modules) if ((executor ?? workerExecutor) === "threads") out.set(name, url);
  return out;
}
