/**
 * The file log's main-thread half: records are captured into a compact binary batch (a
 * stream of doubles and a stream of UTF-16 code units) that the log writer thread
 * (replay/log-format-thread.ts) turns into the JSON lines of docs/log-format.md. Capturing
 * costs a fraction of encoding JSON: no number-to-text conversion, no escaping, no
 * checksum, and recurring strings (actor names, machines, events, states, object keys)
 * are sent once per log and then referred to by number.
 *
 * The capture makes the decisions JSON.stringify makes (undefined fields dropped,
 * undefined array items written as null, non-finite numbers written as null); a record
 * holding anything else (toJSON, class instances, typed arrays, bigint, deep nesting) is
 * sent as the text JSON.stringify gives it, so every line is exactly
 * `JSON.stringify(record)`.
 *
 * Stream layout (all tags and counts are doubles in `nums`; text is code units in `chars`):
 *   TRANSITION actor seq t machine id event from to has-why   then why if has-why
 *   INPUT actor seq t        then the event value
 *   START actor seq t role-len   chars: role; then the init value
 *   STOP actor seq t reason-len  (-1: no reason) chars: reason
 *   RAW len                  chars: the record's JSON
 *   where actor, machine, event, from, to (and object keys) are string refs: an id >= 0, or
 *   INLINE len + chars, or DEFINE id len + chars followed by the id (the first use)
 *   values: NULL | TRUE | FALSE | NUMBER x | STRING len (chars) | ARRAY n v... | OBJECT n (key-ref v)...
 *   The transition's id (a task key, mostly) is a ref too, always INLINE: keys are many and
 *   each recurs in a dozen records, but copying 40 code units costs less than looking a key up
 *   in a table of 100,000 (an earlier ring of recent values did that, and was the capture's
 *   largest cost in a 100,000-task run; docs/performance.md).
 */
import type { InputRecord, LogRecord } from "./types.js";

export const TRANSITION = 2;
export const INPUT = 3;
export const START = 4;
export const STOP = 5;
export const RAW = 6;
export const V_NULL = 10;
export const V_TRUE = 11;
export const V_FALSE = 12;
export const V_NUMBER = 13;
export const V_STRING = 14;
export const V_ARRAY = 15;
export const V_OBJECT = 16;
/** A string ref that is not interned: its length and code units follow. */
export const INLINE = -1;
/** A string ref that interns a new string: its id, length and code units follow, then the ref itself. */
export const DEFINE = -2;

/** Interned names per log (ids 0...); past this, new names are sent inline. */
const MAX_INTERNED = 65_536;
/** Nesting deeper than this is left to JSON.stringify (which also reports cycles). */
const MAX_DEPTH = 32;

const OK = 0;
const FULL = 1;
const UNSUPPORTED = 2;
type Outcome = typeof OK | typeof FULL | typeof UNSUPPORTED;

