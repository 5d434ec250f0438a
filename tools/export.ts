/**
 * A self-contained slice of a log, to attach to a bug report: `natsched export`.
 *
 * The log is event-sourced and has no snapshots, so an actor's state at any point can only
 * be rebuilt from its start record. A slice therefore keeps, of each actor it needs, every
 * record from the actor's beginning up to a cut, and nothing after:
 *
 * - around a key: the actors whose records concern the key (a transition of it, an input
 *   naming it), each cut right after the last input that concerns the key, with all that
 *   input's transitions; the other actors are left out;
 * - around a time: every actor that started by then, each cut after its last input at or
 *   before that time, with all that input's transitions.
 *
 * Cuts fall between inputs, never inside one, so every actor in the slice replays as it
 * did (`natsched replay` checks it); an actor cut short has no stop record, which replay
 * reads as "still running". Two passes over the file: one to find the cuts, one to copy.
 */
import { BadOptionError } from "../machines/errors.js";
import { FileLogSink } from "../log/file-log.js";
import { openLog } from "../log/reader.js";
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
}

/**
 * Finds the cuts, one record at a time in log order: for a key and a time at once, so
 * `--around` can take either without knowing which it is beforehand.
 */
export class SliceCuts {
  private readonly actors = new Map<string, ActorCut>();
  private time: number | undefined;
  private firstT: number | undefined;

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
      cut = { lastSeq: -1, groupConcerns: false, keyCut: -1, timeCut: -1, timeDone: false, records: 0 };
      this.actors.set(record.actor, cut);
    }
    cut.records += 1;
    if (record.kind === "transition") {
      if (this.key !== undefined && record.id === this.key) cut.groupConcerns = true;
    } else {
      // A new input group starts: the previous one ended at lastSeq.
      if (cut.groupConcerns) cut.keyCut = cut.lastSeq;
      cut.groupConcerns = this.key !== undefined && concernsKey(record, this.key);
      if (this.time !== undefined && !cut.timeDone) {
        if (record.t > this.time) {
          cut.timeDone = true;
          cut.timeCut = cut.lastSeq;
        }
      }
    }
    cut.lastSeq = record.seq;
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
export async function exportSlice(path: string, around: Around | string, out: string): Promise<ExportReport> {
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

  // The slice in its log's format: JSON lines from a JSON-lines file or from JetStream.
  const sink = await FileLogSink.open(out, {
    format: reader.header.v === LOG_FORMAT_FRAMES ? "binary" : "jsonl",
    meta: { ...reader.header.meta, slice: { of: path, around: mode === "key" ? { key } : { time: cuts.resolvedTime }, cuts: Object.fromEntries(keep) } },
  });
  let records = 0;
  const kept = new Map<string, number>();
  for await (const record of reader.records()) {
    const last = keep.get(record.actor);
    if (last === undefined || record.seq > last) continue;
    sink.append(record);
    kept.set(record.actor, (kept.get(record.actor) ?? 0) + 1);
    // Bounded memory on large logs: let the writer catch up now and then.
    if (++records % 50_000 === 0) await sink.flush();
  }
  await sink.close();

  const totals = cuts.totals();
  const actors = [...keep].map(([actor, lastSeq]) => ({ actor, kept: kept.get(actor) ?? 0, total: totals.get(actor) ?? 0, lastSeq }));
  const dropped = [...totals.keys()].filter((actor) => !keep.has(actor));
  return {
    out,
    around: mode === "key" ? { key: key! } : { time: cuts.resolvedTime! },
    records,
    totalRecords,
    actors,
    dropped,
    problems,
    ...(cuts.runStart !== undefined ? { runStart: cuts.runStart } : {}),
    created: reader.header.created,
  };
}
