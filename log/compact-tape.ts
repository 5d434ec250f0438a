/**
 * The compact log's tape: payloads (an input's event, a transition's `why`) written value by
 * value into chunks of doubles, so that the log holds no object for a garbage collection to
 * trace. Read back, a payload is equal to the one written, field by field in the same order
 * (undefined fields, -0, NaN and infinities included).
 *
 * NaN-boxed: a number takes one slot, its own double. Anything else is one NaN slot whose
 * bits carry a tag and a 32-bit operand: a string's index in the string table (strings are
 * kept by reference: task keys and names live on anyway), an array's length, an object's
 * shape. A number that is NaN is boxed too, so a slot is a box exactly when it reads as NaN.
 *
 * An object is its shape (its keys in for-in order) and then its values. Shapes are found
 * by walking a trie of key sequences whose last-taken edges are tried first, so a run of
 * events of the same few kinds costs a string comparison per key, and no key is written.
 * Past MAX_SHAPE_NODES trie nodes (objects used as dictionaries, each with its own keys),
 * objects of new key sequences are written key by key instead, each key by its number.
 *
 * Half the bytes of a layout with a tag slot before every value and a key slot before
 * every field: at a million simulated tasks the tape is most of the log's memory, every
 * page of it touched for the first time, and fewer bytes mean fewer pages and fewer
 * collections set off by ArrayBuffer growth.
 */
import { KeyNode } from "./key-trie.js";
import type { Slabs } from "./slabs.js";

/** Doubles per tape chunk (8 MiB); a payload bigger than that is not written. */
export const TAPE = 1 << 20;
/** write()'s answer for a payload the tape cannot hold exactly. */
export const NOT_HELD = -1;

const STRING_BITS = 16;
const STRINGS = 1 << STRING_BITS;
const MAX_STRINGS = 2 ** 32 - 1;
const MAX_DEPTH = 32;
const MAX_SHAPE_NODES = 1 << 16;

/** A box's high word: sign, all-ones exponent and the quiet bit (a NaN whatever follows), tag in the low byte. */
const BOX_HIGH = 0xfff80000;
const B_UNDEFINED = 1;
const B_NULL = 2;
const B_TRUE = 3;
const B_FALSE = 4;
const B_NAN = 5;
const B_STRING = 6;
const B_ARRAY = 7;
/** An object as its shape's number, then its values. */
const B_SHAPED = 8;
/** An object as its field count, then per field its key's number (a plain double) and its value. */
const B_KEYED = 9;

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const LOW = LITTLE_ENDIAN ? 0 : 1;
const HIGH = 1 - LOW;

const OK = 0;
const FULL = 1;
const UNSUPPORTED = 2;
type Outcome = typeof OK | typeof FULL | typeof UNSUPPORTED;

const hasOwn = Object.prototype.hasOwnProperty;

/** An object shape: the key sequence from the root. */
class ShapeNode extends KeyNode<ShapeNode> {
  /** The shape's number, once an object of exactly these keys has been written. */
  id = -1;
}

export class Tape {
  private readonly chunks: Float64Array[] = [];
  private readonly words: Uint32Array[] = [];
  /** The chunk being written (both views of it), at `p`. */
  private f64: Float64Array = new Float64Array(0);
  private u32: Uint32Array = new Uint32Array(0);
  private p = 0;
  /** Strings the tape refers to, by index (chunks allocated whole: filling them is cheaper than pushing). */
  private readonly strings: string[][] = [];
  private nStrings = 0;
  private readonly root = new ShapeNode(null, "", 0);
  private shapeNodes = 1;
  private readonly shapes: string[][] = [];
  private readonly keyIds = new Map<string, number>();
  private readonly keyNames: string[] = [];
  /** Reading: the chunk and position of the value being decoded. */
  private rf: Float64Array = new Float64Array(0);
  private ru: Uint32Array = new Uint32Array(0);
  private r = 0;

  constructor(private readonly slabs: Slabs) {}

  /** Writes `value`: its position, or NOT_HELD if the tape cannot hold it exactly (nothing is kept of it then). */
  write(value: unknown): number {
    for (let attempt = 0; attempt < 2; attempt++) {
      const start = this.p;
      const strings = this.nStrings;
      const outcome = this.value(value, 0);
      if (outcome === OK) {
        const at = (this.chunks.length - 1) * TAPE + start;
        // Positions are int32 in the log's rows: past 2^31 doubles (16 GiB of tape) payloads are not written.
        return at <= 0x7fffffff ? at : NOT_HELD;
      }
      this.p = start;
      this.dropStrings(strings);
      if (outcome === UNSUPPORTED) return NOT_HELD;
      // No room left in this chunk: once more in a fresh one (a payload bigger than a chunk is not held).
      if (attempt === 0) this.newChunk();
    }
    return NOT_HELD;
  }

  /** The payload written at `at`, built anew. */
  read(at: number): unknown {
    const c = Math.floor(at / TAPE);
    this.rf = this.chunks[c]!;
    this.ru = this.words[c]!;
    this.r = at % TAPE;
    return this.decode();
  }

