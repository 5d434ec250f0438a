/**
 * CRC-32 (the zlib/PNG polynomial, same values as zlib.crc32) over a byte range,
 * table-driven "slicing by 8". For the ~200-byte lines of a log this beats calling
 * zlib.crc32 on a subarray, whose per-call cost dominates at that size.
 */
const TABLES = buildTables();

function buildTables(): Int32Array {
  const tables = new Int32Array(256 * 8);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    tables[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = tables[n]!;
    for (let k = 1; k < 8; k++) {
      c = tables[c & 255]! ^ (c >>> 8);
      tables[k * 256 + n] = c;
    }
  }
  return tables;
}

/** CRC-32 of `bytes[start..end)`, as an unsigned 32-bit integer. */
export function crc32Range(bytes: Uint8Array, start: number, end: number): number {
  const t = TABLES;
  let c = -1;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const low = c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    c =
      t[1792 + (low & 255)]! ^
      t[1536 + ((low >>> 8) & 255)]! ^
      t[1280 + ((low >>> 16) & 255)]! ^
      t[1024 + (low >>> 24)]! ^
      t[768 + bytes[i + 4]!]! ^
      t[512 + bytes[i + 5]!]! ^
      t[256 + bytes[i + 6]!]! ^
      t[bytes[i + 7]!]!;
  }
  for (; i < end; i++) c = t[(c ^ bytes[i]!) & 255]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}
