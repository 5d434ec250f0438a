/**
 * The log writer thread's program: writes batches captured by log/log-capture.ts to the
 * log's file descriptor. A version-2 log takes a batch as it is, as one frame
 * (log/frame-format.ts): a head, the batch's bytes and their CRC-32, which costs the
 * thread a copy and a checksum. A version-1 log takes its JSON lines (`<crc32 hex> <JSON>\n`,
 * docs/log-format.md): the batch is decoded into records (log/capture-decoder.ts) and
 * each is written as JSON.stringify gives it.
 *
 * `logWriterProgram` runs from its source text in a worker thread (see log-writer.ts), so
 * it imports nothing and refers to nothing outside itself: the decoder comes in as an
 * argument, Node's modules too. Tests call it directly.
 */
import type { MessagePort } from "node:worker_threads";
import type { FrameDecoder, RecordSink } from "./capture-decoder.js";
import type { LogRecord } from "./types.js";

/** Appends a finished stretch of bytes to the log. */
export type Emit = (bytes: Uint8Array, start: number, end: number) => void;

export interface BatchWriter {
  /** Writes one captured batch of `records` records, handing its bytes to `emit` in order. */
  write(nums: Float64Array, chars: Uint16Array, n: number, c: number, records: number, emit: Emit): void;
}

export interface LogWriterProgram {
  /** A writer for a log of format version `v` (1: JSON lines, 2: frames). */
  writer(v: number): BatchWriter;
  /** The thread's message loop (see log-writer.ts for the protocol). */
  serve(port: MessagePort, fs: typeof import("node:fs"), memory: SharedArrayBuffer, slots: number, slotNums: number, slotChars: number): void;
}

