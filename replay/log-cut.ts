/**
 * A cut of a log: the point `replay --until` stops at and `inspect --at` shows. One
 * definition for both, so the two always stop at the same record (docs/replay.md, "Cuts").
 *
 * - `actor:seq` (or a bare seq: the scheduler's, or replay's `--actor`): that actor's record
 *   #seq has taken effect; an input takes effect with all its transitions. Reading stops at
 *   the actor's next input, start or stop record; the other actors are cut where that record
 *   sits in the log.
 * - a time (`t` as the log has it, with a "."), or `+seconds` from the run's start (the `t`
 *   of the log's first record): each actor's records up to its first input, start or stop
 *   record after that time, with the transitions of the inputs taken.
 */
import { BadOptionError } from "../machines/errors.js";
import type { UntilKind } from "./replay-types.js";

export interface CutSpec {
  kind: UntilKind;
  /** A seq ("seq"), a time as in the log's `t` ("time"), or seconds from the run's start ("elapsed"). */
  value: number;
  /** The actor of a "seq" cut; unset: the scheduler (or the one actor replayed). */
  actor?: string | undefined;
}

/** `--until` / `--at`: "actor:seq", "1234" (a seq), "1763785.5" (a time) or "+2.5" (seconds from the start). */
export function parseCut(text: string, flag: string): CutSpec {
  const elapsed = /^\+(\d+(?:\.\d*)?|\.\d+)s?$/.exec(text);
  if (elapsed) return { kind: "elapsed", value: Number(elapsed[1]) };
  if (/^\d+$/.test(text)) return { kind: "seq", value: Number(text) };
  if (/^\d*\.\d+$|^\d+\.\d*$/.test(text)) return { kind: "time", value: Number(text) };
  const bySeq = /^(.+):(\d+)$/.exec(text);
  if (bySeq) return { kind: "seq", value: Number(bySeq[2]), actor: bySeq[1]! };
  throw new BadOptionError(flag, `${flag} takes a seq (1234), an actor and seq (worker.a:40), a time (1763785.5) or seconds from the start (+2.5), got "${text}"`);
}

/** Whether `record`, a start, input or stop record, comes before the cut. `runStart`: the `t` of the log's first record. */
export function beforeCut(cut: CutSpec, record: { actor: string; seq: number; t: number }, seqActor: string, runStart: number): boolean {
  switch (cut.kind) {
    case "seq":
      return record.actor !== seqActor || record.seq <= cut.value;
    case "time":
      return record.t <= cut.value;
    case "elapsed":
      // As a time (not `t - start <= value`), so it cuts exactly where "time" at start + value does.
      return record.t <= runStart + cut.value;
  }
}

/** What to do with a record read in log order. */
export type CutVerdict = "take" | "skip" | "end";

/**
 * The cut applied to records in log order, for a reader that is not replay (inspect, keys):
 * "take" the record, "skip" it (its actor is past the cut), or "end" (nothing after it is taken).
 */
export class LogCut {
  private readonly pastCut = new Set<string>();
  private runStart: number | undefined;
  private readonly seqActor: string;

  /** `runStart`: the `t` of the log's first record, for a reader that starts past it (from a log index's snapshot). */
  constructor(readonly spec: CutSpec | undefined, defaultActor = "scheduler", runStart?: number) {
    this.seqActor = spec?.actor ?? defaultActor;
    this.runStart = runStart;
  }

  /** The actor a seq cut counts the records of. */
  get actor(): string {
    return this.seqActor;
  }

  admit(record: { actor: string; seq: number; t: number; kind: string }): CutVerdict {
    this.runStart ??= record.t;
    if (this.spec === undefined) return "take";
    if (this.pastCut.has(record.actor)) return "skip";
    if (record.kind === "transition" || beforeCut(this.spec, record, this.seqActor, this.runStart)) return "take";
    this.pastCut.add(record.actor);
    return this.spec.kind === "seq" && record.actor === this.seqActor ? "end" : "skip";
  }

  /** The cut in words: "after scheduler #40", "at t=...", "at +2.5 s". */
  describe(): string {
    const spec = this.spec;
    if (spec === undefined) return "at the end of the log";
    if (spec.kind === "seq") return `after ${this.seqActor} #${spec.value}`;
    return spec.kind === "time" ? `at t=${spec.value}` : `at +${spec.value} s`;
  }
}
