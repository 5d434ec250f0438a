/**
 * The invariants deterministic simulation testing checks, by id. docs/invariants.md lists
 * each with where it is checked.
 */
export const INVARIANTS = {
  "legal-transition": "every recorded transition is an edge of its machine's compiled table",
  "exclusive-execution": "a task runs on a worker on the scheduler's orders only while the scheduler has it processing there (so on one worker at a time)",
  "at-most-once": "a task is executed more often than the scheduler assigned it afresh only after some worker died",
  "inputs-present": "a task starts only when every input is in memory on its worker, and data a worker holds came from a run, a transfer or a scatter",
  "reference-result": "every value a worker holds equals the reference evaluation of the graph",
  "scheduler-bookkeeping": "the scheduler's processing, queue, no-worker, replica and steal records agree with task states after every step",
  "occupancy": "each worker's occupancy is the sum of its booked durations and transfer estimates, the total is the sum over workers, and all are exactly zero when idle at the end",
  "worker-bookkeeping": "a worker never executes more tasks than it has threads",
  "termination": "every run ends (the agenda empties) within a step budget",
  "liveness": "when the run ends, every task that can finish has: keys some client wants in memory (or erred if they fail), others in memory, released or forgotten",
  "futures": "when the run ends, every future a client holds for a key that can finish is settled (the client heard key-in-memory, or key-erred if it fails): no future waits for ever",
  "no-leak": "when the run ends (the cluster idle), nothing is held for a key nobody wants: no scheduler task, no worker task record, no stored result",
  "quiescence": "when the run ends, nothing is executing, in flight, cancelled or being stolen (no worker slot is held by a task that will never report), and what workers hold is what the scheduler thinks they hold",
  "restart": "a scheduler rebuilt from its recorded inputs equals the live one",
  "determinism": "the same case gives the same log and result",
  "replay": "replaying the run's own log reproduces every transition",
  "crash": "the simulation itself did not throw",
} as const;

export type InvariantId = keyof typeof INVARIANTS;

export interface Violation {
  invariant: InvariantId;
  /** Virtual time of the step where it was found (-1: after the run). */
  at: number;
  message: string;
}
