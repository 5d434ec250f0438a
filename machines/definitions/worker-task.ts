import { setup } from "xstate";

/**
 * A worker's view of one task (Dask's worker TaskState.state): a task it must compute, or
 * a dependency it must fetch from a peer.
 *
 * `cancelled` is a task released while executing or in flight (the work cannot be
 * interrupted; its outcome is discarded). `resumed` is a cancelled task the scheduler asked
 * for again before the work ended: its outcome is kept.
 *
 * A steal request is answered by trying STEAL: it is only legal before the task started
 * (waiting, ready), which is the confirm; anywhere else the worker rejects.
 *
 * STALE is accepted in every state and changes nothing: the worker dropped a scheduler
 * instruction about the task that a newer one superseded (a compute-task for an assignment
 * it already holds, ran, or was told to void; a free-keys older than the assignment it
 * holds). It is a transition only so that the drop is in the event log with its reasons
 * (docs/protocol.md, "Assignment numbers").
 *
 * DATA is taken only in `released`: scatter creates data, it never replaces a task the worker
 * has (docs/protocol.md, "Scatter"). Data a client scattered here (DATA from put-data) is not yet a replica the worker may
 * vouch for: anyone who can reach the data plane can put data. CONFIRM marks the moment the
 * scheduler names this worker as holding it (a compute-task or acquire-replicas listing it
 * among the key's holders, or the scatter lease's who-has); until then the copy is never
 * reported as a result or a replica, and the worker core drops it (FREE) instead of using it.
 */
export type WorkerTaskEvent =
  | { type: "WAIT_DEPS" } // compute requested, dependencies missing
  | { type: "READY" } // compute requested (or dependencies arrived): can run
  | { type: "FETCH" } // needed as a dependency, held by peers
  | { type: "GATHER" } // transfer from a peer started
  | { type: "RECEIVED" } // transfer finished
  | { type: "FETCH_FAILED" } // transfer failed: fetch again from another holder
  | { type: "EXECUTE" } // a thread took it
  | { type: "DONE" } // the function returned
  | { type: "FAIL" } // the function threw
  | { type: "STEAL" } // the scheduler moves it elsewhere (only before it starts)
  | { type: "FREE" } // the scheduler no longer needs it here
  | { type: "COMPUTE_AGAIN" } // requested again while cancelled
  | { type: "DATA" } // data handed over directly (scatter)
  | { type: "CONFIRM" } // the scheduler counts scattered data here: a replica like any other
  | { type: "STALE" }; // a superseded instruction was dropped: stays where it is

export const workerTaskMachine = setup({ types: { events: {} as WorkerTaskEvent } }).createMachine({
  id: "wtask",
  initial: "released",
  states: {
    released: {
      on: {
        WAIT_DEPS: "waiting",
        READY: "ready",
        FETCH: "fetch",
        DATA: "memory",
        STALE: "released",
      },
    },
    waiting: {
      on: { READY: "ready", STEAL: "released", FREE: "released", STALE: "waiting" },
    },
    fetch: {
      on: { GATHER: "flight", FREE: "released", WAIT_DEPS: "waiting", READY: "ready", STALE: "fetch" },
    },
    flight: {
      on: { RECEIVED: "memory", FETCH_FAILED: "fetch", FREE: "cancelled", STALE: "flight" },
    },
    ready: {
      on: { EXECUTE: "executing", STEAL: "released", FREE: "released", STALE: "ready" },
    },
    executing: {
      on: { DONE: "memory", FAIL: "error", FREE: "cancelled", STALE: "executing" },
    },
    cancelled: {
      on: {
        DONE: "released",
        FAIL: "released",
        RECEIVED: "released",
        FETCH_FAILED: "released",
        COMPUTE_AGAIN: "resumed",
        STALE: "cancelled",
      },
    },
    resumed: {
      on: { DONE: "memory", RECEIVED: "memory", FAIL: "error", FETCH_FAILED: "released", FREE: "cancelled", STALE: "resumed" },
    },
    memory: { on: { FREE: "released", CONFIRM: "memory", STALE: "memory" } },
    error: { on: { FREE: "released", STALE: "error" } },
  },
});
