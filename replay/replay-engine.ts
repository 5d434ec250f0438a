/**
 * Hands each record read from the log to its actor's replay, applies `until` and the
 * actor filter, and collects problems. See replay.ts for the entry point.
 */
import { ActorRun } from "./replay-actor.js";
import { beforeCut, type CutSpec } from "./log-cut.js";
import type { ReplayEffects, ReplayHost } from "./replay-cores.js";
import type { ScanHandler } from "./replay-scan.js";
import type { ReplayProblem } from "./replay-types.js";
import { openProblems } from "./open-problems.js";

export { openProblem, openProblems } from "./open-problems.js";
import type { TransitionLine } from "./transition-line.js";
import type { LogProblem, LogRecord } from "../log/types.js";

export interface EngineOptions {
  actor?: string | undefined;
  until?: CutSpec | undefined;
  /**
   * Effects for the cores the replay rebuilds, wrapping the replay's own (which check the
   * transitions): a scheduler restarting from its log keeps its rebuilt core and re-points
   * these at its live host afterwards (replay/jetstream-resume.ts).
   */
  effects?: (actor: string, run: ReplayEffects) => ReplayEffects;
}

export class ReplayEngine implements ScanHandler {
  readonly runs = new Map<string, ActorRun>();
  readonly problems: ReplayProblem[] = [];
  records = 0;
  /** Every actor with a start record in the part of the log read, replayed or not. */
  readonly started = new Set<string>();
  /** Actors whose latest start record has no stop record after it yet, with that start's seq. */
  readonly open = new Map<string, number>();
  /** The latest `t` of a replayed record that is not a transition. */
  lastT: number | null = null;
  private firstT: number | undefined;
  /** Actors past the time cut: nothing more of theirs is replayed. */
  private readonly pastCut = new Set<string>();
  private readonly seqCut: { actor: string; seq: number } | undefined;

  constructor(private readonly options: EngineOptions) {
    const until = options.until;
    this.seqCut = until?.kind === "seq" ? { actor: until.actor ?? options.actor ?? "scheduler", seq: until.value } : undefined;
  }

  problem(problem: LogProblem): void {
    this.problems.push(problem);
    if (problem.kind === "gap" && problem.actor !== undefined && this.selected(problem.actor) && !this.pastCut.has(problem.actor)) {
      this.run(problem.actor).halt(problem.expected!, `records missing: ${problem.message}`);
    }
  }

  record(record: LogRecord): boolean {
    this.records++;
    this.firstT ??= record.t;
    const actor = record.actor;
    if (record.kind === "start") {
      this.started.add(actor);
      this.open.set(actor, record.seq);
    } else if (record.kind === "stop") this.open.delete(actor);
    if (!this.selected(actor) || this.pastCut.has(actor)) return true;
    if (record.kind !== "transition" && !this.beforeCut(record)) {
      const seqCut = this.seqCut !== undefined && actor === this.seqCut.actor;
      this.runs.get(actor)?.cut(true);
      this.pastCut.add(actor);
      if (seqCut) {
        // The other actors stop where this record sits in the log; the transitions of their
        // latest inputs may come after it, so those are not checked.
        for (const run of this.runs.values()) run.cut(false);
        return false;
      }
      return true;
    }
    const run = this.run(actor);
    switch (record.kind) {
      case "start":
        run.start(record);
        break;
      case "input":
        run.input(record);
        break;
      case "transition":
        run.transitionRecord(record);
        return true;
      case "stop":
        run.stop(record);
        break;
    }
    if (this.lastT === null || record.t > this.lastT) this.lastT = record.t;
    return true;
  }

  transitionLine(line: TransitionLine, actor: string): boolean {
    this.records++;
    this.firstT ??= line.t();
    if (!this.selected(actor) || this.pastCut.has(actor)) return true;
    this.run(actor).transitionLine(line);
    return true;
  }

  /** `actor` is replayed on from a core rebuilt elsewhere (a snapshot), as it stood after its record `lastSeq`. */
  adopt(actor: string, makeHost: (fx: ReplayEffects) => ReplayHost, lastSeq: number): void {
    this.run(actor).adopt(makeHost, lastSeq);
  }

  /**
   * The log has been read (to its end unless `stopped`). Unless `openOk`, each actor still
   * open (a start record and no stop record after it) is an "open" problem.
   */
  finish(stopped: boolean, openOk = false): void {
    if (stopped) return;
    for (const run of this.runs.values()) {
      const seq = run.end();
      if (seq === undefined) continue;
      this.problems.push({
        kind: "truncated",
        actor: run.name,
        seq,
        message: `${run.name}: the log ends in the middle of input #${seq}: the core made transitions after the last one recorded (the writer stopped?)`,
      });
    }
    if (!openOk) this.problems.push(...openProblems(this.open));
  }

  /** The `t` of the first record read. */
  get firstTime(): number | undefined {
    return this.firstT;
  }

  private selected(actor: string): boolean {
    return this.options.actor === undefined || this.options.actor === actor;
  }

  /** Whether a record that is not a transition comes before the `until` cut (log-cut.ts, shared with inspect). */
  private beforeCut(record: LogRecord): boolean {
    const until = this.options.until;
    return until === undefined || beforeCut(until, record, this.seqCut?.actor ?? "", this.firstT!);
  }

  private run(actor: string): ActorRun {
    let run = this.runs.get(actor);
    if (run === undefined) {
      const wrap = this.options.effects;
      this.runs.set(actor, (run = new ActorRun(actor, wrap === undefined ? undefined : (fx) => wrap(actor, fx))));
    }
    return run;
  }
}
