/** The requesting side of the data plane: what WorkerActor.gather and Client.fetch/scatter call. */
import { randomBytes } from "node:crypto";
import { ProtocolError } from "../../machines/errors.js";
import type { GetDataReply, GetDataRequest, PutDataRequest } from "../../machines/protocol.js";
import type { Msg, Transport } from "../../transport/types.js";
import { pullTransfer } from "./pull.js";
import { TransferStore } from "./transfers.js";
import { decodeValues, encodeValues } from "./value-codec.js";
import { HEADROOM_BYTES, isTransferManifest, type GetChunkRequest, type GetDataWireRequest, type PutDataReply, type PutDataWireRequest } from "./wire.js";

/** Ask the worker serving `subject` for `keys`; values arrive whole, however big. */
export async function fetchData(transport: Transport, subject: string, keys: string[], who: string, timeout: number): Promise<GetDataReply> {
  if (transport.wire === undefined) {
    const request: GetDataRequest = { op: "get-data", keys, who };
    return checkReply(await transport.request(subject, request, { timeout }), subject);
  }
  const request: GetDataWireRequest = { op: "get-data", keys, who, encoding: "v8" };
  const reply = await transport.request(subject, request, { timeout });
  if (reply instanceof Uint8Array) return checkReply(decodeValues(reply, "v8"), subject);
  const manifest = (reply as { transfer?: unknown } | null)?.transfer;
  if (isTransferManifest(manifest)) {
    const bytes = await pullTransfer(transport, subject, manifest, timeout);
    return checkReply(decodeValues(bytes, manifest.encoding), subject);
  }
  return checkReply(reply, subject);
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
  const request = msg.data as GetChunkRequest;
  const part = typeof request?.id === "string" ? transfers.chunk(request.id, request.index) : undefined;
  transport.publish(msg.reply, part ?? { error: `no chunk ${String(request?.index)} of transfer ${String(request?.id)}` });
}

function checkReply(reply: unknown, subject: string): GetDataReply {
  const r = reply as GetDataReply & { error?: unknown };
  if (typeof r !== "object" || r === null || typeof r.data !== "object" || r.data === null || !Array.isArray(r.missing)) {
    const why = typeof r?.error === "string" ? r.error : "malformed reply";
    throw new ProtocolError(`get-data from ${subject}: ${why}`);
  }
  return r;
}
