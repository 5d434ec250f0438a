/**
 * Actor names read straight from line bytes, without making a string per line: a log
 * has few actors and millions of lines naming them.
 */
export class ActorNames {
  private readonly byHash = new Map<number, { bytes: Buffer; name: string }[]>();

  /** The name spelled by the ASCII bytes `buf[start, end)`, the same string object every time. */
  intern(buf: Buffer, start: number, end: number): string {
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ buf[i]!, 0x01000193);
    let entries = this.byHash.get(hash);
    if (entries !== undefined) {
      for (const entry of entries) if (sameBytes(entry.bytes, buf, start, end)) return entry.name;
    } else {
      this.byHash.set(hash, (entries = []));
    }
    const name = buf.toString("latin1", start, end);
    entries.push({ bytes: Buffer.from(name, "latin1"), name });
    return name;
  }
}

function sameBytes(bytes: Buffer, buf: Buffer, start: number, end: number): boolean {
  if (bytes.length !== end - start) return false;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== buf[start + i]) return false;
  return true;
}
