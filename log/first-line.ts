import type { FileHandle } from "node:fs/promises";

/** A header longer than this is not a header: stop looking rather than read a huge file. */
export const MAX_HEADER_BYTES = 16 * 1024 * 1024;

export interface FirstLine {
  /** The line without its newline. */
  line: string;
  /** Bytes up to and including the newline: where the records start. */
  bytes: number;
}

/** The file's first newline-terminated line, or undefined if there is none within MAX_HEADER_BYTES. */
export async function readFirstLine(handle: FileHandle): Promise<FirstLine | undefined> {
  const chunks: Buffer[] = [];
  let position = 0;
  while (position < MAX_HEADER_BYTES) {
    const chunk = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
    if (bytesRead === 0) return undefined;
    const newline = chunk.subarray(0, bytesRead).indexOf(0x0a);
    if (newline !== -1) {
      chunks.push(chunk.subarray(0, newline));
      const line = Buffer.concat(chunks);
      return { line: line.toString("utf8"), bytes: line.length + 1 };
    }
    chunks.push(chunk.subarray(0, bytesRead));
    position += bytesRead;
  }
  return undefined;
}

/** The same for a file already in memory. */
export function firstLineOf(data: Buffer): FirstLine | undefined {
  const newline = data.indexOf(0x0a);
  if (newline === -1 || newline >= MAX_HEADER_BYTES) return undefined;
  return { line: data.toString("utf8", 0, newline), bytes: newline + 1 };
}
