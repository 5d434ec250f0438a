/**
 * The machine edges the deterministic simulation does not take, and why; and the edges the
 * definitions no longer have, and why. Every other edge of every machine must be taken by a
 * campaign (random cases, plus the directed cases of tests/fixtures/directed):
 * tests/verify-coverage.test.ts checks it, and `npm run verify` reports what is missing.
 * Edges are named as the DST checker names transitions ("machine: from -EVENT-> to").
 */

/**
 * Edges a definition has that the simulation cannot take, with the reason. Empty: every edge
 * the definitions keep is taken, by random cases or a directed one.
 */
export const UNREACHABLE: Readonly<Record<string, string>> = {};

/**
 * Edges taken out of the definitions because no host and no core path can take them (a
 * move() along one would now throw, and the DST checker reports one in a log as
 * `legal-transition`). Kept here so the reasons stay with the code, and checked to stay out.
 */
export const REMOVED: Readonly<Record<string, string>> = {
  "worker: running -PAUSE-> paused":
    "natsched never pauses a worker: no host feeds a pause (Dask pauses on memory pressure, distributed.worker.memory.pause; natsched has no memory monitor), and the scheduler has no paused state to leave placement for",
  "worker: paused -RESUME-> running": "no paused state (see running -PAUSE->)",
  "worker: paused -CLOSE-> closing": "no paused state (see running -PAUSE->)",
  "worker: paused -CLOSED-> closed": "no paused state (see running -PAUSE->)",
  "worker: starting -CLOSED-> closed":
    "the scheduler creates and starts a worker's record in the one input that registers it, so it is never starting between inputs; a worker core never takes CLOSED (its host stops it)",
  "scheduler: starting -CLOSE-> closing": "every host starts its scheduler as it creates it (LocalCluster.start, SchedulerProcess.start, the simulator); none closes one it did not start",
  "task: erred -FORGET-> forgotten": "SchedulerCore.forget releases an erred task first (freeing the failure on its worker, freeErred), then forgets it from released",
  "task: memory -FINISH-> memory": "a result reported for a task already in memory only adds a replica (SchedulerCore.taskFinished), with no transition",
  "task: queued -NO_WORKER-> no-worker":
    "a queued task is root-ish, so unrestricted, and is placed again only when some running worker has a free slot (queueSlotsMaybeOpened), where an unrestricted task always finds a worker",
  "task: queued -ERR-> erred":
    "a queued task waits on nothing: all its inputs were in memory when it was queued, and they stay there while it waits (it holds them as a waiter; losing one releases it first, dataLost); it runs nowhere, so it can neither fail nor be blamed",
  "wtask: waiting -FAIL-> error": "a worker only reports a failure of an execution (execute-failed), and only executing, cancelled or resumed tasks execute",
};
