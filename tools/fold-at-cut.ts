/**
 * The cluster fold at a cut (replay/log-cut.ts, the cut `replay --until` stops at) through a
 * log's index: the latest snapshot no actor has passed the cut before, then the records from
 * there, folded as inspect folds the whole log, up to where nothing more can be taken. The
 * same fold as reading the log from its start, for a snapshot interval of reading.
 *
 * Where it stops reading: a seq cut at its actor's next input, start or stop record (as the
 * full read: "end"); a time cut once every record left is later than the cut (the block
 * table's earliest times say from where) and every actor still before it has either passed
 * it or has no record left (the index has each actor's last record).
 */
import { BadOptionError } from "../machines/errors.js";
import { ClusterFold } from "../log/cluster-fold.js";
import type { LogIndex } from "../log/log-index.js";
import type { LogRecord } from "../log/types.js";
import { LogCut, type CutSpec } from "../replay/log-cut.js";

export interface IndexedCut {
  fold: ClusterFold;
  cut: LogCut;
  /** Whether the cut takes the record of `actor` at `position`. */
  takes(actor: string, position: number): boolean;
  /** Positions before this one may be taken; none after. */
  end: number;
  /** Where reading started: the snapshot's position (0: the log's start). */
  from: number;
}

export async function foldAtCut(index: LogIndex, spec: CutSpec | undefined): Promise<IndexedCut> {
  const runStart = index.firstT ?? 0;
  const cut = new LogCut(spec, "scheduler", runStart);
  const time = spec === undefined || spec.kind === "seq" ? undefined : spec.kind === "time" ? spec.value : runStart + spec.value;
  const snapshots = index.snapshots;
  let start = -1;
  for (let i = 0; i < snapshots.length; i++) {
    const s = snapshots[i]!;
    // Before the snapshot, no actor may have reached the cut: the fold there is the cut's fold so far.
    const safe = spec === undefined || (time !== undefined ? s.maxT === null || s.maxT <= time : (s.lastSeq[cut.actor] ?? -1) < spec.value);
    if (!safe) break;
    start = i;
  }
  const fold = start < 0 ? new ClusterFold() : await index.foldAt(start);
  const from = start < 0 ? 0 : snapshots[start]!.position;
  const settled = time === undefined ? Infinity : index.settledAfter(time);
  const actorsLast = Object.entries(index.actorsLast);
  const pastAt = new Map<string, number>();
  const nothingLeft = (position: number): boolean => actorsLast.every(([actor, last]) => last < position || pastAt.has(actor));
  let end = index.records;
  let seen = false;
  let position = from;
  for await (const record of index.range(from, index.records)) {
    if (position >= settled && nothingLeft(position)) {
      end = position;
      break;
    }
    if (spec?.kind === "seq" && record.actor === cut.actor && record.seq === spec.value) seen = true;
    const verdict = cut.admit(record);
    if (verdict === "end") {
      end = position;
      break;
    }
    if (verdict === "take") fold.add(record);
    else if (!pastAt.has(record.actor)) pastAt.set(record.actor, position);
    position++;
  }
  if (spec?.kind === "seq" && !seen) throw new BadOptionError("--at", `the log has no record ${spec.value} of ${cut.actor}`);
  return { fold, cut, end, from, takes: (actor, at) => at < end && at < (pastAt.get(actor) ?? Infinity) };
}

/** The records of `key` the cut takes, in log order. */
export async function keyRecordsAtCut(index: LogIndex, at: IndexedCut, key: string): Promise<LogRecord[]> {
  return (await index.keyRecords(key, at.end)).filter((r) => at.takes(r.record.actor, r.position)).map((r) => r.record);
}
