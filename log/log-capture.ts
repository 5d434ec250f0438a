/**
 * The file log's main-thread half: records are captured into a batch laid out as the
 * capture stream (log/capture-tags.ts). The log writer thread (log/log-writer.ts)
 * writes a batch as it is (a version-2 frame) or turns it into JSON lines (version 1).
 * Capturing is what the actors' thread pays for the log, so the common records take few
 * steps: a transition is its shape's number (actor, machine, event, from, to: found by
 * identity among the few an actor has), seq, t and its id, mostly a V_REF (a task key already
 * written in the batch is its number there); an object is its shape's number and its values (the
 * shape found by walking a trie of key sequences, comparing each key with the one taken
 * last time).
 *
 * The capture makes the decisions JSON.stringify makes (undefined, function and symbol
 * fields dropped, such array items written as null); a record holding anything else
 * (toJSON, class instances, typed arrays, bigint, deep nesting, an own "__proto__") is
 * sent as the text JSON.stringify gives it. Whether Object.prototype or Array.prototype
 * carry enumerable properties or a toJSON (which would change what JSON.stringify does)
 * is checked once per batch; while they do, objects and arrays go as text.
 */
import {
  D_NAME,
  D_OSHAPE,
  D_TSHAPE,
  R_INPUT,
  R_RAW,
  R_START,
  R_STOP,
  R_STOP_REASON,
  R_TRANSITION,
  R_TRANSITION_WHY,
  REF_MIN,
  V_ARRAY,
  V_FALSE,
  V_KEYED,
  V_NULL,
  V_NUMBER,
  V_OBJECT,
  V_OBJECT_NEW,
  V_REF,
  V_STRING,
  V_TRUE,
} from "./capture-tags.js";
import { KeyNode } from "./key-trie.js";
import type { InputRecord, LogRecord } from "./types.js";
import type { LoggedWhy, MachineName } from "../machines/reasons.js";

/** Nesting deeper than this is left to JSON.stringify (which also reports cycles). */
const MAX_DEPTH = 32;
/** Trie nodes kept for object shapes; past this, objects of new key sequences are written keyed. */
const MAX_SHAPE_NODES = 1 << 16;
/** Objects with more keys than this are written keyed (dictionaries, not records). */
const MAX_SHAPE_KEYS = 64;
/** Names and transition shapes kept; past this, new ones are not remembered from batch to batch. */
const MAX_NAMES = 1 << 16;
const MAX_TSHAPES = 1 << 16;
/** Actors looked up by identity before the map. */
const RECENT_ACTORS = 4;
/**
 * Strings numbered per batch for V_REF; past this (a huge record), the rest are written out.
 * The map is cleared at a batch's start once it holds REFS_KEPT: a number is only good in its
 * own batch, and a map of tens of thousands of task keys made every lookup a cache miss (the
 * capture's cost a task grew with the number of tasks).
 */
const MAX_REFS = 1 << 14;
const REFS_KEPT = 1 << 12;

const OK = 0;
const FULL = 1;
const UNSUPPORTED = 2;
type Outcome = typeof OK | typeof FULL | typeof UNSUPPORTED;

/**
 * Something defined in a batch: `frame` is the batch it was last defined in, `id` its number
 * there, `at` its place in the batch's list of definitions.
 */
interface Definable {
  frame: number;
  id: number;
  at: number;
}

/** An actor's name and its transition shapes, by event. */
interface ActorEntry {
  name: Name;
  shapes: Map<string, TShape[]>;
}

class Name implements Definable {
  frame = -1;
  id = 0;
  at = 0;
  constructor(readonly text: string) {}
}

/** A transition's shape: (actor, machine, event, from, to). Filed per actor and event. */
class TShape implements Definable {
  frame = -1;
  id = 0;
  at = 0;
  constructor(
    readonly machine: string,
    readonly from: string,
    readonly to: string,
    readonly names: readonly Name[],
  ) {}
}

/** An object shape: the key sequence from the root. */
class ShapeNode extends KeyNode<ShapeNode> implements Definable {
  frame = -1;
  id = 0;
  at = 0;
}

