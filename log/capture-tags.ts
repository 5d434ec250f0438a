/**
 * The capture stream: how log/log-capture.ts lays records out in a batch, and what a
 * version-2 log file stores as a frame's body (docs/log-format.md). A batch is two arrays:
 * `nums` (doubles: tags, numbers, counts, ids) and `chars` (UTF-16 code units of strings,
 * taken in order by every item that has text).
 *
 * A batch stands alone: the names (actors, machines, events, states, object keys) and the
 * shapes it refers to are defined in it, before their first use, so one damaged frame loses
 * its own records only.
 *
 *   Records
 *     R_TRANSITION       tshape seq t <str id>
 *     R_TRANSITION_WHY   tshape seq t <str id> <value why>
 *     R_INPUT            actor seq t <value event>
 *     R_START            actor seq t <str role> <value init>
 *     R_STOP             actor seq t
 *     R_STOP_REASON      actor seq t <str reason>
 *     R_RAW              len, chars: the record's JSON (what the stream cannot hold exactly)
 *   Definitions (numbered from 0 in order of appearance, per kind)
 *     D_NAME             len, chars                              before a record, or in a D_OSHAPE's run
 *     D_TSHAPE           actor machine event from to (name ids)   before a record
 *     D_OSHAPE           k, then k name ids: an object's keys      right after a V_OBJECT_NEW's values
 *   Values
 *     V_NULL | V_TRUE | V_FALSE | V_NUMBER x | V_STRING len (chars) | V_REF k
 *     V_ARRAY n, n values
 *     V_OBJECT oshape, one value per key of the shape
 *     V_OBJECT_NEW k, k values, then (D_NAME...) D_OSHAPE: an object of a shape not yet
 *       defined in the batch; the shape follows its values because the capture learns the
 *       keys while writing them (for-in), and writing the definition first would mean
 *       walking the object twice
 *     V_KEYED k, k times (len (chars) value): an object with too many keys, or past the
 *       shapes the capture keeps (objects used as dictionaries)
 *   <str x> is V_STRING or V_REF. V_REF k is the k-th V_STRING of at least REF_MIN code units
 *   in the batch (task keys, ops, worker names: what the next records name again).
 *
 * Values follow JSON.stringify: object fields whose value is undefined, a function or a
 * symbol are left out, array items that are become null; numbers are written as they are
 * (a reader turns NaN and the infinities into null and -0 into 0, as JSON does).
 */
export const R_TRANSITION = 1;
export const R_TRANSITION_WHY = 2;
export const R_INPUT = 3;
export const R_START = 4;
export const R_STOP = 5;
export const R_STOP_REASON = 6;
export const R_RAW = 7;
export const D_NAME = 8;
export const D_TSHAPE = 9;
export const D_OSHAPE = 10;
export const V_NULL = 16;
export const V_TRUE = 17;
export const V_FALSE = 18;
export const V_NUMBER = 19;
export const V_STRING = 20;
export const V_REF = 21;
export const V_ARRAY = 22;
export const V_OBJECT = 23;
export const V_KEYED = 24;
export const V_OBJECT_NEW = 25;

/** Strings at least this long are numbered in their batch, for V_REF. */
export const REF_MIN = 8;

export interface CaptureTags {
  R_TRANSITION: number;
  R_TRANSITION_WHY: number;
  R_INPUT: number;
  R_START: number;
  R_STOP: number;
  R_STOP_REASON: number;
  R_RAW: number;
  D_NAME: number;
  D_TSHAPE: number;
  D_OSHAPE: number;
  V_NULL: number;
  V_TRUE: number;
  V_FALSE: number;
  V_NUMBER: number;
  V_STRING: number;
  V_REF: number;
  V_ARRAY: number;
  V_OBJECT: number;
  V_KEYED: number;
  V_OBJECT_NEW: number;
  REF_MIN: number;
}

/** The tags as one object, for code that runs from its source text (the log writer thread). */
export const CAPTURE_TAGS: CaptureTags = {
  R_TRANSITION,
  R_TRANSITION_WHY,
  R_INPUT,
  R_START,
  R_STOP,
  R_STOP_REASON,
  R_RAW,
  D_NAME,
  D_TSHAPE,
  D_OSHAPE,
  V_NULL,
  V_TRUE,
  V_FALSE,
  V_NUMBER,
  V_STRING,
  V_REF,
  V_ARRAY,
  V_OBJECT,
  V_KEYED,
  V_OBJECT_NEW,
  REF_MIN,
};
