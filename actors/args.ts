import type { KeyRef } from "../machines/protocol.js";

/**
 * Task arguments on the wire: JSON values where `{ $key }` stands for another task's result
 * and `{ $lit: v }` protects a literal object that would otherwise look like one.
 */
export interface Encoded {
  args: unknown[];
  deps: string[];
}

export function isKeyRef(value: unknown): value is KeyRef {
  return typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as KeyRef).$key === "string" && Object.keys(value).length === 1;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Encode arguments; `refOf` turns a value into a key when it stands for a task (a Future). */
export function encodeArgs(args: readonly unknown[], refOf: (value: unknown) => string | undefined): Encoded {
  const deps = new Set<string>();
  const encode = (value: unknown): unknown => {
    const key = refOf(value);
    if (key !== undefined) {
      deps.add(key);
      return { $key: key };
    }
    if (Array.isArray(value)) return value.map(encode);
    if (isPlainObject(value)) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = encode(v);
      return "$key" in value || "$lit" in value ? { $lit: out } : out;
    }
    return value;
  };
  return { args: args.map(encode), deps: [...deps] };
}

/** Replace every `{ $key }` with the value `lookup` gives for it. */
export function decodeArgs(args: readonly unknown[], lookup: (key: string) => unknown): unknown[] {
  const decode = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(decode);
    if (isPlainObject(value)) {
      if (isKeyRef(value)) return lookup(value.$key);
      const literal = "$lit" in value && Object.keys(value).length === 1;
      const source = literal ? (value.$lit as Record<string, unknown>) : value;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(source)) out[k] = decode(v);
      return out;
    }
    return value;
  };
  return args.map(decode);
}