export class LogCapture {
  nums: Float64Array;
  chars: Uint16Array;
  n = 0;
  c = 0;
  /** Records in the batch. */
  records = 0;
  /** The batch's number: definitions made in another batch do not count in this one. */
  private frame = 0;
  private nextName = 0;
  private nextTShape = 0;
  private nextOShape = 0;
  /** What was defined in this batch, in order (undone when a record is rolled back). */
  private readonly defined: Definable[] = [];
  /**
   * Strings of REF_MIN code units or more, numbered for V_REF in their batch (up to MAX_REFS
   * a batch): the value is frame * MAX_REFS + number, so that a new batch starts without
   * clearing the map (which would grow it again from nothing each time); it is cleared
   * once it holds REFS_KEPT strings.
   */
  private readonly refs = new Map<string, number>();
  private readonly refList: string[] = [];
  private refBase = 0;
  /** Whether Object.prototype and Array.prototype leave JSON.stringify's behaviour alone (checked per batch). */
  private plain = pristinePrototypes();
  private readonly names = new Map<string, Name>();
  private readonly actors = new Map<string, ActorEntry>();
  /** The actors met last, looked through by identity before the map (a process has a few, records alternate between them). */
  private readonly recentActors: (string | undefined)[] = new Array<string | undefined>(RECENT_ACTORS).fill(undefined);
  private readonly recentEntries: (ActorEntry | undefined)[] = new Array<ActorEntry | undefined>(RECENT_ACTORS).fill(undefined);
  private recentNext = 0;
  private tshapeCount = 0;
  /** Where the record being captured began (see begin()). */
  private n0 = 0;
  private c0 = 0;
  private mark0 = 0;
  private refs0 = 0;
  private readonly root = new ShapeNode(null, "", 0);
  private shapeNodes = 1;

  constructor(nums: Float64Array, chars: Uint16Array) {
    this.nums = nums;
    this.chars = chars;
  }

  get empty(): boolean {
    return this.n === 0 && this.c === 0;
  }

  /** Starts the next batch in the same arrays (the finished one has been copied out). */
  reset(): void {
    this.n = 0;
    this.c = 0;
    this.records = 0;
    this.frame++;
    this.nextName = 0;
    this.nextTShape = 0;
    this.nextOShape = 0;
    this.defined.length = 0;
    this.refList.length = 0;
    this.refBase = this.frame * MAX_REFS;
    if (this.refs.size >= REFS_KEPT) this.refs.clear();
    this.plain = pristinePrototypes();
  }

  /** Starts the next batch in these arrays (after a batch grew past the standard size). */
  replace(nums: Float64Array, chars: Uint16Array): void {
    this.nums = nums;
    this.chars = chars;
    this.reset();
  }

  /** Grows the current batch's arrays `factor` times (a record too big for an empty batch). */
  grow(factor: number): void {
    const nums = new Float64Array(this.nums.length * factor);
    nums.set(this.nums.subarray(0, this.n));
    const chars = new Uint16Array(this.chars.length * factor);
    chars.set(this.chars.subarray(0, this.c));
    this.nums = nums;
    this.chars = chars;
  }

  /**
   * Makes room in place for `nums` doubles and `chars` code units more when the record being
   * captured began an empty batch (it is bigger than a batch): such a record is then walked
   * once, instead of again from its start in larger arrays. False (no room) otherwise.
   */
  private grown(nums: number, chars: number): boolean {
    if (this.n0 !== 0 || this.c0 !== 0) return false;
    let factor = 2;
    while (this.n + nums > this.nums.length * factor || this.c + chars > this.chars.length * factor) factor *= 2;
    this.grow(factor);
    return true;
  }

  /**
   * Captures a transition given as fields. False if the batch has no room for it (nothing
   * of it is kept): seal the batch and try again in an empty one, growing it if need be.
   */
  transition(actor: string, seq: number, t: number, machine: MachineName, id: string, event: string, from: string, to: string, why: LoggedWhy | undefined): boolean {
    const shapes = this.actor(actor).shapes;
    const list = shapes.get(event);
    if (list !== undefined && why === undefined) {
      // The common case in one go: a shape defined in this batch, no why, room to spare.
      for (let k = 0; k < list.length; k++) {
        const shape = list[k]!;
        if (shape.machine !== machine || shape.from !== from || shape.to !== to) continue;
        if (shape.frame !== this.frame) break;
        const nums = this.nums;
        const n = this.n;
        if (n + 6 > nums.length) break;
        // Not an empty batch (the shape is defined in it): string() must not grow it in place.
        this.n0 = n;
        nums[n] = R_TRANSITION;
        nums[n + 1] = shape.id;
        nums[n + 2] = seq;
        nums[n + 3] = t;
        this.n = n + 4;
        if (this.string(id) !== OK) {
          this.n = n;
          break;
        }
        this.records++;
        return true;
      }
    }
    this.begin();
    const outcome = this.transitionBody(shapes, actor, seq, t, machine, id, event, from, to, why);
    if (outcome !== UNSUPPORTED) return this.end(outcome);
    return this.asText(why === undefined ? { actor, seq, t, kind: "transition", machine, id, event, from, to } : { actor, seq, t, kind: "transition", machine, id, event, from, to, why });
  }