export function logWriterProgram(decoders: { decoder(): FrameDecoder }, zlib: { crc32(data: Uint8Array, value?: number): number }): LogWriterProgram {
  const HEX = Buffer.from("0123456789abcdef", "latin1");
  const PREFIX = 9; // 8 hex digits and a space
  const FRAME_MAGIC = 0x3246736e; // "nsF2", as in frame-format.ts
  const FRAME_HEAD_BYTES = 24;
  const ZEROS = new Uint8Array(8);

  class LineWriter implements BatchWriter, RecordSink {
    private readonly decoder = decoders.decoder();
    private out = Buffer.allocUnsafe(1 << 20);
    private p = 0;
    private emit: Emit = () => undefined;

    write(nums: Float64Array, chars: Uint16Array, n: number, c: number, _records: number, emit: Emit): void {
      this.emit = emit;
      this.p = 0;
      try {
        this.decoder.decode(nums, chars, n, c, this);
      } finally {
        if (this.p > 0) emit(this.out, 0, this.p);
        this.p = 0;
      }
    }

    record(record: LogRecord): void {
      this.line(JSON.stringify(record));
    }

    raw(json: string): void {
      this.line(json);
    }

    private line(json: string): void {
      const need = PREFIX + json.length * 3 + 1;
      if (this.p + need > this.out.length) {
        if (this.p > 0) this.emit(this.out, 0, this.p);
        this.p = 0;
        if (need > this.out.length) this.out = Buffer.allocUnsafe(Math.max(need, this.out.length * 2));
      }
      const out = this.out;
      const start = this.p;
      const bodyStart = start + PREFIX;
      // JSON.stringify escapes lone surrogates, so the text is well-formed and UTF-8 exactly.
      const bodyEnd = bodyStart + out.write(json, bodyStart, "utf8");
      const crc = zlib.crc32(out.subarray(bodyStart, bodyEnd));
      for (let d = 0; d < 8; d++) out[start + d] = HEX[(crc >>> (28 - 4 * d)) & 15]!;
      out[start + 8] = 0x20;
      out[bodyEnd] = 0x0a;
      this.p = bodyEnd + 1;
    }
  }

  class FrameWriter implements BatchWriter {
    private readonly head = Buffer.alloc(FRAME_HEAD_BYTES);

    write(nums: Float64Array, chars: Uint16Array, n: number, c: number, records: number, emit: Emit): void {
      const doubles = new Uint8Array(nums.buffer, nums.byteOffset, n * 8);
      const units = new Uint8Array(chars.buffer, chars.byteOffset, c * 2);
      const head = this.head;
      head.writeUInt32LE(FRAME_MAGIC, 0);
      head.writeUInt32LE(n, 4);
      head.writeUInt32LE(c, 8);
      head.writeUInt32LE(records, 12);
      head.writeUInt32LE(zlib.crc32(units, zlib.crc32(doubles)) >>> 0, 16);
      head.writeUInt32LE(zlib.crc32(head.subarray(0, 20)) >>> 0, 20);
      emit(head, 0, FRAME_HEAD_BYTES);
      if (n > 0) emit(doubles, 0, doubles.length);
      if (c > 0) emit(units, 0, units.length);
      const pad = (8 - ((c * 2) & 7)) & 7;
      if (pad > 0) emit(ZEROS, 0, pad);
    }
  }

  function writer(v: number): BatchWriter {
    return v === 1 ? new LineWriter() : new FrameWriter();
  }

  function serve(port: MessagePort, fs: typeof import("node:fs"), memory: SharedArrayBuffer, slots: number, slotNums: number, slotChars: number): void {
    interface Log {
      fd: number;
      writer: BatchWriter;
      failed: boolean;
    }
    // The same layout as slotLayout() in log-writer.ts.
    const flagBytes = 8 * Math.ceil((4 * (slots + 2)) / 8);
    const slotBytes = slotNums * 8 + slotChars * 2;
    const flags = new Int32Array(memory, 0, slots + 2);
    const numsOf: Float64Array[] = [];
    const charsOf: Uint16Array[] = [];
    for (let slot = 0; slot < slots; slot++) {
      numsOf.push(new Float64Array(memory, flagBytes + slot * slotBytes, slotNums));
      charsOf.push(new Uint16Array(memory, flagBytes + slot * slotBytes + slotNums * 8, slotChars));
    }
    const logs = new Map<number, Log>();
    const writeAll = (fd: number, bytes: Uint8Array, start: number, end: number): void => {
      while (start < end) start += fs.writeSync(fd, bytes, start, end - start);
    };
    type Message = { type: string; log: number; fd?: number; v?: number; seq?: number; slot?: number; nums?: Float64Array; chars?: Uint16Array; n?: number; c?: number; records?: number; ack?: boolean };
    port.on("message", (message: Message) => {
      if (message.type === "open") {
        logs.set(message.log, { fd: message.fd!, writer: writer(message.v ?? 2), failed: false });
      } else if (message.type === "forget") {
        logs.delete(message.log);
      } else if (message.type === "sync") {
        // Messages come in order: every batch posted before this one is written.
        port.postMessage({ type: "done", log: message.log, seq: message.seq });
      } else if (message.type === "batch") {
        const log = logs.get(message.log);
        const slot = message.slot!;
        let error: Record<string, unknown> | undefined;
        if (log !== undefined && !log.failed) {
          try {
            const nums = slot >= 0 ? numsOf[slot]! : message.nums!;
            const chars = slot >= 0 ? charsOf[slot]! : message.chars!;
            log.writer.write(nums, chars, message.n!, message.c!, message.records!, (bytes, start, end) => writeAll(log.fd, bytes, start, end));
          } catch (err) {
            log.failed = true;
            const e = err as NodeJS.ErrnoException;
            error = { message: String(e?.message ?? err), code: e?.code, errno: e?.errno, syscall: e?.syscall };
          }
        }
        if (slot >= 0) {
          Atomics.store(flags, slot, 0);
          Atomics.add(flags, slots, 1);
          Atomics.notify(flags, slots);
        }
        // Answered only when someone waits (a flush) or must hear of a failure: a batch sealed by
        // its timer wakes nobody.
        // Counted as handled before a flush hears of it (it may then write the next batch itself),
        // but after a failure's answer: a producer that sees the count finds that answer waiting.
        if (error !== undefined) port.postMessage({ type: "done", log: message.log, seq: message.seq, error });
        Atomics.add(flags, slots + 1, 1);
        if (message.ack === true && error === undefined) port.postMessage({ type: "done", log: message.log, seq: message.seq });
      }
    });
  }

  return { writer, serve };
}
