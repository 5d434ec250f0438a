/**
 * Estimated bytes a value occupies, for placement and transfer decisions (Dask's
 * `sizeof`). Large arrays and objects are sampled, so the cost stays bounded.
 */
const SAMPLE = 16;

export function sizeof(value: unknown, depth = 0): number {
  switch (typeof value) {
    case "number":
    case "bigint":
      return 8;
    case "boolean":
      return 4;
    case "string":
      return 16 + 2 * value.length;
    case "undefined":
    case "symbol":
    case "function":
      return 8;
    case "object":
      break;
  }
  if (value === null) return 8;
  if (ArrayBuffer.isView(value)) return 64 + value.byteLength;
  if (value instanceof ArrayBuffer) return 64 + value.byteLength;
  if (depth > 8) return 64;
  if (Array.isArray(value)) return 32 + sampled(value, value.length, depth);
  if (value instanceof Map) return 64 + sampled([...value.entries()].slice(0, SAMPLE), value.size, depth);
  if (value instanceof Set) return 64 + sampled([...value].slice(0, SAMPLE), value.size, depth);
  const keys = Object.keys(value as object);
  const sampleKeys = keys.length > SAMPLE ? keys.slice(0, SAMPLE) : keys;
  let bytes = 0;
  for (const k of sampleKeys) bytes += 16 + 2 * k.length + sizeof((value as Record<string, unknown>)[k], depth + 1);
  return 32 + (sampleKeys.length === 0 ? 0 : (bytes * keys.length) / sampleKeys.length);
}

function sampled(items: readonly unknown[], total: number, depth: number): number {
  if (total === 0) return 0;
  const n = Math.min(items.length, SAMPLE);
  let bytes = 0;
  if (items.length <= SAMPLE) {
    for (const item of items) bytes += 8 + sizeof(item, depth + 1);
    return bytes;
  }
  const step = items.length / n;
  for (let i = 0; i < n; i++) bytes += 8 + sizeof(items[Math.floor(i * step)], depth + 1);
  return Math.round((bytes * total) / n);
}
