/**
 * The problem of a log whose actor has no stop record: the writer did not close it. Its own
 * module, so `natsched log` reports it without loading the replay engine.
 */
import type { ReplayProblem } from "./replay-types.js";

/** The "open" problems of `open` (actor to the seq of its unmatched start), by actor name. */
export function openProblems(open: Iterable<[string, number]>): ReplayProblem[] {
  return [...open].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([actor, seq]) => openProblem(actor, seq));
}

/** An actor with no stop record after its start (seq `seq`): the log was not closed. */
export function openProblem(actor: string, seq: number): ReplayProblem {
  return {
    kind: "open",
    actor,
    seq,
    message: `${actor} has no stop record after its start (#${seq}): the writer stopped without closing the log (crashed, killed, or still writing; --open-ok accepts a log still being written)`,
  };
}
