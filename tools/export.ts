/**
 * A self-contained slice of a log, to attach to a bug report: `natsched export`.
 *
 * A slice keeps, of each actor it needs, its records up to a cut and nothing after, from its
 * start record, or, when the log has an index (log/log-index.ts) with a snapshot position
 * before what the slice is around, from that position: each actor running there restored
 * from a snapshot of its core (replay/core-snapshots-at.ts) that the slice's header holds
 * (`meta.slice.from`). The cuts:
 *
 * - around a key: the actors whose records concern the key (a transition of it, an input
 *   naming it), each cut right after the last input that concerns the key, with all that
 *   input's transitions; the other actors are left out;
 * - around a time: every actor that started by then, each cut after its last input at or
 *   before that time, with all that input's transitions.
 *
 * Cuts fall between inputs, never inside one, so every actor in the slice replays as it
 * did (`natsched replay` checks it); an actor cut short has no stop record, which replay
 * reads as "still running". Passes over the file: one to find the cuts; from a snapshot, a
 * replay up to it (every transition checked) and a read of the records after it, through
 * the index; otherwise a second pass to copy.
 */
import { BadOptionError, LogCorruptError } from "../machines/errors.js";
import { FileLogSink } from "../log/file-log.js";
import { SnapshotError } from "../log/core-snapshot.js";
import { MAX_HEADER_BYTES } from "../log/first-line.js";
import { indexOnDemand } from "../log/index-on-demand.js";
import { openLog } from "../log/reader.js";
import type { SliceStart } from "../log/slice-header.js";
import { coreSnapshotsAt } from "../replay/core-snapshots-at.js";
import { concernsKey } from "../log/record-filter.js";
import { LOG_FORMAT_FRAMES, type LogProblem, type LogRecord } from "../log/types.js";

export type Around =
  | { key: string }
  /** Seconds as in the log's `t`; `elapsed`: counted from the first record's `t`. */
  | { time: number; elapsed?: boolean };

interface ActorCut {
  /** The actor's last record seen, and whether the input group it belongs to concerns the key. */
  lastSeq: number;
  groupConcerns: boolean;
  /** Last seq kept for the key / for the time (-1: none). */
  keyCut: number;
  timeCut: number;
  /** No more records kept for the time: an input after it was seen. */
  timeDone: boolean;
  records: number;
  /** Positions in the log (records before) of the record at lastSeq, keyCut and timeCut. */
  lastPos: number;
  keyCutPos: number;
  timeCutPos: number;
  /** Position of the actor's latest record that is not a transition (its current input group starts there). */
  groupPos: number;
  keySeen: boolean;
}

/**
 * Finds the cuts, one record at a time in log order: for a key and a time at once, so
 * `--around` can take either without knowing which it is beforehand.
 */
export class SliceCuts {
  private readonly actors = new Map<string, ActorCut>();
  private time: number | undefined;
  private firstT: number | undefined;
  private position = 0;
  /** The earliest start of an input group holding an actor's first record of the key (-1: none yet): a slice from a snapshot starts at or before it. */
  firstKeyPosition = -1;

  constructor(
    private readonly key: string | undefined,
    private readonly at: { time: number; elapsed?: boolean } | undefined,
  ) {
    if (at !== undefined && !at.elapsed) this.time = at.time;
  }

  add(record: LogRecord): void {
    if (this.firstT === undefined) {
      this.firstT = record.t;
      if (this.at?.elapsed) this.time = record.t + this.at.time;
    }
    let cut = this.actors.get(record.actor);
    if (cut === undefined) {
      cut = { lastSeq: -1, groupConcerns: false, keyCut: -1, timeCut: -1, timeDone: false, records: 0, lastPos: -1, keyCutPos: -1, timeCutPos: -1, groupPos: 0, keySeen: false };
      this.actors.set(record.actor, cut);
    }
    cut.records += 1;
    const position = this.position++;
    if (record.kind !== "transition") cut.groupPos = position;
    if (!cut.keySeen && this.key !== undefined && concernsKey(record, this.key)) {
      // Every actor's first record of the key, with the input it belongs to, comes after the slice's start.
      cut.keySeen = true;
      this.firstKeyPosition = this.firstKeyPosition < 0 ? cut.groupPos : Math.min(this.firstKeyPosition, cut.groupPos);
    }
    if (record.kind === "transition") {
      if (this.key !== undefined && record.id === this.key) cut.groupConcerns = true;
    } else {
      // A new input group starts: the previous one ended at lastSeq.
      if (cut.groupConcerns) {
        cut.keyCut = cut.lastSeq;
        cut.keyCutPos = cut.lastPos;
      }
      cut.groupConcerns = this.key !== undefined && concernsKey(record, this.key);
      if (this.time !== undefined && !cut.timeDone) {
        if (record.t > this.time) {
          cut.timeDone = true;
          cut.timeCut = cut.lastSeq;
          cut.timeCutPos = cut.lastPos;
        }
      }
    }
    cut.lastSeq = record.seq;
    cut.lastPos = position;
  }