export class LogCapture {
  nums: Float64Array;
  chars: Uint16Array;
  n = 0;
  c = 0;
  private readonly ids = new Map<string, number>();
  /** Names interned since the record being captured began: forgotten again if it is rolled back. */
  private readonly fresh: string[] = [];
  /** The names of the latest transition (the next one is mostly by the same actor, of the same machine). */
  private lastActor = "";
  private lastActorId = -1;
  private lastMachine = "";
  private lastMachineId = -1;

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
  }

  /** Starts the next batch in these arrays (after a batch grew past the standard size). */
  replace(nums: Float64Array, chars: Uint16Array): void {
    this.nums = nums;
    this.chars = chars;
    this.reset();
  }

  /**
   * Captures a transition given as fields. False if the batch has no room for it (nothing
   * of it is kept): seal the batch and try again in an empty one, growing it if need be.
   */
  transition(actor: string, seq: number, t: number, machine: string, id: string, event: string, from: string, to: string, why: Record<string, unknown> | undefined): boolean {
    const n0 = this.n;
    const c0 = this.c;
    this.forgetFresh();
    let outcome = this.transitionBody(actor, seq, t, machine, id, event, from, to, why);
    if (outcome === UNSUPPORTED) {
      this.rollback(n0, c0);
      const record = why === undefined
        ? { actor, seq, t, kind: "transition" as const, machine, id, event, from, to }
        : { actor, seq, t, kind: "transition" as const, machine, id, event, from, to, why };
      outcome = this.raw(JSON.stringify(record)); // throws as JSON.stringify does (bigint, cycles)
    }
    if (outcome === FULL) {
      this.rollback(n0, c0);
      return false;
    }
    return true;
  }

  /** Captures any record; false if the batch has no room for it (see `transition`). */
  record(record: LogRecord): boolean {
    const n0 = this.n;
    const c0 = this.c;
    this.forgetFresh();
    let outcome = this.recordBody(record);
    if (outcome === UNSUPPORTED) {
      this.rollback(n0, c0);
      outcome = this.raw(JSON.stringify(record)); // throws as JSON.stringify does (bigint, cycles)
    }
    if (outcome === FULL) {
      this.rollback(n0, c0);
      return false;
    }
    return true;
  }

  /**
   * Captures the input record { actor, seq, t: event.t, kind: "input", event } without the
   * record object; false if the batch has no room for it (see `transition`).
   */
  input(actor: string, seq: number, event: InputRecord["event"] & { t: number }): boolean {
    const t = event.t;
    if (typeof t !== "number") return this.record({ actor, seq, t, kind: "input", event });
    const n0 = this.n;
    const c0 = this.c;
    this.forgetFresh();
    let outcome: Outcome = FULL;
    if (this.n + 4 <= this.nums.length) {
      this.nums[this.n++] = INPUT;
      if (this.ref(actor) === OK && this.n + 2 <= this.nums.length) {
        this.nums[this.n++] = seq;
        this.nums[this.n++] = t;
        outcome = this.value(event, 1);
      }
    }
    if (outcome === UNSUPPORTED) {
      this.rollback(n0, c0);
      outcome = this.raw(JSON.stringify({ actor, seq, t, kind: "input", event })); // throws as JSON.stringify does
    }
    if (outcome === FULL) {
      this.rollback(n0, c0);
      return false;
    }
    return true;
  }

  /** Grows the current (empty) batch so that a record too big for it fits: `factor` times larger. */
  grow(factor: number): void {
    const nums = new Float64Array(this.nums.length * factor);
    nums.set(this.nums.subarray(0, this.n));
    const chars = new Uint16Array(this.chars.length * factor);
    chars.set(this.chars.subarray(0, this.c));
    this.nums = nums;
    this.chars = chars;
  }

  private forgetFresh(): void {
    if (this.fresh.length !== 0) this.fresh.length = 0;
  }

  private rollback(n0: number, c0: number): void {
    this.n = n0;
    this.c = c0;
    for (const s of this.fresh) this.ids.delete(s);
    this.fresh.length = 0;
  }

  private transitionBody(actor: string, seq: number, t: number, machine: string, id: string, event: string, from: string, to: string, why: Record<string, unknown> | undefined): Outcome {
    // The common case in one go: every name already interned and room to spare.
    const nums = this.nums;
    const n = this.n;
    if (n + 16 <= nums.length && why === undefined && this.c + id.length <= this.chars.length) {
      const actorId = actor === this.lastActor ? this.lastActorId : this.ids.get(actor);
      const machineId = machine === this.lastMachine ? this.lastMachineId : this.ids.get(machine);
      const eventId = this.ids.get(event);
      const fromId = this.ids.get(from);
      const toId = this.ids.get(to);
      if (actorId !== undefined && machineId !== undefined && eventId !== undefined && fromId !== undefined && toId !== undefined) {
        nums[n] = TRANSITION;
        nums[n + 1] = actorId;
        nums[n + 2] = seq;
        nums[n + 3] = t;
        nums[n + 4] = machineId;
        nums[n + 5] = INLINE;
        nums[n + 6] = id.length;
        this.text(id);
        nums[n + 7] = eventId;
        nums[n + 8] = fromId;
        nums[n + 9] = toId;
        nums[n + 10] = 0;
        this.n = n + 11;
        this.lastActor = actor;
        this.lastActorId = actorId;
        this.lastMachine = machine;
        this.lastMachineId = machineId;
        return OK;
      }
    }
    if (this.n + 8 > this.nums.length) return FULL;
    this.nums[this.n++] = TRANSITION;
    if (this.ref(actor) !== OK) return FULL;
    if (this.n + 8 > this.nums.length) return FULL;
    this.nums[this.n++] = seq;
    this.nums[this.n++] = t;
    if (this.ref(machine) !== OK) return FULL;
    if (this.n + 2 > this.nums.length || this.c + id.length > this.chars.length) return FULL;
    this.nums[this.n++] = INLINE;
    this.nums[this.n++] = id.length;
    this.text(id);
    if (this.ref(event) !== OK || this.ref(from) !== OK || this.ref(to) !== OK) return FULL;
    if (this.n + 1 > this.nums.length) return FULL;
    this.nums[this.n++] = why === undefined ? 0 : 1;
    return why === undefined ? OK : this.value(why, 1);
  }

  private recordBody(record: LogRecord): Outcome {
    if (!hasRecorderLayout(record)) return UNSUPPORTED;
    switch (record.kind) {
      case "transition":
        return this.transitionBody(record.actor, record.seq, record.t, record.machine, record.id, record.event, record.from, record.to, record.why);
      case "input":
        return this.head(INPUT, record) !== OK ? FULL : this.value(record.event, 1);
      case "start":
        if (this.head(START, record) !== OK) return FULL;
        if (this.n + 1 > this.nums.length || this.c + record.role.length > this.chars.length) return FULL;
        this.nums[this.n++] = record.role.length;
        this.text(record.role);
        return this.value(record.init, 1);
      case "stop": {
        if (this.head(STOP, record) !== OK) return FULL;
        const reason = record.reason;
        if (this.n + 1 > this.nums.length || (reason !== undefined && this.c + reason.length > this.chars.length)) return FULL;
        this.nums[this.n++] = reason === undefined ? -1 : reason.length;
        if (reason !== undefined) this.text(reason);
        return OK;
      }
    }
  }

  private head(kind: number, record: LogRecord): Outcome {
    if (this.n + 4 > this.nums.length) return FULL;
    this.nums[this.n++] = kind;
    if (this.ref(record.actor) !== OK || this.n + 2 > this.nums.length) return FULL;
    this.nums[this.n++] = record.seq;
    this.nums[this.n++] = record.t;
    return OK;
  }

  private raw(json: string): Outcome {
    if (this.n + 2 > this.nums.length || this.c + json.length > this.chars.length) return FULL;
    this.nums[this.n++] = RAW;
    this.nums[this.n++] = json.length;
    this.text(json);
    return OK;
  }

  /** Writes code units; the caller has checked the room. */
  private text(s: string): void {
    const chars = this.chars;
    const c = this.c;
    for (let i = 0; i < s.length; i++) chars[c + i] = s.charCodeAt(i);
    this.c = c + s.length;
  }

  /** A recurring string: its id, defined in the stream the first time. */
  private ref(s: string): Outcome {
    let id = this.ids.get(s);
    if (id === undefined) {
      if (this.ids.size >= MAX_INTERNED) {
        if (this.n + 2 > this.nums.length || this.c + s.length > this.chars.length) return FULL;
        this.nums[this.n++] = INLINE;
        this.nums[this.n++] = s.length;
        this.text(s);
        return OK;
      }
      if (this.n + 4 > this.nums.length || this.c + s.length > this.chars.length) return FULL;
      id = this.ids.size;
      this.ids.set(s, id);
      this.fresh.push(s);
      this.nums[this.n++] = DEFINE;
      this.nums[this.n++] = id;
      this.nums[this.n++] = s.length;
      this.text(s);
    } else if (this.n + 1 > this.nums.length) {
      return FULL;
    }
    this.nums[this.n++] = id;
    return OK;
  }

  private value(v: unknown, depth: number): Outcome {
    const nums = this.nums;
    if (this.n + 2 > nums.length) return FULL;
    switch (typeof v) {
      case "number":
        nums[this.n++] = V_NUMBER;
        nums[this.n++] = v;
        return OK;
      case "string":
        if (this.c + v.length > this.chars.length) return FULL;
        nums[this.n++] = V_STRING;
        nums[this.n++] = v.length;
        this.text(v);
        return OK;
      case "boolean":
        nums[this.n++] = v ? V_TRUE : V_FALSE;
        return OK;
      case "object": {
        if (v === null) {
          nums[this.n++] = V_NULL;
          return OK;
        }
        if (depth > MAX_DEPTH) return UNSUPPORTED;
        if (Array.isArray(v)) {
          if (Object.getPrototypeOf(v) !== Array.prototype || "toJSON" in v) return UNSUPPORTED;
          const items = v as unknown[];
          nums[this.n++] = V_ARRAY;
          nums[this.n++] = items.length;
          for (let i = 0; i < items.length; i++) {
            const item = items[i];
            const type = typeof item;
            if (item === undefined || type === "function" || type === "symbol") {
              if (this.n + 1 > this.nums.length) return FULL;
              this.nums[this.n++] = V_NULL;
              continue;
            }
            const outcome = this.value(item, depth + 1);
            if (outcome !== OK) return outcome;
          }
          return OK;
        }
        const proto = Object.getPrototypeOf(v);
        if ((proto !== Object.prototype && proto !== null) || "toJSON" in v) return UNSUPPORTED;
        const object = v as Record<string, unknown>;
        nums[this.n++] = V_OBJECT;
        const countAt = this.n++;
        let count = 0;
        for (const key in object) {
          if (!Object.prototype.hasOwnProperty.call(object, key)) continue;
          const item = object[key];
          const type = typeof item;
          if (item === undefined || type === "function" || type === "symbol") continue;
          if (this.ref(key) !== OK) return FULL;
          const outcome = this.value(item, depth + 1);
          if (outcome !== OK) return outcome;
          count++;
        }
        this.nums[countAt] = count;
        return OK;
      }
      default:
        // undefined or a function as a whole value (JSON.stringify would drop the field
        // or write null, depending on where): bigint and symbol throw or vanish there too.
        return UNSUPPORTED;
    }
  }
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
