/** A growable byte buffer with the few writes the token encoding needs. */
export class ByteSink {
  private bytes = new Uint8Array(256);
  private length = 0;
  private readonly scratch = new DataView(new ArrayBuffer(8));

  private reserve(extra: number): void {
    const needed = this.length + extra;
    if (needed <= this.bytes.length) return;
    let capacity = this.bytes.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
  }

  byte(value: number): void {
    this.reserve(1);
    this.bytes[this.length++] = value;
  }

  uint32(value: number): void {
    this.scratch.setUint32(0, value);
    this.raw(new Uint8Array(this.scratch.buffer, 0, 4));
  }

  float64(value: number): void {
    this.scratch.setFloat64(0, value);
    this.raw(new Uint8Array(this.scratch.buffer, 0, 8));
  }

  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.bytes.set(bytes, this.length);
    this.length += bytes.length;
  }

  /**
   * UTF-8, except that a lone surrogate is written as the 3-byte form of its code unit
   * (WTF-8) rather than replaced, so distinct strings always give distinct bytes.
   */
  utf8(text: string): void {
    this.reserve(text.length * 3);
    const bytes = this.bytes;
    let at = this.length;
    for (let i = 0; i < text.length; i++) {
      let code = text.charCodeAt(i);
      if (code < 0x80) {
        bytes[at++] = code;
        continue;
      }
      if (code < 0x800) {
        bytes[at++] = 0xc0 | (code >> 6);
        bytes[at++] = 0x80 | (code & 0x3f);
        continue;
      }
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
        i++;
        bytes[at++] = 0xf0 | (code >> 18);
        bytes[at++] = 0x80 | ((code >> 12) & 0x3f);
        bytes[at++] = 0x80 | ((code >> 6) & 0x3f);
        bytes[at++] = 0x80 | (code & 0x3f);
        continue;
      }
      bytes[at++] = 0xe0 | (code >> 12);
      bytes[at++] = 0x80 | ((code >> 6) & 0x3f);
      bytes[at++] = 0x80 | (code & 0x3f);
    }
    this.length = at;
  }

  /** The bytes written so far (a view, valid until the next write). */
  view(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }
}