  /**
   * Captures the input record { actor, seq, t: event.t, kind: "input", event } without the
   * record object; false if the batch has no room for it (see `transition`).
   */
  input(actor: string, seq: number, event: InputRecord["event"] & { t: number }): boolean {
    const t = event.t;
    if (typeof t !== "number") return this.record({ actor, seq, t, kind: "input", event });
    this.begin();
    let outcome = this.head(R_INPUT, actor, seq, t);
    if (outcome === OK) outcome = this.value(event, 1);
    return outcome === UNSUPPORTED ? this.asText({ actor, seq, t, kind: "input", event }) : this.end(outcome);
  }

  /** Captures any record; false if the batch has no room for it (see `transition`). */
  record(record: LogRecord): boolean {
    if (record.kind === "transition" && hasRecorderLayout(record)) {
      return this.transition(record.actor, record.seq, record.t, record.machine, record.id, record.event, record.from, record.to, record.why);
    }
    this.begin();
    const outcome = this.recordBody(record);
    return outcome === UNSUPPORTED ? this.asText(record) : this.end(outcome);
  }

  /** Notes where the record being captured starts, to roll back to. */
  private begin(): void {
    this.n0 = this.n;
    this.c0 = this.c;
    this.mark0 = this.defined.length;
    this.refs0 = this.refList.length;
  }

  /** Keeps the record begun if it was written whole; else rolls it back: false, no room. */
  private end(outcome: Outcome): boolean {
    if (outcome !== OK) {
      this.undo(this.n0, this.c0, this.mark0, this.refs0);
      return false;
    }
    this.records++;
    return true;
  }

  /** The record begun, as the text JSON.stringify gives it (which throws what it throws: bigint, cycles). */
  private asText(record: LogRecord): boolean {
    this.undo(this.n0, this.c0, this.mark0, this.refs0);
    return this.end(this.raw(JSON.stringify(record)));
  }

  // ---- records ------------------------------------------------------------------------------

  private recordBody(record: LogRecord): Outcome {
    if (!hasRecorderLayout(record)) return UNSUPPORTED;
    switch (record.kind) {
      case "input": {
        const outcome = this.head(R_INPUT, record.actor, record.seq, record.t);
        return outcome === OK ? this.value(record.event, 1) : outcome;
      }
      case "start": {
        let outcome = this.head(R_START, record.actor, record.seq, record.t);
        if (outcome === OK) outcome = this.string(record.role);
        return outcome === OK ? this.value(record.init, 1) : outcome;
      }
      case "stop": {
        const reason = record.reason;
        const outcome = this.head(reason === undefined ? R_STOP : R_STOP_REASON, record.actor, record.seq, record.t);
        return outcome === OK && reason !== undefined ? this.string(reason) : outcome;
      }
      default:
        return UNSUPPORTED; // transitions come through transition()
    }
  }

  private transitionBody(shapes: Map<string, TShape[]>, actor: string, seq: number, t: number, machine: MachineName, id: string, event: string, from: string, to: string, why: LoggedWhy | undefined): Outcome {
    let shape: TShape | undefined;
    let list = shapes.get(event);
    if (list !== undefined) {
      for (const candidate of list) {
        if (candidate.machine === machine && candidate.from === from && candidate.to === to) {
          shape = candidate;
          break;
        }
      }
    }
    if (shape === undefined) {
      const names = [this.nameOf(actor), this.nameOf(machine), this.nameOf(event), this.nameOf(from), this.nameOf(to)];
      shape = new TShape(machine, from, to, names);
      if (this.tshapeCount < MAX_TSHAPES) {
        if (list === undefined) shapes.set(event, (list = []));
        list.push(shape);
        this.tshapeCount++;
      }
    }
    if (shape.frame !== this.frame) {
      for (const name of shape.names) if (this.defineName(name) !== OK) return FULL;
      if (this.n + 6 > this.nums.length && !this.grown(6, 0)) return FULL;
      const nums = this.nums;
      nums[this.n++] = D_TSHAPE;
      for (const name of shape.names) nums[this.n++] = name.id;
      this.define(shape, this.nextTShape++);
    }
    if (this.n + 4 > this.nums.length && !this.grown(4, 0)) return FULL;
    const nums = this.nums;
    const n = this.n;
    nums[n] = why === undefined ? R_TRANSITION : R_TRANSITION_WHY;
    nums[n + 1] = shape.id;
    nums[n + 2] = seq;
    nums[n + 3] = t;
    this.n = n + 4;
    const outcome = this.string(id);
    if (outcome !== OK || why === undefined) return outcome;
    // `why` is an object (the recorder's reasons); anything else goes as text, as JSON.stringify writes it.
    if (typeof why !== "object" || why === null || Array.isArray(why)) return UNSUPPORTED;
    return this.value(why, 1);
  }

