/** `natsched export --format trace`: a log's task stream as a Chrome Trace Event file (tools/trace-events.ts). */
import { writeFile } from "node:fs/promises";
import { openLog } from "../log/reader.js";
import type { LogProblem } from "../log/types.js";
import { TaskStreamBuilder } from "./task-stream.js";
import { traceEventsOf } from "./trace-events.js";

export interface TraceReport {
  out: string;
  executions: number;
  transfers: number;
  steals: number;
  deaths: number;
  workers: number;
  events: number;
  problems: LogProblem[];
}

export async function exportTrace(path: string, out: string): Promise<TraceReport> {
  const reader = await openLog(path);
  const builder = new TaskStreamBuilder();
  for await (const record of reader.records()) builder.add(record);
  const stream = builder.snapshot();
  const trace = traceEventsOf(stream, { log: path, created: new Date(reader.header.created).toISOString() });
  await writeFile(out, JSON.stringify(trace));
  return {
    out,
    executions: stream.bars.length,
    transfers: stream.transfers.length,
    steals: stream.steals.length,
    deaths: stream.deaths.length,
    workers: stream.workers.length,
    events: trace.traceEvents.length,
    problems: [...reader.problems],
  };
}
