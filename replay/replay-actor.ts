/**
 * Replaying one actor: its core rebuilt at each start record, each recorded input fed to
 * it, and each transition it makes checked against the transition records that follow
 * the input in the log, in order. The core runs ahead: an input is fed as soon as its
 * record is read, its transitions wait in a queue, and each transition record read after
 * it takes the next one off the queue. The actor's next input, start or stop record
 * finds the queue empty, or the core made a transition the log does not have.
 */
import { buildHost, type ReplayEffects, type ReplayHost } from "./replay-cores.js";
import { asLogged, jsonEqual } from "./replay-diff.js";
import type { ActorReplay, Divergence, TransitionFacts } from "./replay-types.js";
import { EVENT, FROM, ID, MACHINE, TO, type TransitionLine } from "./transition-line.js";
import type { InputRecord, StartRecord, StopRecord, TransitionRecord } from "../log/types.js";
import type { LoggedWhy, MachineName, Why } from "../machines/reasons.js";

const MAX_THROWS_KEPT = 20;

interface Produced {
  machine: MachineName;
  id: string;
  event: string;
  from: string;
  to: string;
  why: Why | undefined;
}

export class ActorRun implements ReplayEffects {
  readonly summary: ActorReplay = { role: "unknown", inputs: 0, transitions: 0, lastSeq: -1, stopped: false, sent: {} };
  host: ReplayHost | null = null;
  /** Still checking: started, not diverged, halted or cut. */
  active = false;
  /** No more of its records are taken (cut by `until`, diverged, halted). */
  done = false;
  private cause: InputRecord | StartRecord | null = null;
  /** Transitions of the current cause matched so far. */
  private matched = 0;
  /** Reused slots: the transitions the core made and the log has not shown yet are [head, tail). */
  private readonly produced: Produced[] = [];
  private head = 0;
  private tail = 0;
  private readonly sentByOp = new Map<string, number>();

  /** `wrapEffects`: what the rebuilt core reports to instead of this run, given the run (see EngineOptions.effects). */
  constructor(
    readonly name: string,
    private readonly wrapEffects?: (run: ReplayEffects) => ReplayEffects,
  ) {}

  // ---- effects of the replayed core ---------------------------------------------------

  transition(machine: MachineName, id: string, event: string, from: string, to: string, why?: Why): void {
    let slot = this.produced[this.tail];
    if (slot === undefined) this.produced.push((slot = { machine, id, event, from, to, why }));
    else {
      slot.machine = machine;
      slot.id = id;
      slot.event = event;
      slot.from = from;
      slot.to = to;
      slot.why = why;
    }
    this.tail++;
  }

  sent(op: string): void {
    this.sentByOp.set(op, (this.sentByOp.get(op) ?? 0) + 1);
  }

  // ---- records ------------------------------------------------------------------------

  start(record: StartRecord): void {
    if (this.done || !this.settle()) return;
    this.summary.lastSeq = record.seq;
    this.summary.role = record.role;
    this.summary.stopped = false;
    try {
      this.host = buildHost(record, this.wrapEffects?.(this) ?? this);
    } catch (error) {
      this.host = null;
      this.halt(record.seq, `cannot rebuild the actor from its start record: ${(error as Error).message}`);
      return;
    }
    this.active = true;
    this.cause = record;
    this.matched = 0;
  }

  /**
   * Replay goes on from a core rebuilt elsewhere (a snapshot: log/core-snapshot.ts), as
   * the actor stood after its record `lastSeq`; `makeHost` gets the effects its core reports to.
   */
  adopt(makeHost: (fx: ReplayEffects) => ReplayHost, lastSeq: number): void {
    this.host = makeHost(this.wrapEffects?.(this) ?? this);
    this.summary.role = this.host.role;
    this.summary.lastSeq = lastSeq;
    this.summary.stopped = false;
    this.active = true;
    this.done = false;
    this.cause = null;
    this.matched = 0;
  }

  input(record: InputRecord): void {
    if (!this.ready(record.seq) || !this.settle()) return;
    this.summary.lastSeq = record.seq;
    this.summary.inputs++;
    this.cause = record;
    this.matched = 0;
    try {
      this.host!.handle(record.event);
    } catch (error) {
      // The live actor caught the same exception at the same point (its host survives a
      // core's exception); the transitions made before it were recorded and are checked.
      const threw = (this.summary.threw ??= []);
      if (threw.length < MAX_THROWS_KEPT) threw.push({ seq: record.seq, op: record.event.op, message: String((error as Error)?.message ?? error) });
    }
  }

  transitionRecord(record: TransitionRecord): void {
    if (!this.ready(record.seq)) return;
    const next = this.head < this.tail ? this.produced[this.head]! : undefined;
    if (
      next !== undefined &&
      next.machine === record.machine &&
      next.id === record.id &&
      next.event === record.event &&
      next.from === record.from &&
      next.to === record.to &&
      sameWhy(record.why, next.why)
    ) {
      this.matchedOne(record.seq);
      return;
    }
    this.diverge({ seq: record.seq, ...facts(record) }, next);
  }

