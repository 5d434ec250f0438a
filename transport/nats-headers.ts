/**
 * natsched's NATS headers (Natsched-Seq, Natsched-Prev, Natsched-Encoding, Natsched-Frag),
 * written and read without nats.js's MsgHdrs. The bytes on the wire are the NATS header
 * block nats.js writes (`NATS/1.0\r\n<Key>: <value>\r\n...\r\n`), so any NATS client reads
 * them as headers; but nats.js's `headers()` / `set` / `encode` and its lazy `msg.headers`
 * parse do far more per message (key validation, a Map of arrays, a regex per value, a
 * filtered key list per `get`) than building or reading the one string here does, and the
 * scheduler sends and receives a few
 * messages per task, each with these headers.
 */
import type { MsgHdrs, Msg as NatsMsg } from "@nats-io/transport-node";
import { BYTES_ENCODING, ENCODING_HEADER } from "./nats-codec.js";
import { FRAGMENT_HEADER } from "./nats-fragments.js";

export const SEQ_HEADER = "Natsched-Seq";
/** The n of the sender's previous message on the same subject; absent when there was none. */
export const PREV_HEADER = "Natsched-Prev";

/** What natsched reads from a received message's headers ("" for a header that is absent). */
export interface NatschedHeaders {
  seq: string;
  prev: string;
  binary: boolean;
  fragment: string;
  /** The status code of the header block's first line (503: no responders), 0 when none. */
  status: number;
}

/**
 * The header block of an outgoing message: the same bytes nats.js's MsgHdrs would encode
 * for these headers, in this order. nats-core's publish asks the headers it is given for
 * nothing but `encode()` (MsgHdrsImpl's; not in the public MsgHdrs type):
 * tests/nats-headers.test.ts checks the bytes, and every NATS test publishes through it.
 */
export function encodeHeaders(binary: boolean, tag: string, prev: number, fragment: string): MsgHdrs {
  let s = "NATS/1.0";
  if (binary) s += `\r\n${ENCODING_HEADER}: ${BYTES_ENCODING}`;
  if (tag !== "") s += `\r\n${SEQ_HEADER}: ${tag}`;
  if (prev !== 0) s += `\r\n${PREV_HEADER}: ${prev}`;
  if (fragment !== "") s += `\r\n${FRAGMENT_HEADER}: ${fragment}`;
  // Only `encode` is ever called on it (see above): typed as what nats.js's publish takes.
  return new EncodedHeaders(Buffer.from(`${s}\r\n\r\n`, "latin1")) as unknown as MsgHdrs;
}

/** Our values are ASCII (nuid tags, numbers, "bytes"): latin1 is their UTF-8. */
class EncodedHeaders {
  constructor(private readonly bytes: Uint8Array) {}
  encode(): Uint8Array {
    return this.bytes;
  }
}

const NO_HEADERS: NatschedHeaders = { seq: "", prev: "", binary: false, fragment: "", status: 0 };

/**
 * natsched's headers of a received message, or undefined when it has no header block.
 * Reads the raw header bytes nats-core keeps on its messages (`_rdata`, `_msg.hdr`) when they
 * are there, else (another message class, a non-ASCII header block) `msg.headers`. Same
 * reading as nats.js's `msg.headers.get(key)`: exact key, first value, trimmed.
 */
export function readHeaders(msg: NatsMsg): NatschedHeaders | undefined {
  const raw = msg as unknown as { _rdata?: unknown; _msg?: { hdr?: unknown } };
  const hdr = raw._msg?.hdr;
  if (typeof hdr === "number" && raw._rdata instanceof Uint8Array) {
    if (hdr <= 0) return undefined;
    const text = latin1(raw._rdata, hdr);
    if (text !== undefined) return parseHeaderBlock(text);
  }
  const hdrs = msg.headers;
  if (hdrs === undefined) return undefined;
  return {
    seq: hdrs.get(SEQ_HEADER),
    prev: hdrs.get(PREV_HEADER),
    binary: hdrs.get(ENCODING_HEADER) === BYTES_ENCODING,
    fragment: hdrs.get(FRAGMENT_HEADER),
    status: hdrs.code,
  };
}

/** The first `length` bytes as text, when they are all ASCII (else undefined: UTF-8 needs decoding). */
function latin1(bytes: Uint8Array, length: number): string | undefined {
  for (let i = 0; i < length; i++) if (bytes[i]! > 0x7f) return undefined;
  return Buffer.from(bytes.buffer, bytes.byteOffset, length).toString("latin1");
}

/** A header block's natsched headers (`NATS/1.0[ status]\r\nKey: value\r\n...`). */
export function parseHeaderBlock(text: string): NatschedHeaders {
  const status = statusOf(text);
  if (text.indexOf("\r\nNatsched-") < 0) return status === 0 ? NO_HEADERS : { ...NO_HEADERS, status };
  let seq: string | undefined;
  let prev: string | undefined;
  let encoding: string | undefined;
  let fragment: string | undefined;
  // Line by line after the status line, as nats.js's MsgHdrsImpl.decode splits it.
  let at = text.indexOf("\r\n");
  while (at >= 0) {
    const start = at + 2;
    const end = text.indexOf("\r\n", start);
    const stop = end < 0 ? text.length : end;
    const colon = text.indexOf(":", start);
    if (colon >= 0 && colon < stop) {
      const key = text.slice(start, colon);
      if (key === SEQ_HEADER) seq ??= text.slice(colon + 1, stop).trim();
      else if (key === PREV_HEADER) prev ??= text.slice(colon + 1, stop).trim();
      else if (key === ENCODING_HEADER) encoding ??= text.slice(colon + 1, stop).trim();
      else if (key === FRAGMENT_HEADER) fragment ??= text.slice(colon + 1, stop).trim();
    }
    at = end;
  }
  return { seq: seq ?? "", prev: prev ?? "", binary: encoding === BYTES_ENCODING, fragment: fragment ?? "", status };
}

const VERSION_LINE = "NATS/1.0";

/** The code of a status line like `NATS/1.0 503` (what nats.js's MsgHdrs.code says), else 0. */
function statusOf(text: string): number {
  const eol = text.indexOf("\r\n");
  const line = eol < 0 ? text : text.slice(0, eol);
  if (line === VERSION_LINE) return 0;
  const rest = line.replace(VERSION_LINE, "").trim();
  if (rest.length === 0) return 0;
  const code = parseInt(rest, 10);
  return Number.isNaN(code) ? 0 : code;
}
