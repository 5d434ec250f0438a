/** The rejection of a thread job the worker stopped because nothing wants its outcome (a cancelled task). */
export class ExecutionStopped extends Error {
  override name = "ExecutionStopped";
  constructor(readonly key: string) {
    super(`execution of ${key} stopped: the task was cancelled`);
  }
}
