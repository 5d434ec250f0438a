/**
 * An in-memory LogSink that keeps records compactly, for the simulator's default log: a
 * million-task run makes 14 million records, and kept as objects (with the events and
 * reasons they hold) they filled the heap with tens of millions of young objects that
 * every scavenge copied and every major collection traced (71 s against 49 s for the
 * same run without a log).
 *
 * Here a record is a row of typed arrays: its shape (actor, and for a transition machine,
 * event, from and to: shared by many records), seq, time, and where its payload starts on
 * a tape of doubles; plus one reference, a transition's id. Payloads (an input's event, a
 * transition's `why`) are written to the tape value by value: numbers as doubles, strings
 * as references into a table of strings (task keys and names, which live on anyway), so
 * the log holds no object of its own for a garbage collection to trace. `toArray()` and
 * `record(i)` build the records again: equal to what a MemoryLogSink would hold, field by
 * field in the same order (undefined fields, -0, NaN and infinities included).
 *
 * A payload the tape does not hold exactly (anything but plain objects, arrays without
 * holes and primitives; nesting deeper than 32; a symbol-keyed or accessor property is
 * not looked at) is kept as the object appended, and so are start and stop records. As
 * with MemoryLogSink (copy: false), what is appended must not be changed afterwards.
 */
import { ClosedError } from "../machines/errors.js";
import type { InputRecord, LogRecord, LogSink, TransitionRecord } from "./types.js";

const ROW_BITS = 16;
const ROWS = 1 << ROW_BITS;
const ROW_MASK = ROWS - 1;
/** Doubles per tape chunk (8 MiB); a payload bigger than that is kept as its object. */
const TAPE_BITS = 20;
const TAPE = 1 << TAPE_BITS;
const STRING_BITS = 16;
const STRINGS = 1 << STRING_BITS;
const MAX_DEPTH = 32;
/** Shape id: the row's reference is the record itself. */
const OBJECT = -1;
/** Payload position: none (a transition without why), or kept as an object (in the reference). */
const NONE = -1;
const BY_REFERENCE = -2;
/** The event name under which an actor's input shape is filed (no machine event has it). */
const INPUT_KEY = "\u0000input";

// Tape tags.
const T_UNDEFINED = 0;
const T_NULL = 1;
const T_TRUE = 2;
const T_FALSE = 3;
const T_NUMBER = 4;
const T_STRING = 5;
const T_ARRAY = 6;
const T_OBJECT = 7;

interface Shape {
  /** An input shape (one per actor): the payload is the event. */
  input: boolean;
  actor: string;
  machine: string;
  event: string;
  from: string;
  to: string;
}

/** A transition's id and a why the tape does not hold. */
class WithWhy {
  constructor(
    readonly id: string,
    readonly why: Record<string, unknown>,
  ) {}
}

export class CompactLogSink implements LogSink {
  readonly location: string;
  private n = 0;
  private readonly shapeOf: Int32Array[] = [];
  private readonly seqOf: Int32Array[] = [];
  private readonly timeOf: Float64Array[] = [];
  private readonly payloadOf: Int32Array[] = [];
  private readonly refOf: unknown[][] = [];
  /** Shapes, found by actor, then by event name (INPUT_KEY for inputs), then by the other fields. */
  private readonly shapes: Shape[] = [];
  private readonly shapesByActor = new Map<string, Map<string, number[]>>();
  private lastActor = "";
  private lastActorShapes: Map<string, number[]> | undefined = undefined;
  /** The tape: chunks of doubles; `tape` is the last one, written at `p`. */
  private readonly tapes: Float64Array[] = [];
  private tape: Float64Array = new Float64Array(0);
  private p = 0;
  /** Strings the tape refers to, by index (chunks allocated whole: filling them is cheaper than pushing). */
  private readonly strings: string[][] = [];
  private nStrings = 0;
  /** Object keys, interned: few distinct ones, in every object. */
  private readonly keyIds = new Map<string, number>();
  private readonly keys: string[] = [];
  /** Reading: the chunk and position of the value being decoded. */
  private readTape: Float64Array = new Float64Array(0);
  private r = 0;
  private closed = false;
  private readonly slabs = new Slabs();

