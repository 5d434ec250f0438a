/**
 * A what-if run (what-if-handler.ts's whatIfStreams) on a thread of its own: the simulation
 * of a large log takes as long as `natsched what-if` does (about a minute for 110,000 tasks),
 * and the dashboard's thread goes on answering meanwhile. workerData: { settings, path } (a
 * log file, which the thread reads itself) or { settings, records } (a live or JetStream
 * source's records, copied over); posts { answer } or { error, code? }.
 */
import { parentPort, workerData } from "node:worker_threads";
import { openLog } from "../../log/reader.js";
import type { LogRecord } from "../../log/types.js";
import { whatIfStreams, type WhatIfSettings } from "./what-if-handler.js";

interface Job {
  settings: WhatIfSettings;
  path?: string;
  records?: LogRecord[];
}

async function main(): Promise<void> {
  const job = workerData as Job;
  const records = job.records ?? (await (await openLog(job.path!)).readAll()).records;
  parentPort!.postMessage({ answer: whatIfStreams(records, job.settings) });
}

main().catch((error: unknown) => {
  const code = (error as { code?: unknown })?.code;
  parentPort!.postMessage({ error: (error as Error)?.message ?? String(error), ...(typeof code === "string" ? { code } : {}) });
});
