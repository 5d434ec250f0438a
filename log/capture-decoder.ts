/**
 * Decoding the capture stream (log/capture-tags.ts) back into records: what a reader of
 * a version-2 log does with each frame, and what the log writer thread does before writing
 * a version-1 log's JSON lines. Values come back as JSON.parse would give them after
 * JSON.stringify: NaN and the infinities as null, -0 as 0.
 *
 * `captureDecoderProgram` also runs from its source text in the writer thread, so it
 * refers to nothing outside itself: the tags come in as an argument.
 */
import type { CaptureTags } from "./capture-tags.js";
import type { LogRecord } from "./types.js";

export interface RecordSink {
  record(record: LogRecord): void;
  /** A record the capture could only hold as its JSON text. */
  raw(json: string): void;
  /**
   * If present, takes each transition record instead of record(), as its parts: the sink
   * builds the record (`why` undefined: a record without that field), or has no use for it.
   */
  transition?(shape: TransitionShape, seq: number | null, t: number | null, id: string, why: unknown): void;
}

export interface FrameDecoder {
  /**
   * Decodes one batch (a frame's body): every record in order. Throws an Error naming the
   * position on anything malformed; records handed over before that stay handed over.
   */
  decode(nums: Float64Array, chars: Uint16Array, n: number, c: number, sink: RecordSink): void;
}

/** The fields a frame's transitions of one actor, machine, event and move share. */
export interface TransitionShape {
  actor: string;
  machine: string;
  event: string;
  from: string;
  to: string;
}

/**
 * `inputFields`: an input's event keeps only these fields (when its object's keys come
 * before its values: a shape already defined, or keys inline); the others are walked past
 * without building them. For a reader that needs a few fields of each event (the live
 * dashboard's folds): what it skips costs no objects, strings or numbers.
 */
export interface DecoderOptions {
  inputFields?: ReadonlySet<string>;
  /** The same for a transition's `why`: only these fields built (a fold that reads a few of them). */
  whyFields?: ReadonlySet<string>;
}

