/**
 * A snapshot of a SchedulerCore between two inputs, exact: restored, the core makes the
 * same transitions and sends the same messages for the same inputs as the one it was taken
 * from (tests/core-snapshot.test.ts checks it against replay, and the state against
 * verify/scheduler-fingerprint.ts).
 *
 * The snapshot is the core's whole object graph, walked generically, not a list of fields:
 * every object reachable from the core (task and worker records, groups, queues, stealing's
 * bins, Maps and Sets in their iteration order, arrays with their holes), each with its class,
 * own properties in order (symbol-keyed ones too) and identity (an object reached twice is
 * one object again). A field added to a core is in the snapshot without anyone listing it.
 * What the walk does not copy:
 * - the host's effects and the config: the restored core takes the fresh core's (built from
 *   the same start record);
 * - the shared empty Set and Map (machines/util/shared-empty.ts): they stay the shared ones;
 * - functions (the queues' comparators, Retirements' send): an object holding one is
 *   restored into the fresh core's object at the same place, keeping its functions, whose
 *   closures then see the restored core.
 * Anything the walk does not know how to copy exactly (an instance of a class it has not been
 * told of, an unknown symbol, a WeakMap) throws SnapshotError: no snapshot is better than a
 * wrong one (a restart then re-runs the whole log).
 *
 * The format: log/core-snapshot-format.ts. Restoring: log/core-restore.ts.
 */
import { serialize } from "node:v8";
import {
  ARRAY,
  BIG,
  CLASSES,
  CORE_SNAPSHOT_VERSION,
  EXT,
  externalsOf,
  FALSE,
  FN,
  HOLE,
  MAP,
  NULL,
  NULL_PROTO,
  NUM,
  OBJECT,
  REF,
  SET,
  SnapshotError,
  STR,
  SYM,
  SYMBOLS,
  TRUE,
  UNDEF,
  type AnyCore,
  type Encoded,
} from "./core-snapshot-format.js";

export { SnapshotError } from "./core-snapshot-format.js";
export { restoreCore } from "./core-restore.js";

class Growing<T extends Uint8Array | Int32Array | Float64Array> {
  length = 0;
  constructor(
    public array: T,
    private readonly make: (n: number) => T,
  ) {}

  push(value: number): void {
    if (this.length === this.array.length) {
      const bigger = this.make(this.array.length * 2);
      bigger.set(this.array);
      this.array = bigger;
    }
    this.array[this.length++] = value;
  }

  /** The values pushed, in an array of their own (a view would serialize the spare capacity too). */
  done(): T {
    return this.array.slice(0, this.length) as T;
  }
}

/** The snapshot of `core` (between two inputs). Throws SnapshotError when it cannot be exact. */
export function snapshotCore(core: AnyCore): Buffer {
  return new Encoder(core).encode();
}

class Encoder {
  private readonly externals: object[];
  private readonly ids = new Map<object, number>();
  private readonly queue: object[] = [];
  private readonly strings: string[] = [];
  private readonly stringIds = new Map<string, number>();
  private readonly shapeClass: number[] = [];
  private readonly shapeKeys: number[][] = [];
  /** Shapes seen per prototype: their keys, to find an object's shape by comparing. */
  private readonly shapesOf = new Map<object | null, { keys: (string | symbol)[]; id: number }[]>();
  private readonly classNames = new Map<object, string>();
  private readonly symbolNames = new Map<symbol, string>();
  private readonly kinds = new Growing(new Uint8Array(1024), (n) => new Uint8Array(n));
  private readonly shapes = new Growing(new Int32Array(1024), (n) => new Int32Array(n));
  private readonly sizes = new Growing(new Int32Array(1024), (n) => new Int32Array(n));
  private readonly frozen = new Growing(new Uint8Array(1024), (n) => new Uint8Array(n));
  private readonly parents = new Growing(new Int32Array(1024), (n) => new Int32Array(n));
  private readonly places = new Growing(new Int32Array(1024), (n) => new Int32Array(n));
  private readonly tags = new Growing(new Uint8Array(8192), (n) => new Uint8Array(n));
  private readonly nums = new Growing(new Float64Array(8192), (n) => new Float64Array(n));

  constructor(private readonly core: AnyCore) {
    this.externals = externalsOf(core);
    for (const [name, cls] of Object.entries(CLASSES)) this.classNames.set(cls.prototype, name);
    for (const [name, symbol] of Object.entries(SYMBOLS)) this.symbolNames.set(symbol, name);
  }

  encode(): Buffer {
    this.node(this.core, -1, -1);
    const queue = this.queue;
    for (let id = 0; id < queue.length; id++) this.fill(id, queue[id]!);
    const encoded: Encoded = {
      v: CORE_SNAPSHOT_VERSION,
      strings: this.strings,
      shapeClass: this.shapeClass,
      shapeKeys: this.shapeKeys,
      kinds: this.kinds.done(),
      shapes: this.shapes.done(),
      sizes: this.sizes.done(),
      frozen: this.frozen.done(),
      parents: this.parents.done(),
      places: this.places.done(),
      tags: this.tags.done(),
      nums: this.nums.done(),
    };
    return serialize(encoded);
  }

