import { setup } from "xstate";

/**
 * Lifecycle of a worker, as the worker itself and the scheduler see it (docs/invariants.md,
 * "Machine edges"). The scheduler's record is created and started by one registration, so it
 * is never `starting` between inputs; the worker core is `starting` until its registration
 * is answered, and a host may close it meanwhile (LocalCluster closing, or removing a worker
 * still starting). natsched never pauses a worker (no memory-pressure pause as Dask's
 * `distributed.worker.memory.pause`), so there is no `paused` state.
 */
export type WorkerLifecycleEvent =
  | { type: "START" } // registered with the scheduler
  | { type: "CLOSE" } // retire: finish nothing new, hand over, leave
  | { type: "CLOSED" }; // gone (clean exit, or missed heartbeats)

export const workerMachine = setup({ types: { events: {} as WorkerLifecycleEvent } }).createMachine({
  id: "worker",
  initial: "starting",
  states: {
    starting: { on: { START: "running", CLOSE: "closing" } },
    running: { on: { CLOSE: "closing", CLOSED: "closed" } },
    closing: { on: { CLOSED: "closed" } },
    closed: { type: "final" },
  },
});

/**
 * Lifecycle of the scheduler. Every host starts its scheduler as it creates it, and closes
 * it (CLOSE then CLOSED, one input) when it stops cleanly.
 */
export type SchedulerLifecycleEvent = { type: "START" } | { type: "CLOSE" } | { type: "CLOSED" };

export const schedulerMachine = setup({ types: { events: {} as SchedulerLifecycleEvent } }).createMachine({
  id: "scheduler",
  initial: "starting",
  states: {
    starting: { on: { START: "running" } },
    running: { on: { CLOSE: "closing" } },
    closing: { on: { CLOSED: "closed" } },
    closed: { type: "final" },
  },
});
