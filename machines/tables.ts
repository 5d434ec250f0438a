import { compileMachine } from "./compile.js";
import { taskMachine, type TaskEvent } from "./definitions/task.js";
import { workerTaskMachine, type WorkerTaskEvent } from "./definitions/worker-task.js";
import {
  schedulerMachine,
  workerMachine,
  type SchedulerLifecycleEvent,
  type WorkerLifecycleEvent,
} from "./definitions/lifecycle.js";

export type TaskStateName =
  | "released"
  | "waiting"
  | "queued"
  | "no-worker"
  | "processing.assigned"
  | "processing.stealing"
  | "memory"
  | "erred"
  | "forgotten";
export type WorkerTaskStateName =
  | "released"
  | "waiting"
  | "fetch"
  | "flight"
  | "ready"
  | "executing"
  | "cancelled"
  | "resumed"
  | "memory"
  | "error";
export type WorkerStateName = "starting" | "running" | "closing" | "closed";
export type SchedulerStateName = "starting" | "running" | "closing" | "closed";

export const TASK = compileMachine<TaskStateName, TaskEvent["type"]>(taskMachine);
export const WORKER_TASK = compileMachine<WorkerTaskStateName, WorkerTaskEvent["type"]>(workerTaskMachine);
export const WORKER = compileMachine<WorkerStateName, WorkerLifecycleEvent["type"]>(workerMachine);
export const SCHEDULER = compileMachine<SchedulerStateName, SchedulerLifecycleEvent["type"]>(schedulerMachine);

export { taskMachine, workerTaskMachine, workerMachine, schedulerMachine };
