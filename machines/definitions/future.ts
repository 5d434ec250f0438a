import { setup } from "xstate";

/**
 * A client's future for a key, as the client core sees it (machines/client/core.ts): one
 * instance per key this client holds a future for, from the first future made for it (a
 * `retain` input: it begins pending) until the last is released (a `release` or `close`
 * input: it ends, whatever its state). The status a user reads (`Future.status`) is the state.
 * Beginning and end are the inputs' to tell: a W1 run would record two more transitions per
 * task for what its inputs already say.
 */
export type FutureEvent =
  /** The scheduler reported the key in memory (key-in-memory). */
  | { type: "IN_MEMORY" }
  /** The scheduler reported the task failed (key-erred). */
  | { type: "ERRED" }
  /** The scheduler cancelled the key (key-cancelled). */
  | { type: "CANCELLED" }
  /** This client cancelled it (cancel), or a dependency of it. */
  | { type: "CANCEL" }
  /** Its submission was refused, or got no answer in time. */
  | { type: "FAILED" }
  /** Submitted again after a cancel. */
  | { type: "SUBMIT" }
  /** Every holder of its result is gone: it waits for the scheduler to compute it again. */
  | { type: "LOST" }
  /** A new run of the scheduler does not hold it: this client submits it again. */
  | { type: "RESUBMIT" }
  /** A new run of the scheduler does not hold it and it cannot be computed again (scattered data). */
  | { type: "UNRECOVERABLE" };

export const futureMachine = setup({ types: { events: {} as FutureEvent } }).createMachine({
  id: "future",
  initial: "pending",
  states: {
    pending: {
      on: {
        IN_MEMORY: "finished",
        ERRED: "error",
        CANCELLED: "cancelled",
        CANCEL: "cancelled",
        FAILED: "error",
        LOST: "pending",
        RESUBMIT: "pending",
        UNRECOVERABLE: "error",
      },
    },
    finished: {
      on: { IN_MEMORY: "finished", ERRED: "error", CANCELLED: "cancelled", CANCEL: "cancelled", LOST: "pending", RESUBMIT: "pending", UNRECOVERABLE: "error" },
    },
    error: { on: { IN_MEMORY: "finished", ERRED: "error", CANCELLED: "cancelled", CANCEL: "cancelled", LOST: "pending" } },
    cancelled: { on: { CANCEL: "cancelled", SUBMIT: "pending", LOST: "pending" } },
  },
});