  /** [tag, actor, seq, t] for inputs, starts and stops, the actor's name defined first if need be. */
  private head(tag: number, actor: string, seq: number, t: number): Outcome {
    const name = this.actor(actor).name;
    if (this.defineName(name) !== OK || (this.n + 4 > this.nums.length && !this.grown(4, 0))) return FULL;
    const nums = this.nums;
    const n = this.n;
    nums[n] = tag;
    nums[n + 1] = name.id;
    nums[n + 2] = seq;
    nums[n + 3] = t;
    this.n = n + 4;
    return OK;
  }

  private raw(json: string): Outcome {
    if ((this.n + 2 > this.nums.length || this.c + json.length > this.chars.length) && !this.grown(2, json.length)) return FULL;
    this.nums[this.n++] = R_RAW;
    this.nums[this.n++] = json.length;
    this.text(json);
    return OK;
  }

  // ---- definitions --------------------------------------------------------------------------

  private actor(actor: string): ActorEntry {
    const recent = this.recentActors;
    for (let k = 0; k < RECENT_ACTORS; k++) if (recent[k] === actor) return this.recentEntries[k]!;
    let entry = this.actors.get(actor);
    if (entry === undefined) {
      entry = { name: this.nameOf(actor), shapes: new Map() };
      if (this.actors.size < MAX_NAMES) this.actors.set(actor, entry);
    }
    recent[this.recentNext] = actor;
    this.recentEntries[this.recentNext] = entry;
    this.recentNext = (this.recentNext + 1) % RECENT_ACTORS;
    return entry;
  }

  private nameOf(text: string): Name {
    let name = this.names.get(text);
    if (name === undefined) {
      name = new Name(text);
      if (this.names.size < MAX_NAMES) this.names.set(text, name);
    }
    return name;
  }

  /** Defines `name` in this batch unless it already is. */
  private defineName(name: Name): Outcome {
    if (name.frame === this.frame) return OK;
    const text = name.text;
    if ((this.n + 2 > this.nums.length || this.c + text.length > this.chars.length) && !this.grown(2, text.length)) return FULL;
    this.nums[this.n++] = D_NAME;
    this.nums[this.n++] = text.length;
    this.text(text);
    this.define(name, this.nextName++);
    return OK;
  }

  private define(item: Definable, id: number): void {
    item.frame = this.frame;
    item.id = id;
    item.at = this.defined.push(item) - 1;
  }

  /** Rolls the batch back to n0/c0, forgetting what was defined since `mark`. */
  private undo(n0: number, c0: number, mark: number, refs0: number): void {
    this.n = n0;
    this.c = c0;
    const refList = this.refList;
    for (let k = refList.length - 1; k >= refs0; k--) this.refs.delete(refList[k]!);
    refList.length = refs0;
    const defined = this.defined;
    for (let k = defined.length - 1; k >= mark; k--) {
      const item = defined[k]!;
      item.frame = -1;
      if (item instanceof Name) this.nextName--;
      else if (item instanceof TShape) this.nextTShape--;
      else this.nextOShape--;
    }
    defined.length = mark;
  }

  // ---- values -------------------------------------------------------------------------------

  /** Writes code units; the caller has checked the room. */
  private text(s: string): void {
    const chars = this.chars;
    const c = this.c;
    for (let i = 0; i < s.length; i++) chars[c + i] = s.charCodeAt(i);
    this.c = c + s.length;
  }

