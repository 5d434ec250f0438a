import type { ClientInit } from "../../machines/client/inputs.js";

/** A client core's init for tests: client "c" of cluster "lab", short timeouts. */
export const CLIENT_INIT: ClientInit = {
  id: "c",
  cluster: "lab",
  opsSubject: "natsched.lab.scheduler.client.c",
  requestTimeout: 1000,
  resumeWait: 10_000,
  heartbeatEvery: 500,
  resumingEvery: 250,
  resumingMissed: 4,
};