  constructor(options: { location?: string } = {}) {
    this.location = options.location ?? "memory";
  }

  /** Records appended so far. */
  get size(): number {
    return this.n;
  }

  append(record: LogRecord): void {
    if (this.closed) throw new ClosedError(`log ${this.location}`);
    this.row(OBJECT, 0, 0, NONE, record);
  }

  appendTransition(actor: string, seq: number, t: number, machine: string, id: string, event: string, from: string, to: string, why?: Record<string, unknown>): void {
    if (this.closed) throw new ClosedError(`log ${this.location}`);
    if ((seq | 0) !== seq || typeof id !== "string") {
      // Not what the rows hold (a seq beyond 2^31, an id that is not a string): kept as the record.
      this.row(OBJECT, 0, 0, NONE, transitionRecord(actor, seq, t, machine, id, event, from, to, why));
      return;
    }
    const shape = this.shape(actor, machine, event, from, to);
    if (why === undefined) {
      this.row(shape, seq, t, NONE, id);
      return;
    }
    const at = this.write(why);
    this.row(shape, seq, t, at, at === BY_REFERENCE ? new WithWhy(id, why) : id);
  }

  appendInput(actor: string, seq: number, event: InputRecord["event"] & { t: number }): void {
    if (this.closed) throw new ClosedError(`log ${this.location}`);
    if ((seq | 0) !== seq) {
      this.row(OBJECT, 0, 0, NONE, { actor, seq, t: event.t, kind: "input", event });
      return;
    }
    const shape = this.shape(actor, "", INPUT_KEY, "", "");
    const at = this.write(event);
    this.row(shape, seq, event.t, at, at === BY_REFERENCE ? event : undefined);
  }

  /** Record `i` (0-based), built anew. */
  record(i: number): LogRecord {
    if (!(i >= 0 && i < this.n)) throw new RangeError(`no record ${i} (${this.n} records)`);
    const c = i >>> ROW_BITS;
    const o = i & ROW_MASK;
    const shape = this.shapeOf[c]![o]!;
    const ref = this.refOf[c]![o];
    if (shape === OBJECT) return ref as LogRecord;
    const s = this.shapes[shape]!;
    const seq = this.seqOf[c]![o]!;
    const t = this.timeOf[c]![o]!;
    const at = this.payloadOf[c]![o]!;
    if (s.input) {
      const event = (at === BY_REFERENCE ? ref : this.read(at)) as InputRecord["event"];
      return { actor: s.actor, seq, t, kind: "input", event };
    }
    if (at === NONE) return transitionRecord(s.actor, seq, t, s.machine, ref as string, s.event, s.from, s.to, undefined);
    if (at === BY_REFERENCE) {
      const w = ref as WithWhy;
      return transitionRecord(s.actor, seq, t, s.machine, w.id, s.event, s.from, s.to, w.why);
    }
    return transitionRecord(s.actor, seq, t, s.machine, ref as string, s.event, s.from, s.to, this.read(at) as Record<string, unknown>);
  }