  transitionLine(line: TransitionLine): void {
    if (!this.ready(line.seq)) return;
    const next = this.head < this.tail ? this.produced[this.head]! : undefined;
    if (
      next !== undefined &&
      line.is(ID, next.id) &&
      line.is(TO, next.to) &&
      line.is(FROM, next.from) &&
      line.is(EVENT, next.event) &&
      line.is(MACHINE, next.machine) &&
      sameWhy(line.why, next.why)
    ) {
      this.matchedOne(line.seq);
      return;
    }
    this.diverge({ seq: line.seq, ...facts(line.record()) }, next);
  }

  stop(record: StopRecord): void {
    if (!this.ready(record.seq) || !this.settle()) return;
    this.summary.lastSeq = record.seq;
    this.summary.stopped = true;
    this.cause = null;
    this.matched = 0;
  }

  /**
   * `until` reached at a record of this actor that is not replayed. With `verify`, the
   * current input's transitions must all have been seen (they precede that record).
   */
  cut(verify: boolean): void {
    if (this.done) return;
    if (verify && this.active) this.settle();
    this.done = true;
    this.active = false;
  }

  /** Transitions the core made that the log has not shown yet (0 between inputs that replayed clean). */
  get pending(): number {
    return this.tail - this.head;
  }

  /**
   * The log ended. Transitions the core made that the log does not have mean the log
   * stops in the middle of an input (the writer stopped); returned as that input's seq.
   */
  end(): number | undefined {
    if (!this.active || this.head === this.tail) return undefined;
    this.active = false;
    this.done = true;
    return this.cause?.seq;
  }

  /** Replay of this actor cannot go on from `seq` (a gap, no start record...). */
  halt(seq: number, reason: string): void {
    if (this.done) return;
    this.summary.halted = { seq, reason };
    this.active = false;
    this.done = true;
  }

  // ---- checking -----------------------------------------------------------------------

  /** Whether a record with this seq is to be replayed; halts an actor that never started. */
  private ready(seq: number): boolean {
    if (this.active) return true;
    if (!this.done) this.halt(seq, "no start record before it: the actor cannot be rebuilt");
    return false;
  }

  private matchedOne(seq: number): void {
    this.head++;
    this.matched++;
    this.summary.transitions++;
    this.summary.lastSeq = seq;
    if (this.head === this.tail) this.head = this.tail = 0;
  }

  /** The current cause's transitions are all accounted for; otherwise a divergence. */
  private settle(): boolean {
    if (this.head === this.tail) return true;
    this.diverge(null, this.produced[this.head]);
    return false;
  }

  private diverge(recorded: (TransitionFacts & { seq: number }) | null, next: Produced | undefined): void {
    const cause = this.cause;
    const reproduced = next === undefined ? null : facts(next);
    const input = cause?.kind === "input" ? cause.event : null;
    const where = cause === null ? `its stop record #${this.summary.lastSeq}` : cause.kind === "input" ? `input #${cause.seq} (${cause.event.op})` : `start record #${cause.seq}`;
    const detail =
      recorded === null
        ? `the core made ${describe(reproduced!)}, which the log does not have`
        : reproduced === null
          ? `the log has ${describe(recorded)} (#${recorded.seq}), which the core did not make`
          : `the log has ${describe(recorded)} (#${recorded.seq}), the core made ${describe(reproduced)}`;
    const divergence: Divergence = {
      actor: this.name,
      seq: cause?.seq ?? this.summary.lastSeq,
      cause: cause === null ? "stop" : cause.kind,
      input,
      index: this.matched,
      recorded,
      reproduced,
      message: `${this.name} diverged at ${where}, transition ${this.matched + 1}: ${detail}`,
    };
    const threw = this.summary.threw?.find((t) => t.seq === cause?.seq);
    if (threw !== undefined) divergence.error = threw.message;
    this.summary.divergence = divergence;
    this.active = false;
    this.done = true;
  }

  /** What the actor sent, by op. */
  sentCounts(): Record<string, number> {
    return Object.fromEntries([...this.sentByOp].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }
}

function sameWhy(logged: LoggedWhy | undefined, live: Why | undefined): boolean {
  if (live === undefined) return logged === undefined;
  return logged !== undefined && jsonEqual(logged, live);
}

type TransitionLike = { machine: MachineName; id: string; event: string; from: string; to: string; why?: LoggedWhy | undefined };

function facts(t: TransitionLike): TransitionFacts {
  const out: TransitionFacts = { machine: t.machine, id: t.id, event: t.event, from: t.from, to: t.to };
  if (t.why !== undefined) out.why = asLogged(t.why);
  return out;
}

function describe(t: TransitionFacts): string {
  return `${t.machine} ${t.id}: ${t.from} -> ${t.to} (${t.event})${t.why === undefined ? "" : ` ${JSON.stringify(t.why)}`}`;
}
