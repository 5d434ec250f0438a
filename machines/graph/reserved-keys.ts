/**
 * Task keys that are property names of every JavaScript object (`__proto__`, `constructor`,
 * `toString`, ...). Results, sizes and holders travel in plain objects keyed by task key
 * (a `get-data` reply's `data`, `nbytes`, `whoHas`, a scatter's batch): under such a key a
 * value would set the object's prototype or be shadowed by an inherited one, and a gather
 * would never see it. natsched refuses these keys at every door instead (the client, the
 * scheduler's graph and scatter checks), with a typed error.
 */
const RESERVED = new Set(Object.getOwnPropertyNames(Object.prototype));

export function isReservedKey(key: string): boolean {
  return RESERVED.has(key);
}

/** Why `key` cannot be a task key, or undefined if it can. */
export function reservedKeyProblem(key: string): string | undefined {
  if (!RESERVED.has(key)) return undefined;
  return `key ${JSON.stringify(key)} is a property name of every JavaScript object (Object.prototype): it cannot be a task key; choose another`;
}
