import { BadOptionError } from "../machines/errors.js";
import { describeValue } from "../machines/client/arguments.js";
import { reservedKeyProblem } from "../machines/graph/reserved-keys.js";
import type { Restrictions } from "../machines/protocol.js";

export interface SubmitOptions {
  /** The task's key; by default `<func>-<hash of func and args>` (pure) or a random one. */
  key?: string;
  /** Higher runs first (Dask's user priority). */
  priority?: number;
  /** Hard restriction: only these workers (names) may run it. */
  workers?: string | string[];
  /** Hard restriction: only workers on these hosts. */
  hosts?: string | string[];
  /** Make `workers`/`hosts` a preference: run elsewhere if none of them can. */
  allowOtherWorkers?: boolean;
  /** Abstract resources the task needs, e.g. { GPU: 1 }. */
  resources?: Record<string, number>;
  /** Same function and arguments give the same key, so the work is shared (default true). */
  pure?: boolean;
  /** Times the task is run again if its function fails (Dask's `retries`; default 0). Not part of the key. */
  retries?: number;
}

const KNOWN = new Set(["key", "priority", "workers", "hosts", "allowOtherWorkers", "resources", "pure", "retries"]);

/** A `retries` option: a whole number >= 0, or absent. */
export function checkRetries(retries: unknown): void {
  if (retries === undefined) return;
  if (typeof retries !== "number" || !Number.isSafeInteger(retries) || retries < 0) {
    throw new BadOptionError("retries", `times a failing task is run again: a whole number >= 0, got ${describeValue(retries)}`);
  }
}

export function checkSubmitOptions(options: object): void {
  if (typeof options !== "object" || options === null) throw new BadOptionError("options", "must be an object");
  const o = options as SubmitOptions;
  for (const name of Object.keys(o)) if (!KNOWN.has(name)) throw new BadOptionError(name, `unknown option (known: ${[...KNOWN].join(", ")})`);
  if (o.key !== undefined && (typeof o.key !== "string" || o.key.length === 0)) throw new BadOptionError("key", "must be a non-empty string");
  const reserved = o.key === undefined ? undefined : reservedKeyProblem(o.key);
  if (reserved !== undefined) throw new BadOptionError("key", reserved);
  if (o.priority !== undefined && !Number.isFinite(o.priority)) throw new BadOptionError("priority", "must be a finite number");
  for (const name of ["workers", "hosts"] as const) {
    const v = o[name];
    if (v === undefined) continue;
    const list = typeof v === "string" ? [v] : v;
    if (!Array.isArray(list) || list.length === 0 || list.some((x) => typeof x !== "string" || x.length === 0)) {
      throw new BadOptionError(name, "must be a name or a non-empty array of names");
    }
  }
  if (o.allowOtherWorkers !== undefined && typeof o.allowOtherWorkers !== "boolean") throw new BadOptionError("allowOtherWorkers", "must be a boolean");
  if (o.pure !== undefined && typeof o.pure !== "boolean") throw new BadOptionError("pure", "must be a boolean");
  checkRetries(o.retries);
  if (o.resources !== undefined) {
    if (typeof o.resources !== "object" || o.resources === null || Array.isArray(o.resources)) throw new BadOptionError("resources", "must be an object of amounts");
    for (const [name, amount] of Object.entries(o.resources)) {
      if (typeof amount !== "number" || !(amount >= 0) || !Number.isFinite(amount)) throw new BadOptionError("resources", `${name} must be a finite number >= 0`);
    }
  }
}

/** The restriction, priority and retries fields of a TaskSpec. */
export function specOptions(o: Omit<SubmitOptions, "key">): Restrictions & { priority?: number; retries?: number } {
  const out: Restrictions & { priority?: number; retries?: number } = {};
  if (o.priority !== undefined) out.priority = o.priority;
  if (o.retries !== undefined && o.retries > 0) out.retries = o.retries;
  if (o.workers !== undefined) out.workers = typeof o.workers === "string" ? [o.workers] : [...o.workers];
  if (o.hosts !== undefined) out.hosts = typeof o.hosts === "string" ? [o.hosts] : [...o.hosts];
  if (o.resources !== undefined) out.resources = { ...o.resources };
  if (o.allowOtherWorkers !== undefined) out.allowOtherWorkers = o.allowOtherWorkers;
  return out;
}
