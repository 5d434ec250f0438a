/**
 * Values on the wire. "v8" (v8.serialize) keeps what structured clone keeps: typed arrays,
 * Maps, Sets, Dates, BigInts, undefined, NaN and Infinity; natsched's own actors use it.
 * "json" is for clients in other languages: typed arrays and Sets become arrays, a Map an
 * array of [key, value] pairs, a BigInt its decimal string, undefined null.
 */
import { deserialize, serialize } from "node:v8";
import { ProtocolError } from "../../machines/errors.js";
import { MAX_JSON_NESTING, nestsDeeperThan } from "../../transport/json-nesting.js";
import type { ValueEncoding } from "./wire.js";

export function encodeValues(value: unknown, encoding: ValueEncoding): Uint8Array {
  if (encoding === "v8") {
    try {
      return serialize(value);
    } catch (error) {
      throw new ProtocolError(`cannot serialize a value for transfer: ${(error as Error).message}`);
    }
  }
  try {
    return Buffer.from(JSON.stringify(value, jsonSafe), "utf8");
  } catch (error) {
    throw new ProtocolError(`cannot write a value as JSON for transfer: ${(error as Error).message}`);
  }
}

export function decodeValues(bytes: Uint8Array, encoding: ValueEncoding): unknown {
  if (encoding === "json" && nestsDeeperThan(bytes)) throw new ProtocolError(`cannot decode transferred data (json, ${bytes.length} bytes): it nests deeper than ${MAX_JSON_NESTING} levels`);
  try {
    if (encoding === "v8") return deserialize(bytes);
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"));
  } catch (error) {
    throw new ProtocolError(`cannot decode transferred data (${encoding}, ${bytes.length} bytes): ${(error as Error).message}`);
  }
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (typeof value !== "object" || value === null) return value;
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    return Array.from(value as unknown as ArrayLike<number | bigint>, (x) => (typeof x === "bigint" ? x.toString() : x));
  }
  if (value instanceof Map) return [...value.entries()];
  if (value instanceof Set) return [...value];
  return value;
}
