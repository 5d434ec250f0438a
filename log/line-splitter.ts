/**
 * Splits a byte stream into lines on "\n" only (not "\r"), and keeps what follows the
 * last newline apart: the reader must know whether the last line was terminated.
 */
export class LineSplitter {
  private pending: Buffer[] = [];

  /** Calls `onLine` with each complete line in `chunk`, without its newline. */
  push(chunk: Buffer, onLine: (line: Buffer) => void): void {
    let start = 0;
    let newline = chunk.indexOf(0x0a, start);
    while (newline !== -1) {
      let line = chunk.subarray(start, newline);
      if (this.pending.length > 0) {
        this.pending.push(line);
        line = Buffer.concat(this.pending);
        this.pending = [];
      }
      onLine(line);
      start = newline + 1;
      newline = chunk.indexOf(0x0a, start);
    }
    if (start < chunk.length) this.pending.push(chunk.subarray(start));
  }

  /** The bytes after the last newline (an unterminated last line), if any. */
  finish(): Buffer | undefined {
    if (this.pending.length === 0) return undefined;
    const rest = Buffer.concat(this.pending);
    this.pending = [];
    return rest;
  }
}
