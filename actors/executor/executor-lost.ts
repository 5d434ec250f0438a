import { EXECUTOR_LOST } from "../../machines/protocol.js";

/**
 * A task's executor thread died under it: past its heap limit, process.exit inside, an error
 * thrown where the task's own promise does not catch it (a timer). Reported with code
 * EXECUTOR_LOST, which the scheduler counts like a worker death for that task.
 */
export class ExecutorLost extends Error {
  override name = "ExecutorLost";
  readonly code = EXECUTOR_LOST;
}
