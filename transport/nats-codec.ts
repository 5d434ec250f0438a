/**
 * How Transport payloads become NATS message bodies. A Uint8Array travels as raw bytes,
 * marked by the `Natsched-Encoding: bytes` header; anything else is JSON text without a
 * header, so any NATS client can read and write natsched's control messages.
 */
import { ProtocolError } from "../machines/errors.js";
import { MAX_JSON_NESTING, nestsDeeperThan } from "./json-nesting.js";
import type { Payload } from "./types.js";

export const ENCODING_HEADER = "Natsched-Encoding";
export const BYTES_ENCODING = "bytes";

export interface EncodedPayload {
  bytes: Uint8Array;
  binary: boolean;
}

const EMPTY = new Uint8Array(0);

export function encodePayload(subject: string, data: Payload): EncodedPayload {
  if (data instanceof Uint8Array) return { bytes: data, binary: true };
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch (error) {
    throw new ProtocolError(`payload on ${subject} is not JSON-serializable: ${(error as Error).message}`);
  }
  // JSON.stringify(undefined) is undefined: an empty body, read back as undefined.
  return { bytes: json === undefined ? EMPTY : Buffer.from(json, "utf8"), binary: false };
}

/** The payload of a received body. Throws ProtocolError on a body that is not JSON, or nests too deep (json-nesting.ts). */
export function decodePayload(subject: string, body: Uint8Array, binary: boolean): Payload {
  // The client hands out views into its read buffer: bytes kept beyond the callback are copied.
  if (binary) return Buffer.from(body);
  if (body.length === 0) return undefined;
  if (nestsDeeperThan(body)) throw new ProtocolError(`message on ${subject} nests arrays and objects deeper than ${MAX_JSON_NESTING} levels (${body.length} bytes)`);
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");
  try {
    return JSON.parse(text) as Payload;
  } catch {
    throw new ProtocolError(`message on ${subject} is not JSON (${body.length} bytes starting ${JSON.stringify(text.slice(0, 40))})`);
  }
}
