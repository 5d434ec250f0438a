import type { LogReader } from "../log/reader.js";
import { formatHostMetrics, hostMetricsRows } from "../tools/host-metrics.js";
import type { LogRecord } from "../log/types.js";
import type { Io } from "./run.js";

/** `natsched log <log> --metrics`: the workers' memory and event-loop delay, as the scheduler recorded them. */
export async function printHostMetrics(reader: Pick<LogReader, "records" | "problems">, json: boolean, io: Io): Promise<number> {
  let t0: number | undefined;
  const inputs: LogRecord[] = [];
  for await (const r of reader.records()) {
    t0 ??= r.t;
    if (r.kind === "input" && r.event.op === "host-metrics") inputs.push(r);
  }
  for (const problem of reader.problems) io.err(`warning: ${problem.kind}: ${problem.message}`);
  const rows = hostMetricsRows(inputs);
  io.out(json ? JSON.stringify(rows, null, 2) : formatHostMetrics(rows, t0 ?? 0));
  return 0;
}
