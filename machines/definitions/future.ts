import { setup } from "xstate";

/**
 * A client's future for a key, as the client core sees it (machines/client/core.ts): one
 * instance per key this client holds a future for, `released` when it holds none. The
 * status a user reads (`Future.status`) is the state.
 */
export type FutureEvent =
  /** The first future for the key is made. */
  | { type: "RETAIN" }
  /** The last future for the key is released (or collected). */
  | { type: "RELEASE" }
  /** The client closed: every future goes. */
  | { type: "CLOSE" }
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

const leave = { RELEASE: "released", CLOSE: "released" } as const;

export const futureMachine = setup({ types: { events: {} as FutureEvent } }).createMachine({
  id: "future",
  initial: "released",
  states: {
    released: { on: { RETAIN: "pending" } },
    pending: {
      on: {
        ...leave,
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
      on: { ...leave, IN_MEMORY: "finished", ERRED: "error", CANCELLED: "cancelled", CANCEL: "cancelled", LOST: "pending", RESUBMIT: "pending", UNRECOVERABLE: "error" },
    },
    error: { on: { ...leave, IN_MEMORY: "finished", ERRED: "error", CANCELLED: "cancelled", CANCEL: "cancelled", LOST: "pending" } },
    cancelled: { on: { ...leave, CANCEL: "cancelled", SUBMIT: "pending", LOST: "pending" } },
  },
});
