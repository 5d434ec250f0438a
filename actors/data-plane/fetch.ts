/** The requesting side of the data plane: what WorkerActor.gather and Client.fetch/scatter call. */
import { randomBytes } from "node:crypto";
import { ProtocolError } from "../../machines/errors.js";
import type { GetDataListReply, GetDataReply, GetDataRequest, PutDataRequest } from "../../machines/protocol.js";
import { sizeof } from "../sizeof.js";
import type { Msg, Transport } from "../../transport/types.js";
import { pullTransfer } from "./pull.js";
import { TransferStore } from "./transfers.js";
import { decodeValues, encodeValues } from "./value-codec.js";
import { HEADROOM_BYTES, isTransferManifest, type GetChunkRequest, type GetDataWireRequest, type PutDataReply, type PutDataWireRequest } from "./wire.js";

/**
 * A holder answered a get-data with an error: it has the keys but says why it will not send
 * them (a value no encoding can carry), so asking it again gets the same answer.
 */
export class HolderRefusedError extends ProtocolError {}

/** What a worker answered about each key asked for, by position in the request's keys. */
export interface FetchedData {
  /** The value of keys[i] (meaningless where nbytes[i] is -1). */
  values: unknown[];
  /** Bytes of keys[i]'s value as its holder counts them; -1: the holder does not have it. */
  nbytes: number[];
}

/** Ask the worker serving `subject` for `keys`; values arrive whole, however big. */
export async function fetchData(transport: Transport, subject: string, keys: string[], who: string, timeout: number): Promise<FetchedData> {
  if (transport.wire === undefined) {
    const request: GetDataRequest = { op: "get-data", keys, who, layout: "list" };
    return checkReply(await transport.request(subject, request, { timeout }), keys, subject);
  }
  const request: GetDataWireRequest = { op: "get-data", keys, who, encoding: "v8", layout: "list" };
  const reply = await transport.request(subject, request, { timeout });
  if (reply instanceof Uint8Array) return checkReply(decodeValues(reply, "v8"), keys, subject);
  const manifest = (reply as { transfer?: unknown } | null)?.transfer;
  if (isTransferManifest(manifest)) {
    const bytes = await pullTransfer(transport, subject, manifest, timeout);
    return checkReply(decodeValues(bytes, manifest.encoding), keys, subject);
  }
  return checkReply(reply, keys, subject);
}

/**
 * Hand `data` to the worker serving `subject` (scatter). Across a wire a blob too big for
 * one message is offered on `${sourcePrefix}.<id>` for the worker to pull.
 */
export async function putData(
  transport: Transport,
  subject: string,
  data: Record<string, unknown>,
  who: string,
  opts: { timeout: number; sourcePrefix: string },
): Promise<PutDataReply> {
  if (transport.wire === undefined) {
    const request: PutDataRequest = { op: "put-data", data, who };
    return (await transport.request(subject, request, { timeout: opts.timeout })) as PutDataReply;
  }
  const bytes = encodeValues({ data }, "v8");
  const room = transport.wire.maxPayload - HEADROOM_BYTES;
  if (Math.ceil(bytes.length / 3) * 4 <= room) {
    const request: PutDataWireRequest = { op: "put-data", who, encoding: "v8", inline: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64") };
    return (await transport.request(subject, request, { timeout: opts.timeout })) as PutDataReply;
  }
  const transfers = new TransferStore();
  const transfer = transfers.offer(bytes, "v8", room);
  const source = `${opts.sourcePrefix}.${randomBytes(6).toString("hex")}`;
  const sub = transport.subscribe(source, (msg) => serveChunk(transport, transfers, msg));
  try {
    // The subscription reaches the server before the request does: one connection keeps order.
    const request: PutDataWireRequest = { op: "put-data", who, encoding: "v8", transfer, source };
    return (await transport.request(subject, request, { timeout: opts.timeout })) as PutDataReply;
  } finally {
    sub.unsubscribe();
    transfers.clear();
  }
}

/** Answer a get-chunk request from `transfers`. */
export function serveChunk(transport: Transport, transfers: TransferStore, msg: Msg): void {
  if (msg.reply === undefined) return;
  if (msg.problem !== undefined) {
    transport.publish(msg.reply, { error: msg.problem });
    return;
  }
  const request = msg.data as GetChunkRequest;
  const part = typeof request?.id === "string" ? transfers.chunk(request.id, request.index) : undefined;
  transport.publish(msg.reply, part ?? { error: `no chunk ${String(request?.index)} of transfer ${String(request?.id)}` });
}

/**
 * The reply as FetchedData. A worker that does not know layout "list" (an older one, or
 * another implementation) answers keyed by key: that is taken too.
 */
function checkReply(reply: unknown, keys: readonly string[], subject: string): FetchedData {
  const r = reply as Partial<GetDataListReply> & Partial<GetDataReply> & { error?: unknown };
  const bad = (why: string): never => {
    if (typeof r?.error === "string") throw new HolderRefusedError(`get-data from ${subject}: ${r.error}`);
    throw new ProtocolError(`get-data from ${subject}: ${why}`);
  };
  if (typeof r !== "object" || r === null || !Array.isArray(r.missing)) return bad("malformed reply");
  if (Array.isArray(r.values)) {
    const nbytes = r.nbytes;
    if (!Array.isArray(nbytes) || r.values.length !== keys.length || nbytes.length !== keys.length) {
      return bad(`malformed reply (${r.values.length} values and ${Array.isArray(nbytes) ? nbytes.length : "no"} sizes for ${keys.length} keys)`);
    }
    for (let i = 0; i < nbytes.length; i++) if (typeof nbytes[i] !== "number") return bad(`malformed reply (size ${i} is not a number)`);
    return { values: r.values, nbytes };
  }
  const data = r.data;
  if (typeof data !== "object" || data === null) return bad("malformed reply");
  const sizes: Record<string, unknown> = typeof r.nbytes === "object" && r.nbytes !== null && !Array.isArray(r.nbytes) ? r.nbytes : {};
  const values: unknown[] = [];
  const nbytes: number[] = [];
  for (const key of keys) {
    const held = Object.prototype.hasOwnProperty.call(data, key);
    const value = held ? data[key] : null;
    values.push(value);
    const size = sizes[key];
    nbytes.push(held ? (typeof size === "number" ? size : sizeof(value)) : -1);
  }
  return { values, nbytes };
}
