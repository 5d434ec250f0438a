/**
 * The log writer thread's program: turns batches captured by replay/log-capture.ts into
 * record lines (`<crc32 hex> <JSON>\n`, docs/log-format.md) and writes them to the log's
 * file descriptor. The JSON of every record is byte for byte what JSON.stringify gives.
 *
 * `logWriterProgram` runs from its source text in a worker thread (see log-writer.ts),
 * so it imports nothing and refers to nothing outside itself: the stream's tags come in
 * as `tags`, Node's modules as arguments. Tests call it directly.
 */
import type { MessagePort } from "node:worker_threads";

export interface StreamTags {
  TRANSITION: number;
  INPUT: number;
  START: number;
  STOP: number;
  RAW: number;
  V_NULL: number;
  V_TRUE: number;
  V_FALSE: number;
  V_NUMBER: number;
  V_STRING: number;
  V_ARRAY: number;
  V_OBJECT: number;
  INLINE: number;
  DEFINE: number;
}

/** Appends a finished stretch of lines to the log. */
export type Emit = (bytes: Buffer, start: number, end: number) => void;

export interface LineFormatter {
  /** Formats the records of one captured batch, handing complete lines to `emit`. */
  format(nums: Float64Array, chars: Uint16Array, n: number, c: number, emit: Emit): void;
}

export interface LogWriterProgram {
  /** A formatter for one log: it keeps that log's interned strings. */
  formatter(): LineFormatter;
  /** The thread's message loop (see log-writer.ts for the protocol). */
  serve(port: MessagePort, fs: typeof import("node:fs"), memory: SharedArrayBuffer, slots: number, slotNums: number, slotChars: number): void;
}

