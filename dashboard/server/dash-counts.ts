/**
 * The counts the dashboard keeps and inspect's ClusterFold does not, as rules over the maps
 * both dashboard folds (DashFold, FirstFold) keep: bytes per key, tasks done and steals per
 * worker, tasks processing per worker, each prefix's progress columns. Plain functions, so
 * the lean FirstFold pays no object per record for sharing them.
 */
import { keySplit } from "../../machines/graph/keys.js";
import type { Tally } from "./cluster-at.js";
import type { ProgressRow } from "./wire-types.js";

export type Column = "waiting" | "queued" | "processing" | "memory" | "released" | "erred";

/** A key's progress row and column now. */
export interface ProgressPlace {
  row: ProgressRow;
  column: Column;
}

/** An input's bytes: a key's `nbytes`, or scattered data's list of { key, nbytes }. */
export function noteBytes(nbytes: Map<string, number>, event: Record<string, unknown>): void {
  // (nbytes first: most inputs have none, and a look-up on events of every shape is not cheap.)
  const n = event.nbytes;
  if (typeof n === "number" && typeof event.key === "string") nbytes.set(event.key, n);
  const keys = event.keys;
  if (Array.isArray(keys)) for (const k of keys as { key?: unknown; nbytes?: unknown }[]) if (typeof k?.key === "string" && typeof k.nbytes === "number") nbytes.set(k.key, k.nbytes);
}

export function tally(tallies: Map<string, Tally>, worker: string): Tally {
  let t = tallies.get(worker);
  if (t === undefined) tallies.set(worker, (t = { done: 0, stealsIn: 0, stealsOut: 0 }));
  return t;
}

/** A confirmed steal: the thief's in, the victim's (known since the steal began) out. */
export function countSteal(tallies: Map<string, Tally>, thief: string, victim: string | undefined): void {
  tally(tallies, thief).stealsIn++;
  if (victim !== undefined) tally(tallies, victim).stealsOut++;
}

/** A task's move between workers' processing counts (the worker it is processing on before and after, if any). */
export function moveProcessing(processing: Map<string, number>, before: string | undefined, after: string | undefined): void {
  if (before === after) return;
  if (before !== undefined) processing.set(before, (processing.get(before) ?? 1) - 1);
  if (after !== undefined) processing.set(after, (processing.get(after) ?? 0) + 1);
}

/** A new key's progress row (its prefix's, made on first use), counting it in, waiting. */
export function progressRowFor(progressRows: Map<string, ProgressRow>, key: string): ProgressRow {
  const prefix = keySplit(key);
  let row = progressRows.get(prefix);
  if (row === undefined) progressRows.set(prefix, (row = { prefix, total: 0, waiting: 0, queued: 0, processing: 0, memory: 0, released: 0, erred: 0 }));
  row.total++;
  row.waiting++;
  return row;
}

/** A key now in `state`, having last ended (in memory, or erred) as `outcome`: its place moves to the column Dask's progress counts it in. */
export function moveColumn(place: ProgressPlace, state: string, outcome: "memory" | "erred" | undefined): void {
  const column = progressColumn(state, outcome);
  if (column === place.column) return;
  place.row[place.column]--;
  place.row[column]++;
  place.column = column;
}

function progressColumn(state: string, outcome: "memory" | "erred" | undefined): Column {
  if (state.startsWith("processing")) return "processing";
  if (state === "memory" || state === "erred" || state === "queued") return state;
  // A released or forgotten key counts as it last ended: computed then let go, a failure kept, or never run.
  if (state === "released" || state === "forgotten") return outcome === "memory" ? "released" : outcome === "erred" ? "erred" : "waiting";
  return "waiting";
}
