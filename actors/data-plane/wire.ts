/**
 * The data plane's messages on `natsched.<cluster>.data.<worker>` (docs/nats.md). On a
 * transport that passes payloads by reference these are the plain GetDataRequest /
 * PutDataRequest of machines/protocol.ts; across a wire values are serialized into one blob,
 * and a blob bigger than a message is pulled in chunks by the side that receives it.
 */
import type { GetDataLayout } from "../../machines/protocol.js";

export type ValueEncoding = "v8" | "json";

/** Describes a blob waiting to be pulled with get-chunk requests. */
export interface TransferManifest {
  id: string;
  /** Bytes in the blob. */
  size: number;
  /** Bytes per chunk (the last one may be shorter). */
  chunkBytes: number;
  chunks: number;
  encoding: ValueEncoding;
}

/** get-data as it crosses a wire: `encoding` picks how the reply's values are serialized. */
export interface GetDataWireRequest {
  op: "get-data";
  keys: string[];
  who: string;
  /** Default "json", so any NATS client can read the reply. */
  encoding?: ValueEncoding;
  /** As GetDataRequest's: default "object". */
  layout?: GetDataLayout;
}

/** Answer to a get-data whose serialized reply does not fit in one message. */
export interface TransferReply {
  transfer: TransferManifest;
}

export interface GetChunkRequest {
  op: "get-chunk";
  id: string;
  index: number;
}

/** put-data as it crosses a wire: values inline (JSON or base64 blob) or a blob to pull from `source`. */
export interface PutDataWireRequest {
  op: "put-data";
  who: string;
  /** JSON values, as on the in-process bus. */
  data?: Record<string, unknown>;
  encoding?: ValueEncoding;
  /** The serialized `{ data }`, base64. */
  inline?: string;
  /** Pull the serialized `{ data }` with get-chunk requests on `source`. */
  transfer?: TransferManifest;
  source?: string;
}

export interface PutDataReply {
  ok?: boolean;
  nbytes?: Record<string, number>;
  error?: string;
  /**
   * With `error`, for a refusal (nothing was stored): KEY_EXISTS, the worker already has
   * `keys` (scatter never overwrites); PROTOCOL, `keys` are reserved (machines/graph/reserved-keys.ts).
   */
  code?: string;
  keys?: string[];
}

/** Room left in a message for headers and framing. */
export const HEADROOM_BYTES = 4096;

export function isTransferManifest(value: unknown): value is TransferManifest {
  const m = value as TransferManifest;
  return (
    typeof m === "object" &&
    m !== null &&
    typeof m.id === "string" &&
    Number.isSafeInteger(m.size) &&
    m.size >= 0 &&
    Number.isSafeInteger(m.chunkBytes) &&
    m.chunkBytes > 0 &&
    Number.isSafeInteger(m.chunks) &&
    m.chunks === Math.ceil(m.size / m.chunkBytes) &&
    (m.encoding === "v8" || m.encoding === "json")
  );
}
