import { BadOptionError, GraphError } from "../errors.js";
import { reservedKeyProblem } from "../graph/reserved-keys.js";
import type { TaskSpec } from "../protocol.js";

/** Shape checks on submitted task specs; the graph's structure is checked by validateGraph. */
export function checkTaskSpecs(specs: readonly TaskSpec[]): void {
  if (!Array.isArray(specs)) throw new GraphError("update-graph: tasks must be an array");
  const seen = new Set<string>();
  for (const spec of specs) {
    if (spec === null || typeof spec !== "object") throw new GraphError("task spec must be an object");
    const { key } = spec;
    if (typeof key !== "string" || key.length === 0) throw new GraphError(`task key must be a non-empty string, got ${JSON.stringify(key)}`);
    const reserved = reservedKeyProblem(key);
    if (reserved !== undefined) throw new GraphError(`task ${reserved}`, "GRAPH", [key]);
    if (seen.has(key)) throw new GraphError(`task ${key} is defined twice in one graph`, "GRAPH", [key]);
    seen.add(key);
    if (typeof spec.func !== "string" || spec.func.length === 0) throw new GraphError(`task ${key}: func must be a function name`, "GRAPH", [key]);
    if (!Array.isArray(spec.args)) throw new GraphError(`task ${key}: args must be an array`, "GRAPH", [key]);
    if (!Array.isArray(spec.deps) || spec.deps.some((d: unknown) => typeof d !== "string")) {
      throw new GraphError(`task ${key}: deps must be an array of keys`, "GRAPH", [key]);
    }
    if (spec.priority !== undefined && !Number.isFinite(spec.priority)) throw new BadOptionError("priority", `task ${key}: must be a finite number`);
    if (spec.retries !== undefined && !(Number.isSafeInteger(spec.retries) && spec.retries >= 0)) {
      throw new BadOptionError("retries", `task ${key}: must be a whole number >= 0, got ${JSON.stringify(spec.retries)}`);
    }
    checkNames(key, "workers", spec.workers);
    checkNames(key, "hosts", spec.hosts);
    if (spec.resources !== undefined) {
      if (spec.resources === null || typeof spec.resources !== "object" || Array.isArray(spec.resources)) throw new BadOptionError("resources", `task ${key}: must be an object`);
      for (const [name, amount] of Object.entries(spec.resources)) {
        if (typeof amount !== "number" || !(amount >= 0)) throw new BadOptionError("resources", `task ${key}: ${name} must be a number >= 0`);
      }
    }
    if (spec.allowOtherWorkers !== undefined && typeof spec.allowOtherWorkers !== "boolean") {
      throw new BadOptionError("allowOtherWorkers", `task ${key}: must be a boolean`);
    }
  }
}

function checkNames(key: string, option: string, value: unknown): void {
  if (value === undefined) return;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
    throw new BadOptionError(option, `task ${key}: must be an array of names`);
  }
}
