/**
 * Blobs offered for pulling, by id. A blob goes once every chunk has been served, or after
 * `idleMs` without a chunk request (a requester that gave up).
 */
import { randomBytes } from "node:crypto";
import type { TransferManifest, ValueEncoding } from "./wire.js";

interface Offered {
  bytes: Uint8Array;
  manifest: TransferManifest;
  unserved: Set<number>;
  timer: ReturnType<typeof setTimeout>;
}

export class TransferStore {
  private readonly offered = new Map<string, Offered>();

  constructor(private readonly idleMs = 60_000) {}

  get size(): number {
    return this.offered.size;
  }

  offer(bytes: Uint8Array, encoding: ValueEncoding, chunkBytes: number): TransferManifest {
    const id = randomBytes(9).toString("base64url");
    const manifest: TransferManifest = { id, size: bytes.length, chunkBytes, chunks: Math.ceil(bytes.length / chunkBytes), encoding };
    const unserved = new Set(Array.from({ length: manifest.chunks }, (_, i) => i));
    this.offered.set(id, { bytes, manifest, unserved, timer: this.expiry(id) });
    return manifest;
  }

  /** Chunk `index` of blob `id`, or undefined when there is no such blob or chunk. */
  chunk(id: string, index: number): Uint8Array | undefined {
    const entry = this.offered.get(id);
    if (entry === undefined || !Number.isSafeInteger(index) || index < 0 || index >= entry.manifest.chunks) return undefined;
    const start = index * entry.manifest.chunkBytes;
    const part = entry.bytes.subarray(start, Math.min(start + entry.manifest.chunkBytes, entry.bytes.length));
    entry.unserved.delete(index);
    clearTimeout(entry.timer);
    if (entry.unserved.size === 0) this.offered.delete(id);
    else entry.timer = this.expiry(id);
    return part;
  }

  clear(): void {
    for (const entry of this.offered.values()) clearTimeout(entry.timer);
    this.offered.clear();
  }

  private expiry(id: string): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => this.offered.delete(id), this.idleMs);
    timer.unref();
    return timer;
  }
}
