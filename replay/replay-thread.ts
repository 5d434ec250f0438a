/**
 * A replay thread (see replay-parallel.ts): replays the parts of logs it is given and
 * answers with their outcomes, until the process ends.
 */
import { parentPort } from "node:worker_threads";
import { replayPart } from "./replay-parallel.js";

const port = parentPort;
if (port !== null) {
  port.on("message", (job: { id: number; path: string; part: number; parts: number }) => {
    replayPart(job.path, job.part, job.parts).then(
      (outcome) => port.postMessage({ id: job.id, outcome }),
      (error: unknown) => port.postMessage({ id: job.id, error: String((error as Error)?.message ?? error) }),
    );
  });
}