  /** The position just after the last record kept of any actor. */
  end(mode: "key" | "time"): number {
    let end = 0;
    for (const cut of this.actors.values()) {
      const last = mode === "key" ? (cut.groupConcerns ? cut.lastPos : cut.keyCutPos) : cut.timeDone ? cut.timeCutPos : cut.lastPos;
      end = Math.max(end, last + 1);
    }
    return end;
  }

  /** Last seq to keep per actor (actors left out are absent). */
  finish(mode: "key" | "time"): Map<string, number> {
    const out = new Map<string, number>();
    for (const [actor, cut] of this.actors) {
      const last = mode === "key" ? (cut.groupConcerns ? cut.lastSeq : cut.keyCut) : cut.timeDone ? cut.timeCut : cut.lastSeq;
      if (last >= 0) out.set(actor, last);
    }
    return out;
  }

  get keySeen(): boolean {
    for (const cut of this.actors.values()) if (cut.keyCut >= 0 || cut.groupConcerns) return true;
    return false;
  }

  /** Records per actor in the whole log. */
  totals(): Map<string, number> {
    return new Map([...this.actors].map(([actor, cut]) => [actor, cut.records]));
  }

  get resolvedTime(): number | undefined {
    return this.time;
  }

  /** The `t` of the log's first record: the run's start (log/time-base.ts). */
  get runStart(): number | undefined {
    return this.firstT;
  }
}

export interface SliceActor {
  actor: string;
  /** Records kept (from the actor's first to seq `lastSeq`) and the actor's records in the whole log. */
  kept: number;
  total: number;
  lastSeq: number;
}

export interface ExportReport {
  out: string;
  /** What the slice is around: the key, or the time (absolute, as in the log's `t`). */
  around: { key: string } | { time: number };
  records: number;
  totalRecords: number;
  /** A slice from a snapshot: the position (records before) it starts at, and the actors restored there from snapshots of their cores. */
  start?: number;
  fromSnapshot?: string[];
  actors: SliceActor[];
  /** Actors of the log left out of the slice. */
  dropped: string[];
  /** Problems of the original log (they may carry over into the slice). */
  problems: LogProblem[];
  /** The run's start (the `t` of the log's first record) and the header's `created` (ms), for printing times. */
  runStart?: number;
  created: number;
}

/**
 * Parses `--around`: the key if the log has it, otherwise a time ("1763785200.25", or
 * "+2.5" seconds after the first record). Returns both readings; the log decides.
 */
export function parseAround(text: string): { key: string; time?: { time: number; elapsed?: boolean } } {
  if (text.length === 0) throw new BadOptionError("--around", "give a task key or a time");
  const elapsed = text.startsWith("+");
  const number = Number(elapsed ? text.slice(1) : text);
  const time = /^\+?\d+(\.\d*)?([eE][+-]?\d+)?$/.test(text) && Number.isFinite(number) ? { time: number, ...(elapsed ? { elapsed } : {}) } : undefined;
  return time === undefined ? { key: text } : { key: text, time };
}

/** Writes the slice of the log at `path` around a key or a time to `out`. */
export interface ExportOptions {
  /** Start the slice from a snapshot when the log has (or gets) an index; default true. */
  fromSnapshot?: boolean;
  /** What the export wants said (an index rebuilt, a snapshot that could not be taken). */
  note?: (message: string) => void;
}

