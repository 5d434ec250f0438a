/**
 * An in-memory LogSink that keeps records compactly, for the simulator's default log: a
 * million-task run makes 14 million records, and kept as objects (with the events and
 * reasons they hold) they filled the heap with tens of millions of young objects that
 * every scavenge copied and every major collection traced (a run with its log kept took
 * far longer than without).
 *
 * Here a record is a row of typed arrays: its shape (actor, and for a transition machine,
 * event, from and to: shared by many records), seq, time, and where its payload starts on
 * a tape of doubles; plus one reference, a transition's id. Payloads (an input's event, a
 * transition's `why`) are written to the tape value by value (log/compact-tape.ts), so
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
import { NOT_HELD, Tape } from "./compact-tape.js";
import { Slabs } from "./slabs.js";
import type { InputRecord, LogRecord, LogSink, TransitionRecord } from "./types.js";
import type { LoggedWhy, MachineName } from "../machines/reasons.js";

const ROW_BITS = 16;
const ROWS = 1 << ROW_BITS;
const ROW_MASK = ROWS - 1;
/** Shape id: the row's reference is the record itself. */
const OBJECT = -1;
/** Payload position: none (a transition without why), or kept as an object (in the reference). */
const NONE = -1;
const BY_REFERENCE = -2;
/** The event name under which an actor's input shape is filed (no machine event has it). */
const INPUT_KEY = "\u0000input";

interface Shape {
  /** An input shape (one per actor): the payload is the event. */
  input: boolean;
  actor: string;
  /** "" for an input shape. */
  machine: MachineName | "";
  event: string;
  from: string;
  to: string;
}

/** A transition's id and a why the tape does not hold. */
class WithWhy {
  constructor(
    readonly id: string,
    readonly why: LoggedWhy,
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
  private readonly slabs = new Slabs();
  private readonly tape = new Tape(this.slabs);
  private closed = false;

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

  appendTransition(actor: string, seq: number, t: number, machine: MachineName, id: string, event: string, from: string, to: string, why?: LoggedWhy): void {
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
    const machine = s.machine as MachineName; // "" only in an input shape
    if (at === NONE) return transitionRecord(s.actor, seq, t, machine, ref as string, s.event, s.from, s.to, undefined);
    if (at === BY_REFERENCE) {
      const w = ref as WithWhy;
      return transitionRecord(s.actor, seq, t, machine, w.id, s.event, s.from, s.to, w.why);
    }
    return transitionRecord(s.actor, seq, t, machine, ref as string, s.event, s.from, s.to, this.read(at) as LoggedWhy);
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
      this.refOf.push(new Array<unknown>(ROWS));
    }
    this.shapeOf[c]![o] = shape;
    this.seqOf[c]![o] = seq;
    this.timeOf[c]![o] = t;
    this.payloadOf[c]![o] = payload;
    this.refOf[c]![o] = ref;
  }

  private shape(actor: string, machine: MachineName | "", event: string, from: string, to: string): number {
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

  /** Writes `value` to the tape: its position, or BY_REFERENCE if the tape cannot hold it exactly. */
  private write(value: unknown): number {
    const at = this.tape.write(value);
    return at === NOT_HELD ? BY_REFERENCE : at;
  }

  private read(at: number): unknown {
    return this.tape.read(at);
  }
}

/** The transition record the recorder builds (same fields, same order). */
function transitionRecord(actor: string, seq: number, t: number, machine: MachineName, id: string, event: string, from: string, to: string, why: LoggedWhy | undefined): TransitionRecord {
  return why === undefined
    ? { actor, seq, t, kind: "transition", machine, id, event, from, to }
    : { actor, seq, t, kind: "transition", machine, id, event, from, to, why };
}
