/**
 * The format of a scheduler core's snapshot (log/core-snapshot.ts writes it,
 * log/core-restore.ts reads it): v8.serialize of one object holding, per node of the
 * core's object graph, its kind, shape (class and keys, shared by the nodes that have them),
 * size and place; per slot (property, element, entry) a tag and, in a Float64Array, a
 * number, a node id or a string's index (strings are stored once).
 */
import { SchedulerCore } from "../machines/scheduler/core.js";
import { Estimates } from "../machines/scheduler/estimates.js";
import { RemovedIncarnations } from "../machines/scheduler/incarnations.js";
import { Retirements } from "../machines/scheduler/retirement.js";
import { GroupRec, PrefixRec, QUEUED_AT, TaskRec, WorkerRec } from "../machines/scheduler/state.js";
import { StealBin } from "../machines/scheduler/steal-bin.js";
import { WorkStealing } from "../machines/scheduler/stealing.js";
import { IndexedHeap } from "../machines/util/heap.js";
import { OrderedQueue } from "../machines/util/ordered-queue.js";
import { emptyMap, emptySet } from "../machines/util/shared-empty.js";
import { FETCH_AT, READY_AT, WorkerCore, WTask } from "../machines/worker/core.js";
import { FetchQueues, HolderQueue } from "../machines/worker/fetch-queues.js";
import { Tombstones } from "../machines/worker/tombstones.js";

/** A core the walk snapshots: the scheduler's or a worker's. */
export type AnyCore = SchedulerCore | WorkerCore;

export const CORE_SNAPSHOT_VERSION = 1;

export class SnapshotError extends Error {}

/** Classes whose instances a scheduler or worker core holds, by the name the snapshot stores. */
export const CLASSES: Record<string, { prototype: object }> = {
  Object,
  SchedulerCore,
  TaskRec,
  WorkerRec,
  PrefixRec,
  GroupRec,
  Estimates,
  WorkStealing,
  StealBin,
  Retirements,
  RemovedIncarnations,
  OrderedQueue,
  IndexedHeap,
  WorkerCore,
  WTask,
  Tombstones,
  FetchQueues,
  HolderQueue,
};
export const SYMBOLS: Record<string, symbol> = { QUEUED_AT, READY_AT, FETCH_AT };
/** The class name of objects without a prototype. */
export const NULL_PROTO = "(null)";

// Node kinds.
export const OBJECT = 0;
export const ARRAY = 1;
export const SET = 2;
export const MAP = 3;

// Slot tags. NUM, STR, REF, SYM, EXT and BIG take a number from `nums`.
export const NUM = 0;
export const STR = 1;
export const REF = 2;
export const UNDEF = 3;
export const NULL = 4;
export const TRUE = 5;
export const FALSE = 6;
/** A function: the fresh core's stays. */
export const FN = 7;
export const SYM = 8;
/** An external object (effects, config, shared empties), by its index. */
export const EXT = 9;
export const BIG = 10;
/** An array's hole. */
export const HOLE = 11;

export interface Encoded {
  v: number;
  strings: string[];
  /** Per shape: its class (a string index) and its keys (string indexes; -1 - i for the symbol SYMBOLS[strings[i]]). */
  shapeClass: number[];
  shapeKeys: number[][];
  /** Per node. */
  kinds: Uint8Array;
  shapes: Int32Array;
  sizes: Int32Array;
  frozen: Uint8Array;
  /** The node it was found in, and where: a string index (a property) or -1 - i (element i; -1 in a Set or Map). */
  parents: Int32Array;
  places: Int32Array;
  /** Per slot. */
  tags: Uint8Array;
  nums: Float64Array;
}

/** Objects a core shares with its host or the whole process: a snapshot names them, and a restored core takes the fresh core's. */
export function externalsOf(core: AnyCore): object[] {
  return [(core as unknown as { fx: object }).fx, core instanceof WorkerCore ? core.init : core.config, emptySet(), emptyMap()];
}
