import { ProtocolError } from "../../machines/errors.js";
import type { Transport } from "../../transport/types.js";
import type { GetChunkRequest, TransferManifest } from "./wire.js";

/** Chunk requests in flight at once: the puller's flow control. */
export const PULL_WINDOW = 4;

/**
 * Fetch every chunk of a blob from `subject` (a few requests in flight) and reassemble it.
 * Memory grows with the chunks that arrive, not with the size the manifest claims: a manifest
 * is the requester's word (a put-data may come from anyone), and a claimed size of gigabytes
 * costs nothing until someone actually sends the bytes.
 */
export async function pullTransfer(transport: Transport, subject: string, manifest: TransferManifest, timeout: number): Promise<Uint8Array> {
  const parts = new Map<number, Uint8Array>();
  let next = 0;
  const pullSome = async (): Promise<void> => {
    while (next < manifest.chunks) {
      const index = next++;
      const request: GetChunkRequest = { op: "get-chunk", id: manifest.id, index };
      const part = await transport.request(subject, request, { timeout });
      const start = index * manifest.chunkBytes;
      const expected = Math.min(manifest.chunkBytes, manifest.size - start);
      if (!(part instanceof Uint8Array) || part.length !== expected) {
        const why = part instanceof Uint8Array ? `${part.length} bytes, expected ${expected}` : JSON.stringify(part);
        throw new ProtocolError(`chunk ${index} of transfer ${manifest.id} from ${subject}: ${why}`);
      }
      // The transport hands over a copy of each message's bytes (nats-codec.ts): kept as it is.
      parts.set(index, part);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PULL_WINDOW, manifest.chunks) }, pullSome));
  if (parts.size === 1) return parts.get(0)!;
  const out = Buffer.allocUnsafe(manifest.size);
  for (const [index, part] of parts) out.set(part, index * manifest.chunkBytes);
  return out;
}
