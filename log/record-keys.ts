import type { LogRecord } from "./types.js";

/**
 * Calls `each` with every task key `record` names, exactly the keys for which
 * `concernsKey(record, key)` (record-filter.ts) holds: a transition's id; an input's `key`,
 * the strings of its `keys`, the `key` of each of its `tasks`. A key may come more than once.
 */
export function forEachNamedKey(record: LogRecord, each: (key: string) => void): void {
  if (record.kind === "transition") {
    each(record.id);
    return;
  }
  if (record.kind !== "input") return;
  const event = record.event;
  if (typeof event.key === "string") each(event.key);
  if (Array.isArray(event.keys)) for (const key of event.keys) if (typeof key === "string") each(key);
  if (Array.isArray(event.tasks)) {
    for (const task of event.tasks) {
      const key = typeof task === "object" && task !== null ? (task as { key?: unknown }).key : undefined;
      if (typeof key === "string") each(key);
    }
  }
}

/**
 * A 31-bit FNV-1a hash of a key's UTF-16 code units: what the index files keys under. Two
 * keys may share a hash; readers check every record they fetch, so a shared hash costs a
 * block read, never a wrong answer.
 */
export function keyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 1) & 0x7fffffff;
}
