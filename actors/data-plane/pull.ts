import { ProtocolError } from "../../machines/errors.js";
import type { Transport } from "../../transport/types.js";
import type { GetChunkRequest, TransferManifest } from "./wire.js";

/** Chunk requests in flight at once: the puller's flow control. */
export const PULL_WINDOW = 4;

/** Fetch every chunk of a blob from `subject` (a few requests in flight) and reassemble it. */
export async function pullTransfer(transport: Transport, subject: string, manifest: TransferManifest, timeout: number): Promise<Uint8Array> {
  const out = Buffer.allocUnsafe(manifest.size);
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
      out.set(part, start);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PULL_WINDOW, manifest.chunks) }, pullSome));
  return out;
}