  private string(s: string): Outcome {
    const n = this.n;
    const nums = this.nums;
    const length = s.length;
    if (length >= REF_MIN) {
      const ref = this.refs.get(s);
      if (ref !== undefined && ref >= this.refBase) {
        if (n + 2 > nums.length) return this.grown(2, 0) ? this.string(s) : FULL;
        nums[n] = V_REF;
        nums[n + 1] = ref - this.refBase;
        this.n = n + 2;
        return OK;
      }
    }
    if (n + 2 > nums.length || this.c + length > this.chars.length) return this.grown(2, length) ? this.string(s) : FULL;
    nums[n] = V_STRING;
    nums[n + 1] = length;
    this.n = n + 2;
    this.text(s);
    if (length >= REF_MIN && this.refList.length < MAX_REFS) this.refs.set(s, this.refBase + this.refList.push(s) - 1);
    return OK;
  }

  private value(v: unknown, depth: number): Outcome {
    const nums = this.nums;
    const n = this.n;
    if (typeof v === "number") {
      if (n + 2 > nums.length) return this.grown(2, 0) ? this.value(v, depth) : FULL;
      nums[n] = V_NUMBER;
      nums[n + 1] = v;
      this.n = n + 2;
      return OK;
    }
    if (typeof v === "string") return this.string(v);
    if (typeof v === "object") {
      if (v === null) {
        if (n + 1 > nums.length) return this.grown(1, 0) ? this.value(v, depth) : FULL;
        nums[n] = V_NULL;
        this.n = n + 1;
        return OK;
      }
      if (depth > MAX_DEPTH || !this.plain) return UNSUPPORTED;
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto === Array.prototype) return Array.isArray(v) ? this.array(v as unknown[], depth) : UNSUPPORTED;
      return (proto === Object.prototype || proto === null) && !Array.isArray(v) ? this.object(v as Record<string, unknown>, depth) : UNSUPPORTED;
    }
    if (typeof v === "boolean") {
      if (n + 1 > nums.length) return this.grown(1, 0) ? this.value(v, depth) : FULL;
      nums[n] = v ? V_TRUE : V_FALSE;
      this.n = n + 1;
      return OK;
    }
    // undefined or a function as a whole value (JSON.stringify would drop the field or write
    // null, depending on where): bigint and symbol throw or vanish there too.
    return UNSUPPORTED;
  }

  private array(items: unknown[], depth: number): Outcome {
    const length = items.length;
    if (this.n + 2 > this.nums.length && !this.grown(2, 0)) return FULL;
    this.nums[this.n] = V_ARRAY;
    this.nums[this.n + 1] = length;
    this.n += 2;
    for (let i = 0; i < length; i++) {
      const item = items[i];
      // Numbers here, not in value(): an item of a double array read and written in one
      // function stays a raw double instead of being boxed for the call.
      if (typeof item === "number") {
        const n = this.n;
        if (n + 2 > this.nums.length && !this.grown(2, 0)) return FULL;
        this.nums[n] = V_NUMBER;
        this.nums[n + 1] = item;
        this.n = n + 2;
        continue;
      }
      const type = typeof item;
      if (type === "undefined" || type === "function" || type === "symbol") {
        if (this.n + 1 > this.nums.length && !this.grown(1, 0)) return FULL;
        this.nums[this.n++] = V_NULL;
        continue;
      }
      const outcome = this.value(item, depth + 1);
      if (outcome !== OK) return outcome;
    }
    return OK;
  }

  private object(object: Record<string, unknown>, depth: number): Outcome {
    const head = this.n;
    if (head + 2 > this.nums.length && !this.grown(2, 0)) return FULL;
    const c0 = this.c;
    const mark = this.defined.length;
    const refs0 = this.refList.length;
    this.n = head + 2;
    let node = this.root;
    let count = 0;
    for (const key in object) {
      const item = object[key];
      const type = typeof item;
      if (type === "undefined" || type === "function" || type === "symbol") continue;
      let next = node.next(key);
      if (next === undefined) {
        // JSON.stringify would call an own toJSON; an own "__proto__" would not come back as a field.
        if (key === "toJSON" || key === "__proto__") return UNSUPPORTED;
        if (this.shapeNodes >= MAX_SHAPE_NODES || node.size >= MAX_SHAPE_KEYS) {
          this.undo(head, c0, mark, refs0);
          return this.keyed(object, depth);
        }
        next = node.add(new ShapeNode(node, key, node.size + 1));
        this.shapeNodes++;
      }
      node = next;
      count++;
      if (type === "number") {
        const n = this.n;
        if (n + 2 > this.nums.length && !this.grown(2, 0)) return FULL;
        this.nums[n] = V_NUMBER;
        this.nums[n + 1] = item as number;
        this.n = n + 2;
        continue;
      }
      const outcome = type === "string" ? this.string(item as string) : this.value(item, depth + 1);
      if (outcome !== OK) return outcome;
    }
    // Defined before this object began (one defined inside it, by a nested object of the
    // same keys, comes after this object's head in the stream: it is defined again).
    if (node.frame === this.frame && node.at < mark) {
      this.nums[head] = V_OBJECT;
      this.nums[head + 1] = node.id;
      return OK;
    }
    return this.defineShape(node, head, count);
  }

  /**
   * An object's shape new to this batch: its keys follow the values. Apart from object() so
   * that object() creates no closure: one capturing `this` would make V8 allocate a context
   * on every call (40 bytes an object captured).
   */
  private defineShape(node: ShapeNode, head: number, count: number): Outcome {
    this.nums[head] = V_OBJECT_NEW;
    this.nums[head + 1] = count;
    const keys = node.keys();
    const names: Name[] = [];
    for (const key of keys) {
      const name = this.nameOf(key);
      if (this.defineName(name) !== OK) return FULL;
      names.push(name);
    }
    if (this.n + 2 + count > this.nums.length && !this.grown(2 + count, 0)) return FULL;
    const nums = this.nums;
    nums[this.n++] = D_OSHAPE;
    nums[this.n++] = count;
    for (const name of names) nums[this.n++] = name.id;
    this.define(node, this.nextOShape++);
    return OK;
  }

  /** An object written key by key, each key inline (a dictionary). */
  private keyed(object: Record<string, unknown>, depth: number): Outcome {
    const head = this.n;
    if (head + 2 > this.nums.length && !this.grown(2, 0)) return FULL;
    this.n = head + 2;
    let count = 0;
    for (const key in object) {
      const item = object[key];
      const type = typeof item;
      if (type === "undefined" || type === "function" || type === "symbol") continue;
      if (key === "toJSON" || key === "__proto__") return UNSUPPORTED;
      if ((this.n + 1 > this.nums.length || this.c + key.length > this.chars.length) && !this.grown(1, key.length)) return FULL;
      this.nums[this.n++] = key.length;
      this.text(key);
      count++;
      const outcome = this.value(item, depth + 1);
      if (outcome !== OK) return outcome;
    }
    this.nums[head] = V_KEYED;
    this.nums[head + 1] = count;
    return OK;
  }
}

