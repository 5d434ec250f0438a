import { forEachNamedKey } from "./record-keys.js";
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

/** Whether `record` names `key`: the keys `forEachNamedKey` (record-keys.ts) gives. */
export function concernsKey(record: LogRecord, key: string): boolean {
  if (record.kind === "transition") return record.id === key;
  let found = false;
  forEachNamedKey(record, (named) => {
    if (named === key) found = true;
  });
  return found;
}