  private newChunk(): void {
    this.f64 = this.slabs.float64(TAPE);
    this.u32 = new Uint32Array(this.f64.buffer, this.f64.byteOffset, TAPE * 2);
    this.chunks.push(this.f64);
    this.words.push(this.u32);
    this.p = 0;
  }

  private box(p: number, tag: number, operand: number): void {
    const w = p << 1;
    this.u32[w + LOW] = operand;
    this.u32[w + HIGH] = BOX_HIGH | tag;
  }

  private value(v: unknown, depth: number): Outcome {
    const p = this.p;
    if (p >= this.f64.length) return FULL;
    switch (typeof v) {
      case "number":
        if (v === v) this.f64[p] = v;
        else this.box(p, B_NAN, 0);
        this.p = p + 1;
        return OK;
      case "string":
        if (this.nStrings === MAX_STRINGS) return UNSUPPORTED;
        this.box(p, B_STRING, this.string(v));
        this.p = p + 1;
        return OK;
      case "boolean":
        this.box(p, v ? B_TRUE : B_FALSE, 0);
        this.p = p + 1;
        return OK;
      case "undefined":
        this.box(p, B_UNDEFINED, 0);
        this.p = p + 1;
        return OK;
      case "object": {
        if (v === null) {
          this.box(p, B_NULL, 0);
          this.p = p + 1;
          return OK;
        }
        if (depth >= MAX_DEPTH) return UNSUPPORTED;
        if (Array.isArray(v)) return Object.getPrototypeOf(v) === Array.prototype ? this.array(v, depth) : UNSUPPORTED;
        return Object.getPrototypeOf(v) === Object.prototype ? this.shaped(v as Record<string, unknown>, depth) : UNSUPPORTED;
      }
      default:
        return UNSUPPORTED; // bigint, symbol, function
    }
  }

  private array(items: unknown[], depth: number): Outcome {
    this.box(this.p, B_ARRAY, items.length);
    this.p++;
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (item === undefined && !(i in items)) return UNSUPPORTED; // a hole
      const outcome = this.value(item, depth + 1);
      if (outcome !== OK) return outcome;
    }
    return OK;
  }

  private shaped(object: Record<string, unknown>, depth: number): Outcome {
    const head = this.p;
    const strings = this.nStrings;
    this.p = head + 1;
    let node = this.root;
    for (const key in object) {
      // An inherited enumerable, or an own "__proto__" (which an assignment would not recreate).
      if (!hasOwn.call(object, key) || key === "__proto__") return UNSUPPORTED;
      let next = node.next(key);
      if (next === undefined) {
        if (this.shapeNodes >= MAX_SHAPE_NODES) {
          this.p = head;
          this.dropStrings(strings);
          return this.keyed(object, depth);
        }
        next = node.add(new ShapeNode(node, key, node.size + 1));
        this.shapeNodes++;
      }
      node = next;
      const outcome = this.value(object[key], depth + 1);
      if (outcome !== OK) return outcome;
    }
    if (node.id < 0) node.id = this.shapes.push(node.keys()) - 1;
    this.box(head, B_SHAPED, node.id);
    return OK;
  }

  private keyed(object: Record<string, unknown>, depth: number): Outcome {
    const head = this.p;
    this.p = head + 1;
    let count = 0;
    for (const key in object) {
      if (!hasOwn.call(object, key) || key === "__proto__") return UNSUPPORTED;
      const p = this.p;
      if (p >= this.f64.length) return FULL;
      let id = this.keyIds.get(key);
      if (id === undefined) {
        id = this.keyNames.push(key) - 1;
        this.keyIds.set(key, id);
      }
      this.f64[p] = id;
      this.p = p + 1;
      const outcome = this.value(object[key], depth + 1);
      if (outcome !== OK) return outcome;
      count++;
    }
    this.box(head, B_KEYED, count);
    return OK;
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

  private decode(): unknown {
    const r = this.r++;
    const x = this.rf[r]!;
    if (x === x) return x;
    const operand = this.ru[(r << 1) + LOW]!;
    const tag = this.ru[(r << 1) + HIGH]! & 0xff;
    switch (tag) {
      case B_STRING:
        return this.strings[operand >>> STRING_BITS]![operand & (STRINGS - 1)];
      case B_SHAPED: {
        const keys = this.shapes[operand]!;
        const object: Record<string, unknown> = {};
        for (let i = 0; i < keys.length; i++) object[keys[i]!] = this.decode();
        return object;
      }
      case B_ARRAY: {
        const items = new Array<unknown>(operand);
        for (let i = 0; i < operand; i++) items[i] = this.decode();
        return items;
      }
      case B_UNDEFINED:
        return undefined;
      case B_NULL:
        return null;
      case B_TRUE:
        return true;
      case B_FALSE:
        return false;
      case B_NAN:
        return NaN;
      case B_KEYED: {
        const object: Record<string, unknown> = {};
        for (let i = 0; i < operand; i++) {
          const key = this.keyNames[this.rf[this.r++]!]!;
          object[key] = this.decode();
        }
        return object;
      }
      default:
        throw new Error(`compact log: bad tag ${tag} on the tape`);
    }
  }
}
