/**
 * mulberry32: a small, fast, seedable 32-bit PRNG. Not for cryptography; it only has to
 * give the same sequence for the same seed on every platform.
 */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A uniformly distributed 32-bit unsigned integer. */
  nextUint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return (z ^ (z >>> 14)) >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** `length` lowercase hex digits. */
  hex(length: number): string {
    let out = "";
    while (out.length < length) out += this.nextUint32().toString(16).padStart(8, "0");
    return out.slice(0, length);
  }
}