  private string(text: string): number {
    let id = this.stringIds.get(text);
    if (id === undefined) {
      id = this.strings.length;
      this.strings.push(text);
      this.stringIds.set(text, id);
    }
    return id;
  }

  private node(object: object, parent: number, place: number): number {
    let id = this.ids.get(object);
    if (id !== undefined) return id;
    id = this.queue.length;
    this.ids.set(object, id);
    this.queue.push(object);
    this.parents.push(parent);
    this.places.push(place);
    return id;
  }

  private fill(id: number, object: object): void {
    this.frozen.push(Object.isFrozen(object) ? 1 : 0);
    if (Array.isArray(object)) {
      this.expectProto(object, Array.prototype, id);
      this.kinds.push(ARRAY);
      this.shapes.push(-1);
      this.sizes.push(object.length);
      for (let i = 0; i < object.length; i++) {
        if (i in object) this.value(object[i], id, -1 - i);
        else this.tags.push(HOLE);
      }
    } else if (object instanceof Set) {
      this.expectProto(object, Set.prototype, id);
      this.kinds.push(SET);
      this.shapes.push(-1);
      this.sizes.push(object.size);
      for (const item of object) this.value(item, id, -1);
    } else if (object instanceof Map) {
      this.expectProto(object, Map.prototype, id);
      this.kinds.push(MAP);
      this.shapes.push(-1);
      this.sizes.push(object.size);
      for (const [k, v] of object) {
        this.value(k, id, -1);
        this.value(v, id, -1);
      }
    } else {
      const keys = Reflect.ownKeys(object);
      this.kinds.push(OBJECT);
      this.shapes.push(this.shape(object, keys, id));
      this.sizes.push(keys.length);
      const record = object as Record<string | symbol, unknown>;
      for (const key of keys) this.value(record[key], id, typeof key === "string" ? this.string(key) : this.string(`@@${this.symbolNames.get(key)!}`));
    }
  }

  private expectProto(object: object, proto: object, id: number): void {
    if (Object.getPrototypeOf(object) !== proto) throw new SnapshotError(`cannot snapshot a subclass of ${proto.constructor.name} at ${this.where(id)}`);
  }

  private shape(object: object, keys: (string | symbol)[], id: number): number {
    const proto = Object.getPrototypeOf(object) as object | null;
    let known = this.shapesOf.get(proto);
    if (known === undefined) this.shapesOf.set(proto, (known = []));
    for (const candidate of known) if (sameKeys(candidate.keys, keys)) return candidate.id;
    const className = proto === null ? NULL_PROTO : this.classNames.get(proto);
    if (className === undefined) throw new SnapshotError(`cannot snapshot an instance of ${(proto as { constructor?: { name?: string } }).constructor?.name ?? "?"} at ${this.where(id)}`);
    const encodedKeys = keys.map((key) => {
      if (typeof key === "string") return this.string(key);
      const name = this.symbolNames.get(key);
      if (name === undefined) throw new SnapshotError(`cannot snapshot the symbol key ${String(key)} at ${this.where(id)}`);
      return -1 - this.string(name);
    });
    const shapeId = this.shapeClass.length;
    this.shapeClass.push(this.string(className));
    this.shapeKeys.push(encodedKeys);
    known.push({ keys, id: shapeId });
    return shapeId;
  }

  private value(v: unknown, parent: number, place: number): void {
    const tags = this.tags;
    switch (typeof v) {
      case "number":
        tags.push(NUM);
        this.nums.push(v);
        return;
      case "string":
        tags.push(STR);
        this.nums.push(this.string(v));
        return;
      case "boolean":
        tags.push(v ? TRUE : FALSE);
        return;
      case "undefined":
        tags.push(UNDEF);
        return;
      case "function":
        tags.push(FN);
        return;
      case "bigint":
        tags.push(BIG);
        this.nums.push(this.string(v.toString()));
        return;
      case "symbol": {
        const name = this.symbolNames.get(v);
        if (name === undefined) throw new SnapshotError(`cannot snapshot the symbol ${String(v)} at ${this.where(parent)}`);
        tags.push(SYM);
        this.nums.push(this.string(name));
        return;
      }
      default: {
        if (v === null) {
          tags.push(NULL);
          return;
        }
        const object = v as object;
        const external = this.externals.indexOf(object);
        if (external >= 0) {
          tags.push(EXT);
          this.nums.push(external);
          return;
        }
        tags.push(REF);
        this.nums.push(this.node(object, parent, place));
      }
    }
  }

  /** A node's place in the graph, for messages: core.<key>.<key>... */
  private where(id: number): string {
    const path: string[] = [];
    const parents = this.parents.array;
    const places = this.places.array;
    for (let at = id; at > 0; at = parents[at]!) {
      const place = places[at]!;
      path.unshift(place >= 0 ? this.strings[place]! : place === -1 ? "(entry)" : `[${-1 - place}]`);
    }
    return ["core", ...path].join(".");
  }
}

function sameKeys(a: (string | symbol)[], b: (string | symbol)[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