  /** Every record, in order, as an array. */
  toArray(): LogRecord[] {
    const out = new Array<LogRecord>(this.n);
    for (let i = 0; i < this.n; i++) out[i] = this.record(i);
    return out;
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  // ---- rows ---------------------------------------------------------------------------------

  private row(shape: number, seq: number, t: number, payload: number, ref: unknown): void {
    const i = this.n++;
    const c = i >>> ROW_BITS;
    const o = i & ROW_MASK;
    if (o === 0) {
      const slabs = this.slabs;
      this.shapeOf.push(slabs.int32(ROWS));
      this.seqOf.push(slabs.int32(ROWS));
      this.timeOf.push(slabs.float64(ROWS));
      this.payloadOf.push(slabs.int32(ROWS));
      this.refOf.push([]);
    }
    this.shapeOf[c]![o] = shape;
    this.seqOf[c]![o] = seq;
    this.timeOf[c]![o] = t;
    this.payloadOf[c]![o] = payload;
    this.refOf[c]!.push(ref);
  }

  private shape(actor: string, machine: string, event: string, from: string, to: string): number {
    let byEvent = this.lastActorShapes;
    if (byEvent === undefined || actor !== this.lastActor) {
      byEvent = this.shapesByActor.get(actor);
      if (byEvent === undefined) this.shapesByActor.set(actor, (byEvent = new Map()));
      this.lastActor = actor;
      this.lastActorShapes = byEvent;
    }
    let ids = byEvent.get(event);
    if (ids === undefined) byEvent.set(event, (ids = []));
    const shapes = this.shapes;
    for (let k = 0; k < ids.length; k++) {
      const s = shapes[ids[k]!]!;
      if (s.to === to && s.from === from && s.machine === machine) return ids[k]!;
    }
    const id = shapes.length;
    shapes.push({ input: event === INPUT_KEY, actor, machine, event, from, to });
    ids.push(id);
    return id;
  }

  // ---- the tape -----------------------------------------------------------------------------

  /** Writes `value` to the tape: its position, or BY_REFERENCE if the tape cannot hold it exactly. */
  private write(value: unknown): number {
    for (let attempt = 0; attempt < 2; attempt++) {
      const start = this.p;
      const strings = this.nStrings;
      const outcome = this.value(value, 0);
      if (outcome === OK) {
        const at = (this.tapes.length - 1) * TAPE + start;
        // Positions are int32: past 2^31 doubles (16 GiB of tape) payloads are kept as objects.
        return at <= 0x7fffffff ? at : BY_REFERENCE;
      }
      this.p = start;
      this.dropStrings(strings);
      if (outcome === UNSUPPORTED) return BY_REFERENCE;
      // No room left in this chunk: once more in a fresh one (a payload bigger than a chunk stays an object).
      if (attempt === 0) this.newChunk();
    }
    return BY_REFERENCE;
  }

  private newChunk(): void {
    this.tape = this.slabs.float64(TAPE);
    this.tapes.push(this.tape);
    this.p = 0;
  }

  private value(v: unknown, depth: number): Outcome {
    const tape = this.tape;
    let p = this.p;
    if (p + 2 > tape.length) return FULL;
    switch (typeof v) {
      case "number":
        tape[p] = T_NUMBER;
        tape[p + 1] = v;
        this.p = p + 2;
        return OK;
      case "string":
        tape[p] = T_STRING;
        tape[p + 1] = this.string(v);
        this.p = p + 2;
        return OK;
      case "boolean":
        tape[p] = v ? T_TRUE : T_FALSE;
        this.p = p + 1;
        return OK;
      case "undefined":
        tape[p] = T_UNDEFINED;
        this.p = p + 1;
        return OK;
      case "object": {
        if (v === null) {
          tape[p] = T_NULL;
          this.p = p + 1;
          return OK;
        }
        if (depth >= MAX_DEPTH) return UNSUPPORTED;
        if (Array.isArray(v)) {
          if (Object.getPrototypeOf(v) !== Array.prototype) return UNSUPPORTED;
          const items = v as unknown[];
          tape[p] = T_ARRAY;
          tape[p + 1] = items.length;
          this.p = p + 2;
          for (let i = 0; i < items.length; i++) {
            const item = items[i];
            if (item === undefined && !(i in items)) return UNSUPPORTED; // a hole
            const outcome = this.value(item, depth + 1);
            if (outcome !== OK) return outcome;
          }
          return OK;
        }
        if (Object.getPrototypeOf(v) !== Object.prototype) return UNSUPPORTED;
        const object = v as Record<string, unknown>;
        tape[p] = T_OBJECT;
        const countAt = p + 1;
        this.p = p + 2;
        let count = 0;
        for (const key in object) {
          // An inherited enumerable, or an own "__proto__" (which an assignment would not recreate).
          if (!Object.prototype.hasOwnProperty.call(object, key) || key === "__proto__") return UNSUPPORTED;
          p = this.p;
          if (p + 1 > this.tape.length) return FULL;
          let id = this.keyIds.get(key);
          if (id === undefined) {
            id = this.keys.length;
            this.keyIds.set(key, id);
            this.keys.push(key);
          }
          this.tape[p] = id;
          this.p = p + 1;
          const outcome = this.value(object[key], depth + 1);
          if (outcome !== OK) return outcome;
          count++;
        }
        this.tape[countAt] = count;
        return OK;
      }
      default:
        return UNSUPPORTED; // bigint, symbol, function
    }
  }

  private string(s: string): number {
    const i = this.nStrings++;
    const c = i >>> STRING_BITS;
    if (c === this.strings.length) this.strings.push(new Array<string>(STRINGS));
    this.strings[c]![i & (STRINGS - 1)] = s;
    return i;
  }

  /** Forgets the strings from index `count` on (a payload that was not written after all). */
  private dropStrings(count: number): void {
    for (let i = count; i < this.nStrings; i++) this.strings[i >>> STRING_BITS]![i & (STRINGS - 1)] = undefined as unknown as string;
    this.nStrings = count;
  }

  private read(at: number): unknown {
    this.readTape = this.tapes[Math.floor(at / TAPE)]!;
    this.r = at % TAPE;
    return this.decode();
  }

  private decode(): unknown {
    const tape = this.readTape;
    const tag = tape[this.r++];
    switch (tag) {
      case T_NUMBER:
        return tape[this.r++];
      case T_STRING:
        return this.stringAt(tape[this.r++]!);
      case T_TRUE:
        return true;
      case T_FALSE:
        return false;
      case T_NULL:
        return null;
      case T_UNDEFINED:
        return undefined;
      case T_ARRAY: {
        const n = tape[this.r++]!;
        const items = new Array<unknown>(n);
        for (let i = 0; i < n; i++) items[i] = this.decode();
        return items;
      }
      case T_OBJECT: {
        const n = tape[this.r++]!;
        const object: Record<string, unknown> = {};
        for (let i = 0; i < n; i++) {
          const key = this.keys[tape[this.r++]!]!;
          object[key] = this.decode();
        }
        return object;
      }
      default:
        throw new Error(`compact log: bad tag ${String(tag)} on the tape`);
    }
  }

  private stringAt(i: number): string {
    return this.strings[i >>> STRING_BITS]![i & (STRINGS - 1)]!;
  }
}

/** The first slab's bytes; each next one is twice as big, up to MAX_SLAB. */
const FIRST_SLAB = 16 * 2 ** 20;
const MAX_SLAB = 512 * 2 ** 20;

/**
 * The log's typed arrays, cut from few large ArrayBuffers. V8 starts a major collection each
 * time the memory held by ArrayBuffers has grown by 64 MB since the last one, however small
 * the buffers: a simulation's kept log holds about 1.5 KB of rows and tape per task (153 MB
 * at 100,000 tasks) in 8 MiB and 256 KiB arrays, and at a million tasks each of the ~20
 * collections that growth set off traced the whole simulation's heap (22 major collections
 * against 3 with the log dropped). Slabs that double in size set off a few, most while the heap is small.
 * A slab's untouched tail costs address space, not memory.
 */
class Slabs {
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

const OK = 0;
const FULL = 1;
const UNSUPPORTED = 2;
type Outcome = typeof OK | typeof FULL | typeof UNSUPPORTED;

/** The transition record the recorder builds (same fields, same order). */
function transitionRecord(actor: string, seq: number, t: number, machine: string, id: string, event: string, from: string, to: string, why: Record<string, unknown> | undefined): TransitionRecord {
  return why === undefined
    ? { actor, seq, t, kind: "transition", machine, id, event, from, to }
    : { actor, seq, t, kind: "transition", machine, id, event, from, to, why };
}