export function captureDecoderProgram(T: CaptureTags): { decoder(options?: DecoderOptions): FrameDecoder } {
  /** Nesting deeper than the capture ever writes is not a batch of ours. */
  const MAX_DEPTH = 64;

  class Malformed extends Error {}

  function jsonNumber(x: number): number | null {
    if (x !== x || x === Infinity || x === -Infinity) return null;
    return x === 0 ? 0 : x;
  }

  class Decoder implements FrameDecoder {
    constructor(
      private readonly inputFields: ReadonlySet<string> | undefined,
      private readonly whyFields: ReadonlySet<string> | undefined,
    ) {}

    private nums: Float64Array = new Float64Array(0);
    private chars: Uint16Array = new Uint16Array(0);
    /** The bytes of `chars`, for decoding strings. */
    private units: Buffer = Buffer.alloc(0);
    private n = 0;
    private c = 0;
    private i = 0;
    private j = 0;
    private names: string[] = [];
    private tshapes: TransitionShape[] = [];
    private oshapes: string[][] = [];
    private refs: string[] = [];

    decode(nums: Float64Array, chars: Uint16Array, n: number, c: number, sink: RecordSink): void {
      this.nums = nums;
      this.chars = chars;
      this.units = Buffer.from(chars.buffer, chars.byteOffset, chars.byteLength);
      this.n = n;
      this.c = c;
      this.i = 0;
      this.j = 0;
      this.names = [];
      this.tshapes = [];
      this.oshapes = [];
      this.refs = [];
      try {
        while (this.i < n) this.record(sink);
        if (this.j !== c) this.fail(`${c - this.j} code units left over`);
      } finally {
        this.nums = new Float64Array(0);
        this.chars = new Uint16Array(0);
        this.units = Buffer.alloc(0);
      }
    }

    private fail(why: string): never {
      throw new Malformed(`malformed batch at item ${this.i}: ${why}`);
    }

    private next(): number {
      if (this.i >= this.n) this.fail("ends inside a record");
      return this.nums[this.i++]!;
    }

    /** A count or length: a whole number that the rest of the batch can hold. */
    private count(limit: number): number {
      const k = this.next();
      if (!(k >= 0 && k <= limit && Math.floor(k) === k)) this.fail(`bad count ${k}`);
      return k;
    }

    private text(length: number): string {
      const start = this.j;
      const end = start + length;
      if (end > this.c) this.fail("a string runs past the code units");
      this.j = end;
      const chars = this.chars;
      // The shortest (names, ops) straight from their code units; longer ones through the
      // Buffer view, which copies the units as they are (lone surrogates included) about 3x
      // faster than fromCharCode.apply on a subarray, and allocates no view per string.
      switch (length) {
        case 0:
          return "";
        case 1:
          return String.fromCharCode(chars[start]!);
        case 2:
          return String.fromCharCode(chars[start]!, chars[start + 1]!);
        case 3:
          return String.fromCharCode(chars[start]!, chars[start + 1]!, chars[start + 2]!);
        case 4:
          return String.fromCharCode(chars[start]!, chars[start + 1]!, chars[start + 2]!, chars[start + 3]!);
        default:
          // ucs2Slice is what toString("utf16le", ...) calls after checking its arguments (ours are checked above): that wrapper cost as much again.
          return (this.units as Buffer & { ucs2Slice(start: number, end: number): string }).ucs2Slice(2 * start, 2 * end);
      }
    }

    private name(): string {
      const id = this.next();
      const name = this.names[id];
      if (name === undefined) this.fail(`name ${id} is not defined`);
      return name;
    }

    private record(sink: RecordSink): void {
      const tag = this.next();
      switch (tag) {
        case T.R_TRANSITION:
        case T.R_TRANSITION_WHY: {
          const shape = this.tshapes[this.next()];
          if (shape === undefined) this.fail("transition shape not defined");
          const seq = jsonNumber(this.next());
          const t = jsonNumber(this.next());
          const id = this.str();
          if (sink.transition !== undefined) {
            sink.transition(shape, seq, t, id, tag === T.R_TRANSITION ? undefined : this.why());
            return;
          }
          if (tag === T.R_TRANSITION) {
            sink.record({ actor: shape.actor, seq, t, kind: "transition", machine: shape.machine, id, event: shape.event, from: shape.from, to: shape.to } as LogRecord);
          } else {
            const why = this.why();
            sink.record({ actor: shape.actor, seq, t, kind: "transition", machine: shape.machine, id, event: shape.event, from: shape.from, to: shape.to, why } as LogRecord);
          }
          return;
        }
        case T.R_INPUT: {
          const actor = this.name();
          const seq = jsonNumber(this.next());
          const t = jsonNumber(this.next());
          sink.record({ actor, seq, t, kind: "input", event: this.inputFields === undefined ? this.value(1) : this.event(this.inputFields) } as LogRecord);
          return;
        }
        case T.R_START: {
          const actor = this.name();
          const seq = jsonNumber(this.next());
          const t = jsonNumber(this.next());
          const role = this.str();
          sink.record({ actor, seq, t, kind: "start", role, init: this.value(1) } as LogRecord);
          return;
        }
        case T.R_STOP:
        case T.R_STOP_REASON: {
          const actor = this.name();
          const seq = jsonNumber(this.next());
          const t = jsonNumber(this.next());
          if (tag === T.R_STOP) sink.record({ actor, seq, t, kind: "stop" } as LogRecord);
          else sink.record({ actor, seq, t, kind: "stop", reason: this.str() } as LogRecord);
          return;
        }
        case T.R_RAW:
          sink.raw(this.text(this.count(this.c - this.j)));
          return;
        case T.D_NAME:
          this.names.push(this.text(this.count(this.c - this.j)));
          return;
        case T.D_TSHAPE: {
          const actor = this.name();
          const machine = this.name();
          const event = this.name();
          const from = this.name();
          const to = this.name();
          this.tshapes.push({ actor, machine, event, from, to });
          return;
        }
        default:
          this.fail(`unexpected tag ${tag} where a record starts`);
      }
    }

    /** A string value: V_STRING or V_REF. */
    private str(): string {
      const tag = this.next();
      if (tag === T.V_REF) return this.ref();
      if (tag !== T.V_STRING) this.fail(`expected a string, found tag ${tag}`);
      return this.stringBody();
    }

    private stringBody(): string {
      const s = this.text(this.count(this.c - this.j));
      if (s.length >= T.REF_MIN) this.refs.push(s);
      return s;
    }

    private ref(): string {
      const k = this.next();
      const s = this.refs[k];
      if (s === undefined) this.fail(`string ${k} is not defined`);
      return s;
    }

    private value(depth: number): unknown {
      const tag = this.next();
      switch (tag) {
        case T.V_NUMBER:
          return jsonNumber(this.next());
        case T.V_STRING:
          return this.stringBody();
        case T.V_REF:
          return this.ref();
        case T.V_OBJECT: {
          const keys = this.oshapes[this.next()];
          if (keys === undefined) this.fail("object shape not defined");
          if (depth > MAX_DEPTH) this.fail("nested too deep");
          const object: Record<string, unknown> = {};
          for (let k = 0; k < keys.length; k++) object[keys[k]!] = this.value(depth + 1);
          return object;
        }
        case T.V_ARRAY: {
          const length = this.count(this.n - this.i);
          if (depth > MAX_DEPTH) this.fail("nested too deep");
          const items = new Array<unknown>(length);
          for (let k = 0; k < length; k++) items[k] = this.value(depth + 1);
          return items;
        }
        case T.V_NULL:
          return null;
        case T.V_TRUE:
          return true;
        case T.V_FALSE:
          return false;
        case T.V_OBJECT_NEW: {
          const count = this.count(this.n - this.i);
          if (depth > MAX_DEPTH) this.fail("nested too deep");
          const values = new Array<unknown>(count);
          for (let k = 0; k < count; k++) values[k] = this.value(depth + 1);
          const keys = this.shapeDefinition(count);
          const object: Record<string, unknown> = {};
          for (let k = 0; k < count; k++) object[keys[k]!] = values[k];
          return object;
        }
        case T.V_KEYED: {
          const count = this.count(this.n - this.i);
          if (depth > MAX_DEPTH) this.fail("nested too deep");
          const object: Record<string, unknown> = {};
          for (let k = 0; k < count; k++) {
            const key = this.text(this.count(this.c - this.j));
            if (key === "__proto__") this.fail("a __proto__ key");
            object[key] = this.value(depth + 1);
          }
          return object;
        }
        default:
          return this.fail(`unexpected tag ${tag} where a value starts`);
      }
    }

    /** A transition's why, with only DecoderOptions.whyFields built when given. */
    private why(): unknown {
      return this.whyFields === undefined ? this.value(1) : this.event(this.whyFields);
    }

    /** An input's event (or a why) with only `fields` built (DecoderOptions.inputFields, whyFields); a value of any other kind whole. */
    private event(fields: ReadonlySet<string>): unknown {
      const tag = this.next();
      if (tag === T.V_OBJECT) {
        const keys = this.oshapes[this.next()];
        if (keys === undefined) this.fail("object shape not defined");
        const object: Record<string, unknown> = {};
        for (let k = 0; k < keys.length; k++) {
          const key = keys[k]!;
          if (fields.has(key)) object[key] = this.value(2);
          else this.skip(2);
        }
        return object;
      }
      if (tag === T.V_KEYED) {
        const count = this.count(this.n - this.i);
        const object: Record<string, unknown> = {};
        for (let k = 0; k < count; k++) {
          const key = this.text(this.count(this.c - this.j));
          if (key === "__proto__") this.fail("a __proto__ key");
          if (fields.has(key)) object[key] = this.value(2);
          else this.skip(2);
        }
        return object;
      }
      // A new shape's keys come after its values: built whole.
      this.i--;
      return this.value(1);
    }

    /** Walks past a value as value() reads it, checking it as value() does, building only what later values refer to (long strings, names, shapes). */
    private skip(depth: number): void {
      const tag = this.next();
      switch (tag) {
        case T.V_NUMBER:
          this.next();
          return;
        case T.V_STRING: {
          const length = this.count(this.c - this.j);
          if (length >= T.REF_MIN) this.refs.push(this.text(length));
          else this.j += length;
          return;
        }
        case T.V_REF:
          this.ref();
          return;
        case T.V_OBJECT: {
          const keys = this.oshapes[this.next()];
          if (keys === undefined) this.fail("object shape not defined");
          if (depth > MAX_DEPTH) this.fail("nested too deep");
          for (let k = 0; k < keys.length; k++) this.skip(depth + 1);
          return;
        }
        case T.V_ARRAY: {
          const length = this.count(this.n - this.i);
          if (depth > MAX_DEPTH) this.fail("nested too deep");
          for (let k = 0; k < length; k++) this.skip(depth + 1);
          return;
        }
        case T.V_NULL:
        case T.V_TRUE:
        case T.V_FALSE:
          return;
        case T.V_OBJECT_NEW: {
          const count = this.count(this.n - this.i);
          if (depth > MAX_DEPTH) this.fail("nested too deep");
          for (let k = 0; k < count; k++) this.skip(depth + 1);
          this.shapeDefinition(count);
          return;
        }
        case T.V_KEYED: {
          const count = this.count(this.n - this.i);
          if (depth > MAX_DEPTH) this.fail("nested too deep");
          for (let k = 0; k < count; k++) {
            const length = this.count(this.c - this.j);
            if (length === 9 && this.text(length) === "__proto__") this.fail("a __proto__ key");
            else if (length !== 9) this.j += length;
            this.skip(depth + 1);
          }
          return;
        }
        default:
          this.fail(`unexpected tag ${tag} where a value starts`);
      }
    }

    /** The names and the shape definition after a V_OBJECT_NEW's values: its keys. */
    private shapeDefinition(count: number): string[] {
      for (;;) {
        const tag = this.next();
        if (tag === T.D_NAME) {
          this.names.push(this.text(this.count(this.c - this.j)));
          continue;
        }
        if (tag !== T.D_OSHAPE) this.fail(`expected an object shape, found tag ${tag}`);
        const k = this.count(this.n - this.i);
        if (k !== count) this.fail(`object shape of ${k} keys for ${count} values`);
        const keys = new Array<string>(k);
        for (let m = 0; m < k; m++) {
          const key = this.name();
          if (key === "__proto__") this.fail("a __proto__ key");
          keys[m] = key;
        }
        this.oshapes.push(keys);
        return keys;
      }
    }
  }

  return { decoder: (options?: DecoderOptions) => new Decoder(options?.inputFields, options?.whyFields) };
}
