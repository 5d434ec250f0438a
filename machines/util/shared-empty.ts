/**
 * Collections that most records never fill (a task's dependents, a fetch's holders) start
 * as one shared empty instance and get their own on the first write: an empty Set or Map
 * costs ~150 bytes, and a million tasks each holding a few would cost more than the rest
 * of the task. Callers keep the field typed read-only and write through these.
 */
const EMPTY_SET: ReadonlySet<never> = new Set<never>();
const EMPTY_MAP: ReadonlyMap<never, never> = new Map<never, never>();

export function emptySet<T>(): ReadonlySet<T> {
  return EMPTY_SET;
}

export function emptyMap<K, V>(): ReadonlyMap<K, V> {
  return EMPTY_MAP;
}

/** `set` with `item` added: the same set, or a new one in place of the shared empty one. */
export function withAdded<T>(set: ReadonlySet<T>, item: T): ReadonlySet<T> {
  const own = set === EMPTY_SET ? new Set<T>() : (set as Set<T>);
  own.add(item);
  return own;
}

/** `set` without `item` (the shared empty one stays as it is). */
export function withDeleted<T>(set: ReadonlySet<T>, item: T): ReadonlySet<T> {
  if (set !== EMPTY_SET) (set as Set<T>).delete(item);
  return set;
}

/** `map` with `key` set to `value`: the same map, or a new one in place of the shared empty one. */
export function withEntry<K, V>(map: ReadonlyMap<K, V>, key: K, value: V): ReadonlyMap<K, V> {
  const own = map === EMPTY_MAP ? new Map<K, V>() : (map as Map<K, V>);
  own.set(key, value);
  return own;
}

/** `map` without `key` (the shared empty one stays as it is). */
export function withoutEntry<K, V>(map: ReadonlyMap<K, V>, key: K): ReadonlyMap<K, V> {
  if (map !== EMPTY_MAP) (map as Map<K, V>).delete(key);
  return map;
}
