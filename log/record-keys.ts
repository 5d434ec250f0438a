import type { LogRecord } from "./types.js";

/**
 * Calls `each` with every task key `record` names, exactly the keys for which
 * `concernsKey(record, key)` (record-filter.ts) holds: a transition's id; an input's `key`,
 * the strings of its `keys`, the `key` of each object in its `tasks`, `received` and `data`;
 * and the same fields of each op in its `ops` (a client's `reports`, a scheduler's client
 * envelope). A key may come more than once.
 */
export function forEachNamedKey(record: LogRecord, each: (key: string) => void): void {
  if (record.kind === "transition") {
    each(record.id);
    return;
  }
  if (record.kind !== "input") return;
  const event = record.event as Record<string, unknown>;
  eachKeyOf(event, each);
  if (Array.isArray(event.ops)) for (const op of event.ops) if (typeof op === "object" && op !== null) eachKeyOf(op as Record<string, unknown>, each);
}

function eachKeyOf(fields: Record<string, unknown>, each: (key: string) => void): void {
  if (typeof fields.key === "string") each(fields.key);
  if (Array.isArray(fields.keys)) for (const key of fields.keys) if (typeof key === "string") each(key);
  eachObjectKey(fields.tasks, each);
  eachObjectKey(fields.received, each);
  eachObjectKey(fields.data, each);
}

function eachObjectKey(list: unknown, each: (key: string) => void): void {
  if (!Array.isArray(list)) return;
  for (const item of list) {
    const key = typeof item === "object" && item !== null ? (item as { key?: unknown }).key : undefined;
    if (typeof key === "string") each(key);
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
