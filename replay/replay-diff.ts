/**
 * Comparing what a core produced with what the log holds, and showing what differs.
 */
import type { StateChange } from "./replay-types.js";

/**
 * Whether `live` (a value a core produced) would be logged as `logged` (a value read back
 * from the log): equality through JSON, without serialising. Undefined properties vanish,
 * non-finite numbers are null, array holes and undefined elements are null, toJSON is used.
 */
export function jsonEqual(logged: unknown, live: unknown): boolean {
  switch (typeof live) {
    case "string":
    case "boolean":
      return logged === live;
    case "number":
      return Number.isFinite(live) ? logged === live : logged === null;
    case "object":
      break;
    default:
      return false; // undefined, functions and symbols have no JSON of their own
  }
  if (live === null) return logged === null;
  const toJSON = (live as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return jsonEqual(logged, toJSON.call(live));
  if (typeof logged !== "object" || logged === null) return false;
  if (Array.isArray(live)) {
    if (!Array.isArray(logged) || logged.length !== live.length) return false;
    for (let i = 0; i < live.length; i++) {
      const element = live[i];
      if (!(vanishes(element) ? logged[i] === null : jsonEqual(logged[i], element))) return false;
    }
    return true;
  }
  if (Array.isArray(logged)) return false;
  const loggedObject = logged as Record<string, unknown>;
  let count = 0;
  for (const key in live) {
    if (!Object.hasOwn(live, key)) continue;
    const value = (live as Record<string, unknown>)[key];
    if (vanishes(value)) continue;
    if (!Object.hasOwn(loggedObject, key) || !jsonEqual(loggedObject[key], value)) return false;
    count++;
  }
  for (const key in loggedObject) if (Object.hasOwn(loggedObject, key)) count--;
  return count === 0;
}

function vanishes(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

/** A live value as the log would hold it. */
export function asLogged<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/** Paths where two JSON values differ: `a.b[2].c` and the value on each side. */
export function diffValues(before: unknown, after: unknown, path = ""): StateChange[] {
  const changes: StateChange[] = [];
  collect(before, after, path, changes);
  return changes;
}

function collect(before: unknown, after: unknown, path: string, out: StateChange[]): void {
  if (Object.is(before, after)) return;
  const bothArrays = Array.isArray(before) && Array.isArray(after);
  const bothObjects = isPlainObject(before) && isPlainObject(after);
  if (bothArrays) {
    const a = before as unknown[];
    const b = after as unknown[];
    // Lists of scalars (keys, names) read better whole than element by element.
    if (a.every(isScalar) && b.every(isScalar)) {
      if (a.length !== b.length || a.some((x, i) => !Object.is(x, b[i]))) out.push({ path: path || "(value)", before, after });
      return;
    }
    for (let i = 0; i < Math.max(a.length, b.length); i++) collect(a[i], b[i], `${path}[${i}]`, out);
    return;
  }
  if (bothObjects) {
    const a = before as Record<string, unknown>;
    const b = after as Record<string, unknown>;
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) collect(a[key], b[key], path === "" ? key : `${path}.${key}`, out);
    return;
  }
  out.push({ path: path || "(value)", before, after });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isScalar(value: unknown): boolean {
  return value === null || typeof value !== "object";
}