/** Whether the prototypes plain objects and arrays inherit from add nothing JSON.stringify would see. */
function pristinePrototypes(): boolean {
  for (const _ in []) return false; // an enumerable property on Array.prototype or Object.prototype
  return (Object.prototype as { toJSON?: unknown }).toJSON === undefined && (Array.prototype as { toJSON?: unknown }).toJSON === undefined;
}

const TRANSITION_KEYS = ["actor", "seq", "t", "kind", "machine", "id", "event", "from", "to"];
const TRANSITION_WHY_KEYS = [...TRANSITION_KEYS, "why"];
const INPUT_KEYS = ["actor", "seq", "t", "kind", "event"];
const START_KEYS = ["actor", "seq", "t", "kind", "role", "init"];
const STOP_KEYS = ["actor", "seq", "t", "kind"];
const STOP_REASON_KEYS = [...STOP_KEYS, "reason"];

/**
 * Whether the record has exactly the fields the recorder writes, in its order, with the
 * types the stream layout needs. Anything else goes through JSON.stringify.
 */
function hasRecorderLayout(record: LogRecord): boolean {
  const r = record as unknown as Record<string, unknown>;
  let expected: readonly string[];
  switch (record.kind) {
    case "transition":
      if (typeof r.machine !== "string" || typeof r.id !== "string" || typeof r.event !== "string" || typeof r.from !== "string" || typeof r.to !== "string") return false;
      expected = r.why === undefined ? TRANSITION_KEYS : TRANSITION_WHY_KEYS;
      break;
    case "input":
      expected = INPUT_KEYS;
      break;
    case "start":
      if (typeof r.role !== "string") return false;
      expected = START_KEYS;
      break;
    case "stop":
      if (r.reason !== undefined && typeof r.reason !== "string") return false;
      expected = r.reason === undefined ? STOP_KEYS : STOP_REASON_KEYS;
      break;
    default:
      return false;
  }
  if (typeof r.actor !== "string" || typeof r.seq !== "number" || typeof r.t !== "number") return false;
  if (Object.getPrototypeOf(record) !== Object.prototype || "toJSON" in record) return false;
  const keys = Object.keys(record);
  if (keys.length !== expected.length) return false;
  for (let i = 0; i < keys.length; i++) if (keys[i] !== expected[i]) return false;
  return true;
}