export function logWriterProgram(tags: StreamTags): LogWriterProgram {
  const T = tags;
  const latin1 = (text: string): Buffer => Buffer.from(text, "latin1");
  const OPEN_ACTOR = latin1('{"actor":');
  const SEQ = latin1(',"seq":');
  const TIME = latin1(',"t":');
  const KIND_TRANSITION = latin1(',"kind":"transition","machine":');
  const KIND_INPUT = latin1(',"kind":"input","event":');
  const KIND_START = latin1(',"kind":"start","role":');
  const KIND_STOP = latin1(',"kind":"stop"');
  const ID = latin1(',"id":');
  const EVENT = latin1(',"event":');
  const FROM = latin1(',"from":');
  const TO = latin1(',"to":');
  const WHY = latin1(',"why":');
  const INIT = latin1(',"init":');
  const REASON = latin1(',"reason":');
  const NULL = latin1("null");
  const TRUE = latin1("true");
  const FALSE = latin1("false");
  const HEX = latin1("0123456789abcdef");
  const SHORT_ESCAPE = new Uint8Array(0x60);
  for (const [code, letter] of [[0x08, "b"], [0x09, "t"], [0x0a, "n"], [0x0c, "f"], [0x0d, "r"], [0x22, '"'], [0x5c, "\\"]] as const) SHORT_ESCAPE[code] = letter.charCodeAt(0);
  const PREFIX = 9; // 8 hex digits and a space
  /** The text of this many recent doubles is kept, up to NUMBER_TEXT bytes each. */
  const NUMBER_SLOTS = 64;
  const NUMBER_TEXT = 32;
  const BITS_F64 = new Float64Array(1);
  const BITS_I32 = new Int32Array(BITS_F64.buffer);
  /** "00".."99", two bytes each. */
  const PAIRS = latin1(Array.from({ length: 100 }, (_, n) => String(n).padStart(2, "0")).join(""));

  const CRC = new Int32Array(256 * 8);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    CRC[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = CRC[n]!;
    for (let k = 1; k < 8; k++) {
      c = CRC[c & 255]! ^ (c >>> 8);
      CRC[k * 256 + n] = c;
    }
  }
  /** CRC-32 (zlib's) of bytes[start, end), slicing by 8. */
  function crc32(bytes: Buffer, start: number, end: number): number {
    const t = CRC;
    let c = -1;
    let i = start;
    for (; i + 8 <= end; i += 8) {
      const low = c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
      c = t[1792 + (low & 255)]! ^ t[1536 + ((low >>> 8) & 255)]! ^ t[1280 + ((low >>> 16) & 255)]! ^ t[1024 + (low >>> 24)]! ^ t[768 + bytes[i + 4]!]! ^ t[512 + bytes[i + 5]!]! ^ t[256 + bytes[i + 6]!]! ^ t[bytes[i + 7]!]!;
    }
    for (; i < end; i++) c = t[(c ^ bytes[i]!) & 255]! ^ (c >>> 8);
    return (c ^ -1) >>> 0;
  }

  class Formatter implements LineFormatter {
    /** JSON (quotes included) of each interned string, by id. */
    private readonly strings: Uint8Array[] = [];
    private out = Buffer.allocUnsafe(1 << 20);
    private p = 0;
    private lineStart = 0;
    private nums: Float64Array = new Float64Array(0);
    private chars: Uint16Array = new Uint16Array(0);
    private i = 0;
    private j = 0;
    private emit: Emit = () => undefined;
    private readonly numbers = new Float64Array(NUMBER_SLOTS).fill(NaN);
    private readonly numberText = new Uint8Array(NUMBER_SLOTS * NUMBER_TEXT);
    private readonly numberLength = new Int32Array(NUMBER_SLOTS);
    /** Pre-encoded pieces of transition lines, by interned id (see transition()). */
    private readonly heads: (Uint8Array | undefined)[] = [];
    private readonly middles: (Uint8Array | undefined)[] = [];
    private readonly tails = new Map<number, Uint8Array>();
    private lastRef = -1;


    format(nums: Float64Array, chars: Uint16Array, n: number, _c: number, emit: Emit): void {
      this.nums = nums;
      this.chars = chars;
      this.i = 0;
      this.j = 0;
      this.emit = emit;
      this.p = 0;
      this.lineStart = 0;
      while (this.i < n) this.line();
      if (this.p > 0) emit(this.out, 0, this.p);
      this.p = 0;
      this.lineStart = 0;
      this.nums = new Float64Array(0);
      this.chars = new Uint16Array(0);
    }

    /** Makes room for `k` more bytes of the current line, emitting the finished lines before it. */
    private room(k: number): void {
      if (this.p + k <= this.out.length) return;
      if (this.lineStart > 0) {
        this.emit(this.out, 0, this.lineStart);
        this.out.copy(this.out, 0, this.lineStart, this.p);
        this.p -= this.lineStart;
        this.lineStart = 0;
        if (this.p + k <= this.out.length) return;
      }
      const bigger = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.p + k));
      this.out.copy(bigger, 0, 0, this.p);
      this.out = bigger;
    }

    private bytes(b: Uint8Array): void {
      this.room(b.length);
      const out = this.out;
      const p = this.p;
      if (b.length > 10) out.set(b, p);
      else for (let k = 0; k < b.length; k++) out[p + k] = b[k]!;
      this.p = p + b.length;
    }

    private line(): void {
      const kind = this.nums[this.i++]!;
      this.room(PREFIX);
      this.lineStart = this.p;
      this.p += PREFIX;
      if (kind === T.TRANSITION) {
        this.transition();
      } else if (kind === T.RAW) {
        const length = this.nums[this.i++]!;
        const text = this.text(length);
        this.room(text.length * 3);
        this.p += this.out.write(text, this.p, "utf8");
      } else {
        this.bytes(this.head());
        this.number(this.nums[this.i++]!);
        this.bytes(TIME);
        this.number(this.nums[this.i++]!);
        if (kind === T.INPUT) {
          this.bytes(KIND_INPUT);
          this.value();
        } else if (kind === T.START) {
          this.bytes(KIND_START);
          this.string(this.nums[this.i++]!);
          this.bytes(INIT);
          this.value();
        } else if (kind === T.STOP) {
          this.bytes(KIND_STOP);
          const length = this.nums[this.i++]!;
          if (length >= 0) {
            this.bytes(REASON);
            this.string(length);
          }
        } else {
          throw new Error(`log writer: unknown record tag ${kind} at ${this.i - 1}`);
        }
        this.room(1);
        this.out[this.p++] = 0x7d;
      }
      const bodyStart = this.lineStart + PREFIX;
      const c = crc32(this.out, bodyStart, this.p);
      const out = this.out;
      for (let d = 0; d < 8; d++) out[this.lineStart + d] = HEX[(c >>> (28 - 4 * d)) & 15]!;
      out[this.lineStart + 8] = 0x20;
      this.room(1);
      this.out[this.p++] = 0x0a;
      this.lineStart = this.p;
    }

    /**
     * A transition line from pre-encoded pieces: `{"actor":A,"seq":` per actor,
     * `,"kind":"transition","machine":M,"id":` per machine and `,"event":E,"from":F,"to":T`
     * per (event, from, to) are kept once made (interned names never change meaning), so
     * a line is a handful of copies, two numbers and its checksum.
     */
    private transition(): void {
      const head = this.head();
      const seq = this.nums[this.i++]!;
      const t = this.nums[this.i++]!;
      const machine = this.refJson();
      const machineId = this.lastRef;
      // The id comes inline (a task key): its code units are written in place further down,
      // not encoded into an array of their own first.
      let key: Uint8Array | undefined;
      let keyAt = 0;
      let keyLength = 0;
      if (this.nums[this.i] === T.INLINE) {
        keyLength = this.nums[this.i + 1]!;
        this.i += 2;
        keyAt = this.j;
        this.j += keyLength;
      } else {
        key = this.refJson();
      }
      const event = this.refJson();
      const eventId = this.lastRef;
      const from = this.refJson();
      const fromId = this.lastRef;
      const to = this.refJson();
      const toId = this.lastRef;
      const why = this.nums[this.i++] === 1;
      let middle = machineId >= 0 ? this.middles[machineId] : undefined;
      if (middle === undefined) {
        middle = concat(KIND_TRANSITION, machine, ID);
        if (machineId >= 0) this.middles[machineId] = middle;
      }
      const cacheable = eventId >= 0 && fromId >= 0 && toId >= 0;
      const tailKey = (eventId * 131_072 + fromId) * 131_072 + toId;
      let tail = cacheable ? this.tails.get(tailKey) : undefined;
      if (tail === undefined) {
        tail = concat(EVENT, event, FROM, from, TO, to);
        if (cacheable) this.tails.set(tailKey, tail);
      }
      this.room(head.length + middle.length + (key === undefined ? 0 : key.length) + 2 * 25 + TIME.length);
      this.copy(head);
      this.number(seq);
      this.copy(TIME);
      this.number(t);
      this.copy(middle);
      if (key !== undefined) {
        this.copy(key);
      } else {
        const j = this.j;
        this.j = keyAt;
        this.string(keyLength);
        this.j = j;
      }
      this.room(tail.length + 1);
      this.copy(tail);
      if (why) {
        this.bytes(WHY);
        this.value();
      }
      this.room(1);
      this.out[this.p++] = 0x7d;
    }

    /** `{"actor":<actor>,"seq":` for the actor ref that comes next, made once per actor. */
    private head(): Uint8Array {
      const actor = this.refJson();
      const actorId = this.lastRef;
      let head = actorId >= 0 ? this.heads[actorId] : undefined;
      if (head === undefined) {
        head = concat(OPEN_ACTOR, actor, SEQ);
        if (actorId >= 0) this.heads[actorId] = head;
      }
      return head;
    }

    /** Copies bytes the caller has made room for. */
    private copy(b: Uint8Array): void {
      const out = this.out;
      const p = this.p;
      if (b.length > 10) out.set(b, p);
      else for (let k = 0; k < b.length; k++) out[p + k] = b[k]!;
      this.p = p + b.length;
    }

    /**
     * A string ref's JSON bytes, without writing them; `lastRef` tells whether they are an
     * interned name's (its id) or not (-1: inline).
     */
    private refJson(): Uint8Array {
      let id = this.nums[this.i++]!;
      if (id === T.DEFINE) {
        const defined = this.nums[this.i++]!;
        this.strings[defined] = this.encoded(this.nums[this.i++]!);
        id = this.nums[this.i++]!;
      }
      if (id === T.INLINE) {
        this.lastRef = -1;
        return this.encoded(this.nums[this.i++]!);
      }
      this.lastRef = id;
      return this.strings[id]!;
    }

    /** The next `length` code units as JSON string bytes of their own. */
    private encoded(length: number): Uint8Array {
      this.room(length * 6 + 2); // so that string() below moves nothing
      const start = this.p;
      this.string(length);
      const bytes = new Uint8Array(this.p - start);
      this.out.copy(bytes, 0, start, this.p);
      this.p = start;
      return bytes;
    }

    private text(length: number): string {
      const start = this.j;
      this.j += length;
      let text = "";
      for (let k = start; k < this.j; k += 8192) text += String.fromCharCode.apply(null, this.chars.subarray(k, Math.min(k + 8192, this.j)) as unknown as number[]);
      return text;
    }

    /** A string ref: an interned string's JSON, defining it first if this is its first use. */
    private ref(): void {
      let id = this.nums[this.i++]!;
      if (id === T.DEFINE) {
        const defined = this.nums[this.i++]!;
        const length = this.nums[this.i++]!;
        this.room(length * 6 + 2); // so that string() below moves nothing
        const start = this.p;
        this.string(length);
        const bytes = new Uint8Array(this.p - start);
        this.out.copy(bytes, 0, start, this.p);
        this.strings[defined] = bytes;
        this.p = start;
        id = this.nums[this.i++]!;
      }
      if (id === T.INLINE) {
        this.string(this.nums[this.i++]!);
        return;
      }
      this.bytes(this.strings[id]!);
    }

    /** The next `length` code units as a JSON string, UTF-8, escaped as JSON.stringify does. */
    private string(length: number): void {
      this.room(length * 6 + 2);
      const out = this.out;
      const chars = this.chars;
      let p = this.p;
      const end = this.j + length;
      out[p++] = 0x22;
      for (let k = this.j; k < end; k++) {
        const c = chars[k]!;
        if (c < 0x80) {
          if (c >= 0x20 && c !== 0x22 && c !== 0x5c) {
            out[p++] = c;
            continue;
          }
          p = escape(out, p, c);
        } else if (c < 0x800) {
          out[p++] = 0xc0 | (c >> 6);
          out[p++] = 0x80 | (c & 63);
        } else if (c < 0xd800 || c > 0xdfff) {
          out[p++] = 0xe0 | (c >> 12);
          out[p++] = 0x80 | ((c >> 6) & 63);
          out[p++] = 0x80 | (c & 63);
        } else {
          const next = k + 1 < end ? chars[k + 1]! : 0;
          if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
            const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
            out[p++] = 0xf0 | (cp >> 18);
            out[p++] = 0x80 | ((cp >> 12) & 63);
            out[p++] = 0x80 | ((cp >> 6) & 63);
            out[p++] = 0x80 | (cp & 63);
            k++;
          } else {
            p = escape(out, p, c); // a lone surrogate
          }
        }
      }
      out[p++] = 0x22;
      this.p = p;
      this.j = end;
    }

    private number(x: number): void {
      this.room(25); // Number#toString of a finite double is at most 24 characters
      const out = this.out;
      let p = this.p;
      if ((x | 0) === x && x >= 0) {
        // A non-negative int32 (-0 too, which JSON writes as 0).
        if (x < 10) {
          out[p] = 0x30 + x;
          this.p = p + 1;
          return;
        }
        const digits = x < 100 ? 2 : x < 1e3 ? 3 : x < 1e4 ? 4 : x < 1e5 ? 5 : x < 1e6 ? 6 : x < 1e7 ? 7 : x < 1e8 ? 8 : x < 1e9 ? 9 : 10;
        let v = x;
        let k = p + digits;
        while (v >= 100) {
          const pair = (v % 100) * 2;
          v = (v / 100) | 0;
          out[--k] = PAIRS[pair + 1]!;
          out[--k] = PAIRS[pair]!;
        }
        if (v >= 10) {
          out[--k] = PAIRS[v * 2 + 1]!;
          out[--k] = PAIRS[v * 2]!;
        } else {
          out[--k] = 0x30 + v;
        }
        this.p = p + digits;
        return;
      }
      if (x !== x || x === Infinity || x === -Infinity) {
        this.bytes(NULL);
        return;
      }
      // Times repeat: the records of one input share its time, its event repeats it, and a
      // task's start and stop reach the scheduler's log in the worker's words. Number#toString
      // of a double is slow, so the text of recent doubles is kept (direct-mapped by their bits).
      BITS_F64[0] = x;
      const slot = (BITS_I32[0]! ^ BITS_I32[1]! ^ (BITS_I32[1]! >>> 12)) & (NUMBER_SLOTS - 1);
      const at = slot * NUMBER_TEXT;
      const cache = this.numberText;
      if (this.numbers[slot] !== x) {
        const text = String(x);
        for (let k = 0; k < text.length; k++) cache[at + k] = text.charCodeAt(k);
        this.numberLength[slot] = text.length;
        this.numbers[slot] = x;
      }
      const length = this.numberLength[slot]!;
      for (let k = 0; k < length; k++) out[p++] = cache[at + k]!;
      this.p = p;
    }

    private value(): void {
      const tag = this.nums[this.i++]!;
      switch (tag) {
        case T.V_NUMBER:
          this.number(this.nums[this.i++]!);
          return;
        case T.V_STRING:
          this.string(this.nums[this.i++]!);
          return;
        case T.V_NULL:
          this.bytes(NULL);
          return;
        case T.V_TRUE:
          this.bytes(TRUE);
          return;
        case T.V_FALSE:
          this.bytes(FALSE);
          return;
        case T.V_ARRAY: {
          const count = this.nums[this.i++]!;
          this.room(1);
          this.out[this.p++] = 0x5b;
          for (let k = 0; k < count; k++) {
            if (k > 0) {
              this.room(1);
              this.out[this.p++] = 0x2c;
            }
            this.value();
          }
          this.room(1);
          this.out[this.p++] = 0x5d;
          return;
        }
        case T.V_OBJECT: {
          const count = this.nums[this.i++]!;
          this.room(1);
          this.out[this.p++] = 0x7b;
          for (let k = 0; k < count; k++) {
            if (k > 0) {
              this.room(1);
              this.out[this.p++] = 0x2c;
            }
            this.ref();
            this.room(1);
            this.out[this.p++] = 0x3a;
            this.value();
          }
          this.room(1);
          this.out[this.p++] = 0x7d;
          return;
        }
        default:
          throw new Error(`log writer: unknown value tag ${tag} at ${this.i - 1}`);
      }
    }
  }

  function concat(...parts: Uint8Array[]): Uint8Array {
    let length = 0;
    for (const part of parts) length += part.length;
    const all = new Uint8Array(length);
    let at = 0;
    for (const part of parts) {
      all.set(part, at);
      at += part.length;
    }
    return all;
  }

  function escape(out: Buffer, p: number, c: number): number {
    out[p++] = 0x5c;
    const short = c < 0x60 ? SHORT_ESCAPE[c]! : 0;
    if (short !== 0) {
      out[p++] = short;
      return p;
    }
    out[p++] = 0x75; // \u00XX or a lone surrogate's \udXXX, lowercase hex like JSON.stringify
    out[p++] = HEX[(c >> 12) & 15]!;
    out[p++] = HEX[(c >> 8) & 15]!;
    out[p++] = HEX[(c >> 4) & 15]!;
    out[p++] = HEX[c & 15]!;
    return p;
  }

  function serve(port: MessagePort, fs: typeof import("node:fs"), memory: SharedArrayBuffer, slots: number, slotNums: number, slotChars: number): void {
    interface Log {
      fd: number;
      formatter: LineFormatter;
      failed: boolean;
    }
    // The same layout as slotLayout() in log-writer.ts.
    const flagBytes = 8 * Math.ceil((4 * (slots + 1)) / 8);
    const slotBytes = slotNums * 8 + slotChars * 2;
    const flags = new Int32Array(memory, 0, slots + 1);
    const numsOf: Float64Array[] = [];
    const charsOf: Uint16Array[] = [];
    for (let slot = 0; slot < slots; slot++) {
      numsOf.push(new Float64Array(memory, flagBytes + slot * slotBytes, slotNums));
      charsOf.push(new Uint16Array(memory, flagBytes + slot * slotBytes + slotNums * 8, slotChars));
    }
    const logs = new Map<number, Log>();
    const writeAll = (fd: number, bytes: Buffer, start: number, end: number): void => {
      while (start < end) start += fs.writeSync(fd, bytes, start, end - start);
    };
    type Message = { type: string; log: number; fd?: number; seq?: number; slot?: number; nums?: Float64Array; chars?: Uint16Array; n?: number; c?: number };
    port.on("message", (message: Message) => {
      if (message.type === "open") {
        logs.set(message.log, { fd: message.fd!, formatter: new Formatter(), failed: false });
      } else if (message.type === "forget") {
        logs.delete(message.log);
      } else if (message.type === "batch") {
        const log = logs.get(message.log);
        const slot = message.slot!;
        let error: Record<string, unknown> | undefined;
        if (log !== undefined && !log.failed) {
          try {
            const nums = slot >= 0 ? numsOf[slot]! : message.nums!;
            const chars = slot >= 0 ? charsOf[slot]! : message.chars!;
            log.formatter.format(nums, chars, message.n!, message.c!, (bytes, start, end) => writeAll(log.fd, bytes, start, end));
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
        port.postMessage({ type: "done", log: message.log, seq: message.seq, error });
      }
    });
  }

  return { formatter: () => new Formatter(), serve };
}
