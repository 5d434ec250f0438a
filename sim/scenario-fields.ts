/**
 * Readers for the fields of a scenario: each checks one value and throws a BadOptionError
 * naming the field by its path ("tasks[3].duration") when it is wrong.
 */
import { closestMatch } from "../machines/did-you-mean.js";
import { BadOptionError } from "../machines/errors.js";

export type Obj = Record<string, unknown>;

function show(value: unknown): string {
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  return JSON.stringify(value) ?? String(value);
}

export function readObject(value: unknown, path: string, known: readonly string[]): Obj {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new BadOptionError(path, `must be an object, got ${show(value)}`);
  }
  for (const name of Object.keys(value)) {
    if (known.includes(name)) continue;
    const suggestion = closestMatch(name, known);
    const hint = suggestion ? `; did you mean "${suggestion}"?` : ` (known: ${known.join(", ")})`;
    throw new BadOptionError(`${path}.${name}`, `unknown field${hint}`);
  }
  return value as Obj;
}

export function readArray(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw new BadOptionError(path, `must be an array, got ${show(value)}`);
  return value;
}

export function readOptionalArray(value: unknown, path: string): unknown[] {
  return value === undefined ? [] : readArray(value, path);
}

export function readName(value: unknown, path: string): string {
  if (typeof value !== "string" || value.length === 0) throw new BadOptionError(path, `must be a non-empty string, got ${show(value)}`);
  return value;
}

export function readNames(value: unknown, path: string): string[] {
  return readArray(value, path).map((item, i) => readName(item, `${path}[${i}]`));
}

interface NumberRule {
  min?: number;
  /** min is exclusive. */
  above?: number;
  integer?: boolean;
}

export function readNumber(value: unknown, path: string, rule: NumberRule = {}): number {
  const ok =
    typeof value === "number" &&
    Number.isFinite(value) &&
    (rule.integer !== true || Number.isInteger(value)) &&
    (rule.min === undefined || value >= rule.min) &&
    (rule.above === undefined || value > rule.above);
  if (ok) return value;
  const kind = rule.integer ? "a whole number" : "a finite number";
  const bound = rule.min !== undefined ? ` >= ${rule.min}` : rule.above !== undefined ? ` > ${rule.above}` : "";
  throw new BadOptionError(path, `must be ${kind}${bound}, got ${show(value)}`);
}

export function readOptionalNumber(value: unknown, path: string, fallback: number, rule: NumberRule = {}): number {
  return value === undefined ? fallback : readNumber(value, path, rule);
}

export function readBoolean(value: unknown, path: string): boolean {
  if (typeof value !== "boolean") throw new BadOptionError(path, `must be true or false, got ${show(value)}`);
  return value;
}

export function readResources(value: unknown, path: string): Record<string, number> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new BadOptionError(path, `must be an object of resource name -> amount, got ${show(value)}`);
  }
  const out: Record<string, number> = {};
  for (const [name, amount] of Object.entries(value)) out[name] = readNumber(amount, `${path}.${name}`, { min: 0 });
  return out;
}
