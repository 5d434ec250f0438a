/**
 * A canonical byte encoding of JSON-like values: equal values give equal bytes and
 * different values different bytes, whatever the property order of objects.
 *
 * Every value starts with a type tag, so 1, "1", 1n and [1] all differ. Numbers are
 * their IEEE-754 bits, so -0 differs from 0 and every NaN is the same NaN (equality as
 * `Object.is`). Strings carry their length; arrays their length (holes read as
 * undefined); plain objects their own enumerable string keys in sorted order, so
 * `{a: 1, b: 2}` and `{b: 2, a: 1}` encode alike (an `undefined`-valued property
 * still counts: `{a: undefined}` differs from `{}`). Typed arrays, DataViews and
 * ArrayBuffers are their type name plus content bytes, little-endian on every host.
 * Anything else (functions, symbols, Maps, class instances, cycles) is refused.
 *
 * The walk keeps its own stack, so deeply nested values cannot overflow the call stack.
 */
import { GraphError } from "../errors.js";
import { ByteSink } from "./byte-sink.js";

const Tag = {
  Parts: 0x50,
  Undefined: 0x01,
  Null: 0x02,
  False: 0x03,
  True: 0x04,
  Number: 0x05,
  BigInt: 0x06,
  String: 0x07,
  Array: 0x08,
  Object: 0x09,
  Binary: 0x0a,
} as const;

const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Marks the end of a container on the walk stack, to take it off the ancestor set. */
class Leave {
  constructor(readonly container: object) {}
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function binaryView(value: object): { type: string; bytes: Uint8Array; elementSize: number } | undefined {
  if (value instanceof ArrayBuffer) return { type: "ArrayBuffer", bytes: new Uint8Array(value), elementSize: 1 };
  if (!ArrayBuffer.isView(value)) return undefined;
  const type = Object.prototype.toString.call(value).slice(8, -1);
  const elementSize = "BYTES_PER_ELEMENT" in value ? (value.BYTES_PER_ELEMENT as number) : 1;
  return { type, bytes: new Uint8Array(value.buffer, value.byteOffset, value.byteLength), elementSize };
}

function littleEndian(bytes: Uint8Array, elementSize: number): Uint8Array {
  if (HOST_IS_LITTLE_ENDIAN || elementSize === 1) return bytes;
  const swapped = new Uint8Array(bytes.length);
  for (let at = 0; at < bytes.length; at += elementSize) {
    for (let i = 0; i < elementSize; i++) swapped[at + i] = bytes[at + elementSize - 1 - i]!;
  }
  return swapped;
}

function describe(value: unknown): string {
  if (typeof value !== "object" || value === null) return typeof value;
  return Object.prototype.toString.call(value).slice(8, -1);
}

class TokenEncoder {
  readonly sink = new ByteSink();
  private readonly stack: unknown[] = [];
  private readonly ancestors = new Set<object>();

  encodeParts(parts: readonly unknown[]): Uint8Array {
    this.sink.byte(Tag.Parts);
    this.sink.uint32(parts.length);
    for (let i = parts.length - 1; i >= 0; i--) this.stack.push(parts[i]);
    while (this.stack.length > 0) {
      const next = this.stack.pop();
      if (next instanceof Leave) this.ancestors.delete(next.container);
      else this.value(next);
    }
    return this.sink.view();
  }

  private string(text: string): void {
    this.sink.byte(Tag.String);
    this.sink.uint32(text.length);
    this.sink.utf8(text);
  }

  private value(value: unknown): void {
    switch (typeof value) {
      case "undefined":
        return this.sink.byte(Tag.Undefined);
      case "boolean":
        return this.sink.byte(value ? Tag.True : Tag.False);
      case "number":
        this.sink.byte(Tag.Number);
        return this.sink.float64(Number.isNaN(value) ? NaN : value);
      case "bigint":
        this.sink.byte(Tag.BigInt);
        return this.string(value.toString());
      case "string":
        return this.string(value);
      case "object":
        if (value === null) return this.sink.byte(Tag.Null);
        return this.container(value);
      default:
        throw new GraphError(`cannot tokenize a ${describe(value)}`);
    }
  }

  private container(value: object): void {
    const binary = binaryView(value);
    if (binary !== undefined) {
      this.sink.byte(Tag.Binary);
      this.string(binary.type);
      this.sink.uint32(binary.bytes.length);
      this.sink.raw(littleEndian(binary.bytes, binary.elementSize));
      return;
    }
    if (this.ancestors.has(value)) throw new GraphError("cannot tokenize a value that contains itself");
    if (Array.isArray(value)) {
      this.enter(value);
      this.sink.byte(Tag.Array);
      this.sink.uint32(value.length);
      for (let i = value.length - 1; i >= 0; i--) this.stack.push(value[i]);
      return;
    }
    if (!isPlainObject(value)) throw new GraphError(`cannot tokenize a ${describe(value)}: only plain objects, arrays and binary data`);
    this.enter(value);
    const keys = Object.keys(value).sort();
    this.sink.byte(Tag.Object);
    this.sink.uint32(keys.length);
    const record = value as Record<string, unknown>;
    for (let i = keys.length - 1; i >= 0; i--) this.stack.push(record[keys[i]!], keys[i]);
  }

  private enter(container: object): void {
    this.ancestors.add(container);
    this.stack.push(new Leave(container));
  }
}

/** The canonical bytes of a list of values (the list itself is part of the encoding). */
export function encodeTokenParts(parts: readonly unknown[]): Uint8Array {
  return new TokenEncoder().encodeParts(parts);
}
