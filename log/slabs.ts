/** The first slab's bytes; each next one is twice as big, up to MAX_SLAB. */
const FIRST_SLAB = 16 * 2 ** 20;
const MAX_SLAB = 512 * 2 ** 20;

/**
 * Typed arrays cut from few large ArrayBuffers, for the compact log. V8 starts a major
 * collection each time the memory held by ArrayBuffers has grown by 64 MB since the last
 * one, however small the buffers: a simulation's kept log grows by over a kilobyte of rows
 * and tape a task, and kept in many small arrays it set off a collection every few tens of
 * thousands of tasks, each tracing the whole simulation's heap (at a million tasks several
 * times as many as with the log dropped). Slabs that double in size set off
 * a few, most while the heap is small. A slab's untouched tail costs address space, not memory.
 */
export class Slabs {
  private buffer: ArrayBuffer | null = null;
  private used = 0;
  private next = FIRST_SLAB;

  int32(length: number): Int32Array {
    const at = this.take(length * 4);
    return new Int32Array(this.buffer!, at, length);
  }

  float64(length: number): Float64Array {
    const at = this.take(length * 8);
    return new Float64Array(this.buffer!, at, length);
  }

  /** Where `bytes` (a multiple of 8) start in the current slab, after starting a new one if need be. */
  private take(bytes: number): number {
    if (this.buffer === null || this.used + bytes > this.buffer.byteLength) {
      this.buffer = new ArrayBuffer(Math.max(this.next, bytes));
      this.used = 0;
      this.next = Math.min(this.next * 2, MAX_SLAB);
    }
    const at = this.used;
    this.used += bytes;
    return at;
  }
}
