/** The serving side of the data plane: a worker answering get-data, get-chunk and put-data. */
import { ProtocolError, type NatschedError } from "../../machines/errors.js";
import type { GetDataListReply, GetDataReply } from "../../machines/protocol.js";
import type { Msg, Transport } from "../../transport/types.js";
import { serveChunk } from "./fetch.js";
import { pullTransfer } from "./pull.js";
import { TransferStore } from "./transfers.js";
import { decodeValues, encodeValues } from "./value-codec.js";
import { HEADROOM_BYTES, isTransferManifest, type GetDataWireRequest, type PutDataReply, type PutDataWireRequest, type TransferReply } from "./wire.js";

/** A put-data the worker refuses as a whole (DataHost.accept throws it): nothing was stored. */
export class PutDataRefused extends Error {
  constructor(
    override readonly cause: NatschedError,
    /** The keys it is about. */
    readonly keys: string[],
  ) {
    super(cause.message);
  }
}

export interface DataHost {
  readonly transport: Transport;
  /** The value held for `key` and its size, or undefined. */
  lookup(key: string): { value: unknown; nbytes: number } | undefined;
  /** Store scattered values; answers their sizes, or throws PutDataRefused having stored none. */
  accept(entries: [string, unknown][]): Record<string, number>;
  /** Milliseconds to wait for each chunk of a put being pulled. */
  readonly transferTimeout: number;
  onError?(error: unknown): void;
}

export class DataServer {
  private readonly transfers = new TransferStore();

  constructor(private readonly host: DataHost) {}

  handle(msg: Msg): void {
    const request = msg.data as { op?: unknown } | null;
    if (msg.reply === undefined) {
      this.host.onError?.(new ProtocolError(`data: dropped a message on ${msg.subject} without a reply subject: data requests are request/reply`));
      return;
    }
    if (msg.problem !== undefined || typeof request !== "object" || request === null || Array.isArray(request)) {
      const why = msg.problem ?? `a data request must be an object with an \`op\` (get-data, get-chunk, put-data), got ${describe(request)}`;
      this.host.transport.publish(msg.reply, { error: why });
      return;
    }
    if (request.op === "get-data") {
      const keys = (request as { keys?: unknown }).keys;
      if (Array.isArray(keys)) this.getData(msg.reply, request as GetDataWireRequest);
      else this.host.transport.publish(msg.reply, { error: `get-data: keys must be an array of task keys, got ${describe(keys)}` });
    } else if (request.op === "get-chunk") serveChunk(this.host.transport, this.transfers, msg);
    else if (request.op === "put-data") void this.putData(msg.reply, request as PutDataWireRequest);
    else this.host.transport.publish(msg.reply, { error: `unknown data request ${JSON.stringify(request.op)}` });
  }

  close(): void {
    this.transfers.clear();
  }

  private getData(replyTo: string, request: GetDataWireRequest): void {
    const reply = request.layout === "list" ? this.listReply(request.keys) : this.objectReply(request.keys);
    const { transport } = this.host;
    if (transport.wire === undefined) {
      transport.publish(replyTo, reply);
      return;
    }
    const encoding = request.encoding === "v8" ? "v8" : "json";
    let bytes: Uint8Array;
    try {
      bytes = encodeValues(reply, encoding);
    } catch (error) {
      // A value this encoding cannot carry (too deep, or not serializable): said, not left to time out.
      transport.publish(replyTo, { error: `get-data: ${(error as Error)?.message ?? String(error)}` });
      return;
    }
    const room = transport.wire.maxPayload - HEADROOM_BYTES;
    if (bytes.length <= room) {
      transport.publish(replyTo, bytes);
      return;
    }
    const answer: TransferReply = { transfer: this.transfers.offer(bytes, encoding, room) };
    transport.publish(replyTo, answer);
  }

  private objectReply(keys: readonly unknown[]): GetDataReply {
    const reply: GetDataReply = { data: {}, nbytes: {}, missing: [] };
    for (const key of keys) {
      const held = typeof key === "string" ? this.host.lookup(key) : undefined;
      if (held === undefined) {
        reply.missing.push(key as string);
        continue;
      }
      reply.data[key as string] = held.value;
      reply.nbytes[key as string] = held.nbytes;
    }
    return reply;
  }

  /** By position: no object with a property per key to build (nor for the requester to read). */
  private listReply(keys: readonly unknown[]): GetDataListReply {
    // Filled by push, not preallocated: a holey array would go through v8.serialize as a sparse one.
    const values: unknown[] = [];
    const nbytes: number[] = [];
    const missing: string[] = [];
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const held = typeof key === "string" ? this.host.lookup(key) : undefined;
      if (held === undefined) {
        values.push(null);
        nbytes.push(-1);
        missing.push(key as string);
        continue;
      }
      values.push(held.value);
      nbytes.push(held.nbytes);
    }
    return { values, nbytes, missing };
  }

  private async putData(replyTo: string, request: PutDataWireRequest): Promise<void> {
    const { transport } = this.host;
    let answer: PutDataReply;
    try {
      const data = await this.receivedValues(request);
      answer = { ok: true, nbytes: this.host.accept(Object.entries(data)) };
    } catch (error) {
      if (error instanceof PutDataRefused) {
        // An answer, not a fault of this worker: the requester is told what and why.
        answer = { error: error.cause.message, code: error.cause.code, keys: error.keys };
      } else {
        this.host.onError?.(error);
        answer = { error: (error as Error)?.message ?? String(error) };
      }
    }
    if (!transport.closed) transport.publish(replyTo, answer);
  }

  private async receivedValues(request: PutDataWireRequest): Promise<Record<string, unknown>> {
    const encoding = request.encoding === "v8" ? "v8" : "json";
    let decoded: unknown;
    if (typeof request.inline === "string") {
      decoded = decodeValues(Buffer.from(request.inline, "base64"), encoding);
    } else if (isTransferManifest(request.transfer) && typeof request.source === "string") {
      decoded = decodeValues(await pullTransfer(this.host.transport, request.source, request.transfer, this.host.transferTimeout), request.transfer.encoding);
    } else {
      decoded = { data: request.data };
    }
    const data = (decoded as { data?: unknown } | null)?.data;
    if (typeof data !== "object" || data === null || Array.isArray(data)) throw new Error("put-data: data must be an object of key -> value");
    return data as Record<string, unknown>;
  }
}

function describe(value: unknown): string {
  if (value === undefined) return "none";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `${typeof value} ${JSON.stringify(value)?.slice(0, 40)}`;
}
