/**
 * Restoring a scheduler core from its snapshot (log/core-snapshot.ts; the format is
 * log/core-snapshot-format.ts) into a fresh core built from the same config.
 */
import { deserialize } from "node:v8";
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

/**
 * Restores a snapshot into `fresh`, a core just built (no input handled) from the same
 * config and with the effects the restored core is to use. Returns `fresh`, now the core the
 * snapshot was taken of. Throws SnapshotError when the snapshot is not one this code reads.
 */
export function restoreCore<C extends AnyCore>(snapshot: Uint8Array, fresh: C): C {
  let data: Encoded;
  try {
    data = deserialize(snapshot) as Encoded;
  } catch (error) {
    throw new SnapshotError(`not a core snapshot: ${(error as Error).message}`);
  }
  if (data?.v !== CORE_SNAPSHOT_VERSION) throw new SnapshotError(`a core snapshot of version ${String(data?.v)}; this natsched reads version ${CORE_SNAPSHOT_VERSION}`);
  const { strings, shapeClass, shapeKeys, kinds, shapes, sizes, frozen, parents, places, tags, nums } = data;
  const externals = externalsOf(fresh);
  const count = kinds.length;
  const slotsOf = (id: number): number => (kinds[id] === MAP ? 2 * sizes[id]! : sizes[id]!);
  // Nodes holding a function, and the nodes on their way from the core, are the fresh core's own objects.
  const inPlace = new Uint8Array(count);
  inPlace[0] = 1;
  for (let id = 0, slot = 0; id < count; id++) {
    const end = slot + slotsOf(id);
    for (; slot < end; slot++) if (tags[slot] === FN) for (let at = id; at > 0 && inPlace[at] === 0; at = parents[at]!) inPlace[at] = 1;
  }
  const prototypes = shapeClass.map((c) => {
    const name = strings[c]!;
    if (name === NULL_PROTO) return null;
    const cls = CLASSES[name];
    if (cls === undefined) throw new SnapshotError(`a core snapshot with an instance of ${name}, a class this natsched does not have`);
    return cls.prototype;
  });
  const keysOf = shapeKeys.map((keys) => keys.map((k) => (k >= 0 ? strings[k]! : symbolNamed(strings[-1 - k]!))));
  // One function per shape sets an object's properties by name: V8 then stores them as it
  // does in a constructor, where a loop of keyed stores over every shape is slower.
  // The names are JSON string literals, whatever the snapshot holds.
  const fillers = keysOf.map((keys): ((o: Record<PropertyKey, unknown>, r: () => unknown) => void) => {
    const symbols: symbol[] = [];
    const body = keys.map((k) => (typeof k === "symbol" ? `o[s[${symbols.push(k) - 1}]] = r();` : `o[${JSON.stringify(k)}] = r();`)).join("\n");
    try {
      const make = new Function("s", `return function fill(o, r) {\n${body}\n};`) as (s: symbol[]) => (o: Record<PropertyKey, unknown>, r: () => unknown) => void;
      return make(symbols);
    } catch {
      // Code generation disallowed (--disallow-code-generation-from-strings): the same stores in a loop.
      return (o, r) => {
        for (const k of keys) o[k] = r();
      };
    }
  });
  const objects: object[] = new Array(count);
  for (let id = 0; id < count; id++) {
    if (inPlace[id] === 1) {
      const place = places[id]!;
      const key = id === 0 ? "" : place >= 0 ? keyNamed(strings[place]!) : -1 - place;
      const object = id === 0 ? fresh : (objects[parents[id]!] as Record<PropertyKey, unknown>)[key];
      if (typeof object !== "object" || object === null) throw new SnapshotError(`the fresh core has no object at ${String(key)} to restore into`);
      objects[id] = object;
      continue;
    }
    switch (kinds[id]) {
      case ARRAY:
        objects[id] = new Array(sizes[id]);
        break;
      case SET:
        objects[id] = new Set();
        break;
      case MAP:
        objects[id] = new Map();
        break;
      default:
        objects[id] = Object.create(prototypes[shapes[id]!]!) as object;
    }
  }
  let slot = 0;
  let num = 0;
  const read = (): unknown => {
    switch (tags[slot++]) {
      case NUM:
        return nums[num++];
      case STR:
        return strings[nums[num++]!];
      case REF:
        return objects[nums[num++]!];
      case UNDEF:
        return undefined;
      case NULL:
        return null;
      case TRUE:
        return true;
      case FALSE:
        return false;
      case SYM:
        return symbolNamed(strings[nums[num++]!]!);
      case EXT:
        return externals[nums[num++]!];
      case BIG:
        return BigInt(strings[nums[num++]!]!);
      default:
        throw new SnapshotError(`a core snapshot with a value tagged ${tags[slot - 1]} where a value is`);
    }
  };
  for (let id = 0; id < count; id++) {
    const object = objects[id]!;
    const size = sizes[id]!;
    switch (kinds[id]) {
      case ARRAY: {
        const array = object as unknown[];
        for (let i = 0; i < size; i++) {
          if (tags[slot] === HOLE) slot++;
          else array[i] = read();
        }
        break;
      }
      case SET: {
        const set = object as Set<unknown>;
        for (let i = 0; i < size; i++) set.add(read());
        break;
      }
      case MAP: {
        const map = object as Map<unknown, unknown>;
        for (let i = 0; i < size; i++) {
          const k = read();
          map.set(k, read());
        }
        break;
      }
      default: {
        const record = object as Record<PropertyKey, unknown>;
        if (inPlace[id] === 0) {
          fillers[shapes[id]!]!(record, read);
          break;
        }
        const keys = keysOf[shapes[id]!]!;
        for (let i = 0; i < size; i++) {
          if (tags[slot] === FN) {
            slot++;
            if (typeof record[keys[i]!] !== "function") throw new SnapshotError(`the fresh core has no function at ${String(keys[i])} to keep`);
          } else record[keys[i]!] = read();
        }
      }
    }
  }
  for (let id = 0; id < count; id++) if (frozen[id] === 1 && inPlace[id] === 0) Object.freeze(objects[id]);
  return fresh;
}

function symbolNamed(name: string): symbol {
  const symbol = SYMBOLS[name];
  if (symbol === undefined) throw new SnapshotError(`a core snapshot with the symbol ${name}, which this natsched does not have`);
  return symbol;
}

function keyNamed(place: string): PropertyKey {
  return place.startsWith("@@") ? symbolNamed(place.slice(2)) : place;
}