export async function exportSlice(path: string, around: Around | string, out: string, options: ExportOptions = {}): Promise<ExportReport> {
  const wanted = typeof around === "string" ? parseAround(around) : "key" in around ? { key: around.key } : { time: around };
  const key = "key" in wanted ? wanted.key : undefined;
  const time = "time" in wanted ? wanted.time : undefined;
  const reader = await openLog(path);
  const cuts = new SliceCuts(key, time);
  let totalRecords = 0;
  for await (const record of reader.records()) {
    cuts.add(record);
    totalRecords += 1;
  }
  const problems = [...reader.problems];
  let mode: "key" | "time";
  if (key !== undefined && cuts.keySeen) mode = "key";
  else if (time !== undefined) mode = "time";
  else throw new BadOptionError("--around", `${path} has no record of the key ${JSON.stringify(key)}${typeof around === "string" ? " (and it is not a time)" : ""}`);
  const keep = cuts.finish(mode);
  if (keep.size === 0) throw new BadOptionError("--around", `nothing in ${path} is at or before ${cuts.resolvedTime}`);

  // From a snapshot when the log has an index: the latest of its snapshot positions before
  // the key's first record (or the time), every actor running there restored from a snapshot
  // of its core, taken by replaying the log up to there.
  const index = options.fromSnapshot === false ? undefined : await indexOnDemand(path, options.note);
  let start = 0;
  let starts = new Map<string, SliceStart>();
  try {
    if (index !== undefined) {
      const around = mode === "key" ? cuts.firstKeyPosition : await index.positionAtTime(cuts.resolvedTime!);
      start = index.snapshotPositions.filter((p) => p <= around).pop() ?? 0;
      if (start > 0) starts = await coreSnapshotsAt(path, start);
      const bytes = [...starts.values()].reduce((sum, s) => sum + s.core.length, 0);
      // The header holds them, and a header is one line of at most MAX_HEADER_BYTES.
      if (bytes > MAX_HEADER_BYTES / 2) throw new LogCorruptError(`the snapshots of the cores at record ${start} take ${bytes} bytes, too many for a log header`);
    }
  } catch (error) {
    if (!(error instanceof LogCorruptError || error instanceof SnapshotError)) throw error;
    options.note?.(`${error.message}: the slice starts at the log's beginning`);
    start = 0;
  }

  // Clients have no core snapshot: a slice from a snapshot leaves out those running there.
  const clientsLeftOut = start > 0 ? [...keep.keys()].filter((actor) => actor.startsWith("client.") && !starts.has(actor)) : [];
  for (const actor of clientsLeftOut) keep.delete(actor);
  if (clientsLeftOut.length > 0) options.note?.(`the slice starts from a snapshot at record ${start}: left out ${clientsLeftOut.join(", ")} (a client's core has no snapshot)`);
  // The slice in its log's format: JSON lines from a JSON-lines file or from JetStream.
  const from = Object.fromEntries([...starts].filter(([actor]) => keep.has(actor)));
  const sink = await FileLogSink.open(out, {
    format: reader.header.v === LOG_FORMAT_FRAMES ? "binary" : "jsonl",
    meta: {
      ...reader.header.meta,
      slice: { of: path, around: mode === "key" ? { key } : { time: cuts.resolvedTime }, cuts: Object.fromEntries(keep), ...(start > 0 ? { start, from } : {}) },
    },
  });
  let records = 0;
  const kept = new Map<string, number>();
  const source = start > 0 ? index!.range(start, cuts.end(mode)) : reader.records();
  for await (const record of source) {
    const last = keep.get(record.actor);
    if (last === undefined || record.seq > last) continue;
    const snapshot = starts.get(record.actor);
    if (snapshot !== undefined && record.seq <= snapshot.seq) continue;
    sink.append(record);
    kept.set(record.actor, (kept.get(record.actor) ?? 0) + 1);
    // Bounded memory on large logs: let the writer catch up now and then.
    if (++records % 50_000 === 0) await sink.flush();
  }
  await sink.close();
  await index?.close();
  // Actors stopped before a snapshot start have nothing in the slice.
  for (const actor of [...keep.keys()]) if (!kept.has(actor) && !(actor in from)) keep.delete(actor);

  const totals = cuts.totals();
  const actors = [...keep].map(([actor, lastSeq]) => ({ actor, kept: kept.get(actor) ?? 0, total: totals.get(actor) ?? 0, lastSeq }));
  const dropped = [...totals.keys()].filter((actor) => !keep.has(actor));
  return {
    out,
    around: mode === "key" ? { key: key! } : { time: cuts.resolvedTime! },
    records,
    totalRecords,
    ...(start > 0 ? { start, fromSnapshot: Object.keys(from) } : {}),
    actors,
    dropped,
    problems,
    ...(cuts.runStart !== undefined ? { runStart: cuts.runStart } : {}),
    created: reader.header.created,
  };
}
