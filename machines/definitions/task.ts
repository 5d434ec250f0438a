import { setup } from "xstate";

/**
 * The scheduler's view of one task (Dask's scheduler TaskState.state).
 *
 * Events carry no payload at this level: the scheduler's policies decide which event to
 * send (placement, queuing, stealing), the machine decides whether it is legal and where it
 * leads. `processing.stealing` is only left by a confirm/reject of the steal, the task
 * finishing or failing on the victim (the victim then rejects, and the late answer is
 * stale), or a release (worker loss, client release).
 */
export type TaskEvent =
  | { type: "WAIT" } // dependencies not all in memory
  | { type: "QUEUE" } // root-ish and every worker is saturated
  | { type: "NO_WORKER" } // no worker may run it (restrictions, no workers)
  | { type: "ASSIGN" } // sent to a worker
  | { type: "FINISH" } // a worker reported the result
  | { type: "DATA" } // data arrived from elsewhere (scatter)
  | { type: "ERR" } // it failed, or a dependency failed
  | { type: "RELEASE" } // not needed now, data lost, or its worker left
  | { type: "FORGET" } // nobody needs it: drop the record
  | { type: "STEAL" } // steal request sent to the victim
  | { type: "STEAL_CONFIRM" } // victim cancelled it: now processing on the thief
  | { type: "STEAL_REJECT" }; // victim is running it or done: stays put

export const taskMachine = setup({ types: { events: {} as TaskEvent } }).createMachine({
  id: "task",
  initial: "released",
  states: {
    released: {
      on: {
        WAIT: "waiting",
        QUEUE: "queued",
        NO_WORKER: "no-worker",
        ASSIGN: "processing",
        DATA: "memory",
        ERR: "erred",
        FORGET: "forgotten",
      },
    },
    waiting: {
      on: {
        QUEUE: "queued",
        NO_WORKER: "no-worker",
        ASSIGN: "processing",
        DATA: "memory",
        ERR: "erred",
        RELEASE: "released",
      },
    },
    // Queued tasks are unrestricted and wait on nothing (QUEUE needs a root-ish task whose
    // inputs are all in memory, and those stay there while it waits): one is placed again
    // only when some running worker has a free slot, so it never finds no worker, and no
    // input of it can fail.
    queued: {
      on: {
        ASSIGN: "processing",
        DATA: "memory",
        RELEASE: "released",
      },
    },
    "no-worker": {
      on: {
        ASSIGN: "processing",
        QUEUE: "queued",
        DATA: "memory",
        ERR: "erred",
        RELEASE: "released",
      },
    },
    processing: {
      initial: "assigned",
      on: {
        FINISH: "memory",
        DATA: "memory",
        ERR: "erred",
        RELEASE: "released",
      },
      states: {
        assigned: { on: { STEAL: "stealing" } },
        stealing: {
          on: {
            STEAL_CONFIRM: "assigned",
            STEAL_REJECT: "assigned",
          },
        },
      },
    },
    // A result reported for a task already in memory only adds a replica (no transition);
    // the same data scattered again by another client is shared (DATA).
    memory: {
      on: {
        RELEASE: "released",
        DATA: "memory",
      },
    },
    // Forgotten only once released: releasing frees the failure on its worker first.
    erred: {
      on: {
        RELEASE: "released",
      },
    },
    forgotten: { type: "final" },
  },
});
