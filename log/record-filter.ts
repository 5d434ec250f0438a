import type { LogRecord, RecordKind } from "./types.js";

/** Which records a reader returns; all given conditions must hold. */
export interface RecordFilter {
  /** Only this actor's records ("scheduler", "worker.w1", ...). */
  actor?: string;
  /** Only records concerning this task key (see `concernsKey`). */
  key?: string;
  kinds?: readonly RecordKind[];
}

export function compileFilter(filter: RecordFilter = {}): (record: LogRecord) => boolean {
  const { actor, key } = filter;
  const kinds = filter.kinds ? new Set(filter.kinds) : undefined;
  if (actor === undefined && key === undefined && kinds === undefined) return () => true;
  return (record) =>
    (actor === undefined || record.actor === actor) &&
    (kinds === undefined || kinds.has(record.kind)) &&
    (key === undefined || concernsKey(record, key));
}

/**
 * A transition of the machine instance `key`, or an input whose event names `key` in a
 * `key` field, a `keys` array, or a `tasks` array of objects with a `key`.
 */
export function concernsKey(record: LogRecord, key: string): boolean {
  if (record.kind === "transition") return record.id === key;
  if (record.kind !== "input") return false;
  const event = record.event;
  if (event.key === key) return true;
  if (Array.isArray(event.keys) && event.keys.includes(key)) return true;
  return Array.isArray(event.tasks) && event.tasks.some((task: unknown) => typeof task === "object" && task !== null && (task as { key?: unknown }).key === key);
}
