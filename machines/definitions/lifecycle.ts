import { setup } from "xstate";

/** Lifecycle of a worker as the worker itself and the scheduler see it. */
export type WorkerLifecycleEvent =
  | { type: "START" } // registered with the scheduler
  | { type: "PAUSE" } // stop taking new work (memory pressure, operator)
  | { type: "RESUME" }
  | { type: "CLOSE" } // retire: finish nothing new, hand over, leave
  | { type: "CLOSED" }; // gone (clean exit, or missed heartbeats)

export const workerMachine = setup({ types: { events: {} as WorkerLifecycleEvent } }).createMachine({
  id: "worker",
  initial: "starting",
  states: {
    starting: { on: { START: "running", CLOSE: "closing", CLOSED: "closed" } },
    running: { on: { PAUSE: "paused", CLOSE: "closing", CLOSED: "closed" } },
    paused: { on: { RESUME: "running", CLOSE: "closing", CLOSED: "closed" } },
    closing: { on: { CLOSED: "closed" } },
    closed: { type: "final" },
  },
});

/** Lifecycle of the scheduler. */
export type SchedulerLifecycleEvent = { type: "START" } | { type: "CLOSE" } | { type: "CLOSED" };

export const schedulerMachine = setup({ types: { events: {} as SchedulerLifecycleEvent } }).createMachine({
  id: "scheduler",
  initial: "starting",
  states: {
    starting: { on: { START: "running", CLOSE: "closing" } },
    running: { on: { CLOSE: "closing" } },
    closing: { on: { CLOSED: "closed" } },
    closed: { type: "final" },
  },
});
