import { BadOptionError, GraphError } from "../machines/errors.js";
import { reservedKeyProblem } from "../machines/graph/reserved-keys.js";
import type { TaskSpec } from "../machines/protocol.js";
import { encodeArgs } from "./args.js";

/**
 * A Dask-style graph: key -> `[functionName, ...args]`, or literal data. A string argument
 * equal to another key of the graph is a dependency on that key.
 */
export type Graph = Record<string, unknown>;

export const IDENTITY = "natsched.identity";

export function graphToSpecs(graph: Graph, refOf: (value: unknown) => string | undefined, priority?: number): TaskSpec[] {
  if (typeof graph !== "object" || graph === null || Array.isArray(graph)) throw new BadOptionError("graph", "must be an object of key -> task");
  const keys = new Set(Object.keys(graph));
  if (keys.size === 0) throw new BadOptionError("graph", "is empty");
  const refOrGraphKey = (value: unknown): string | undefined => {
    if (typeof value === "string" && keys.has(value)) return value;
    return refOf(value);
  };
  const specs: TaskSpec[] = [];
  for (const [key, value] of Object.entries(graph)) {
    const reserved = reservedKeyProblem(key);
    if (reserved !== undefined) throw new GraphError(`task ${reserved}`, "GRAPH", [key]);
    const isTask = Array.isArray(value) && value.length > 0 && typeof value[0] === "string";
    const func = isTask ? (value[0] as string) : IDENTITY;
    const rawArgs = isTask ? value.slice(1) : [value];
    const encoded = encodeArgs(rawArgs, refOrGraphKey);
    specs.push({ key, func, args: encoded.args, deps: encoded.deps, ...(priority !== undefined ? { priority } : {}) });
  }
  return specs;
}
