/** Checks of the values a client's user calls take (the Client throws what they throw, at once). */
import { BadOptionError } from "../errors.js";
import { reservedKeyProblem } from "../graph/reserved-keys.js";

/** What `value` is, for a message: `number 5`, `an array`, `null`, `a Map`. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return `an object (${(value as object).constructor?.name ?? "no prototype"})`;
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value} ${String(value)}`;
}

/** A `timeout` option: milliseconds, a finite number >= 0, or absent. */
export function checkTimeout(opts: { timeout?: number } | undefined): number | undefined {
  if (opts === undefined) return undefined;
  if (typeof opts !== "object" || opts === null) throw new BadOptionError("options", "must be an object");
  const timeout = opts.timeout;
  if (timeout === undefined) return undefined;
  if (typeof timeout !== "number" || !(timeout >= 0) || !Number.isFinite(timeout)) {
    throw new BadOptionError("timeout", `milliseconds, a finite number >= 0, got ${describeValue(timeout)}`);
  }
  return timeout;
}

/** Explicit keys of `map` or `scatter`: one non-empty string per item, no two the same. */
export function checkKeys(keys: unknown, items: number, call: string): void {
  if (!Array.isArray(keys)) throw new BadOptionError("keys", `${call}: must be an array of keys, one per item, got ${describeValue(keys)}`);
  if (keys.length !== items) throw new BadOptionError("keys", `${call}: ${keys.length} key(s) for ${items} item(s): give one key per item`);
  const seen = new Set<string>();
  keys.forEach((key, i) => {
    if (typeof key !== "string" || key.length === 0) throw new BadOptionError("keys", `${call}: keys[${i}] must be a non-empty string, got ${describeValue(key)}`);
    if (seen.has(key)) throw new BadOptionError("keys", `${call}: key ${JSON.stringify(key)} is given twice`);
    const reserved = reservedKeyProblem(key);
    if (reserved !== undefined) throw new BadOptionError("keys", `${call}: ${reserved}`);
    seen.add(key);
  });
}

/** The type of a scattered value, the prefix of its key: `number`, `array`, `map`. */
export function typeName(value: unknown): string {
  if (Array.isArray(value)) return "array";
  if (value === null) return "null";
  if (typeof value === "object") return (value as object).constructor?.name?.toLowerCase() || "object";
  return typeof value;
}
