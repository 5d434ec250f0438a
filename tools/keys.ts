/**
 * Task keys of a log: listed by prefix and state (`natsched keys`), and a prefix resolved to
 * the one key it names (`natsched story <prefix>`). Keys are long hashes; a person types the
 * first few characters.
 */
import { BadOptionError, NatschedError } from "../machines/errors.js";
import { taskMachine } from "../machines/definitions/task.js";
import type { ClusterFold, TaskFacts } from "../log/cluster-fold.js";

/** How many candidates an ambiguous prefix lists. */
export const CANDIDATES_SHOWN = 10;

/** No key of the log starts with the prefix. */
export class NoSuchKeyError extends NatschedError {
  constructor(readonly prefix: string, where: string) {
    super("NO_SUCH_KEY", `no record of ${prefix} in ${where}: no key is it or starts with it (natsched keys ${where} lists them)`);
  }
}

/** More than one key starts with the prefix: `candidates` are the first few (sorted), `count` all of them. */
export class AmbiguousKeyError extends NatschedError {
  constructor(readonly prefix: string, readonly candidates: string[], readonly count: number) {
    super("AMBIGUOUS_KEY", `${count} keys start with ${JSON.stringify(prefix)}: ${candidates.join(", ")}${count > candidates.length ? `, ... (${count - candidates.length} more)` : ""}; give more of the key`);
  }
}

/** A key given whole is that key (even if it is the prefix of others too); else the one key starting with `prefix`. */
export function resolveKey(keys: Iterable<string>, prefix: string, where: string): string {
  const matches: string[] = [];
  for (const key of keys) {
    if (key === prefix) return key;
    if (key.startsWith(prefix)) matches.push(key);
  }
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new NoSuchKeyError(prefix, where);
  matches.sort();
  throw new AmbiguousKeyError(prefix, matches.slice(0, CANDIDATES_SHOWN), matches.length);
}

/** The scheduler's task states, nested ones as "processing.assigned". */
export function taskStates(): string[] {
  const out: string[] = [];
  const walk = (states: Record<string, { states?: Record<string, unknown> }> | undefined, prefix: string): void => {
    for (const [name, node] of Object.entries(states ?? {})) {
      out.push(prefix + name);
      walk(node.states as Record<string, { states?: Record<string, unknown> }> | undefined, `${prefix}${name}.`);
    }
  };
  walk(taskMachine.config.states as Record<string, { states?: Record<string, unknown> }>, "");
  return out;
}

/** Throws BadOptionError, listing the states, unless `state` is a task state. */
export function checkTaskState(state: string): void {
  if (!taskStates().includes(state)) throw new BadOptionError("--state", `no task state ${JSON.stringify(state)} (states: ${taskStates().join(", ")})`);
}

export interface KeyQuery {
  prefix?: string;
  /** A task state; "processing" takes its sub-states too. */
  state?: string;
  /** At most this many rows (all are counted). */
  limit?: number;
}

/** The scheduler's tasks matching `query`, sorted by key, and how many matched in all. */
export function listKeys(fold: ClusterFold, query: KeyQuery): { rows: TaskFacts[]; total: number } {
  const { prefix = "", state, limit = Infinity } = query;
  if (state !== undefined) checkTaskState(state);
  const matched: TaskFacts[] = [];
  for (const task of fold.tasks.values()) {
    if (!task.key.startsWith(prefix)) continue;
    if (state !== undefined && task.state !== state && !task.state.startsWith(`${state}.`)) continue;
    matched.push(task);
  }
  matched.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { rows: matched.slice(0, limit), total: matched.length };
}
