import { basename, dirname, join } from "node:path";
import { BadOptionError } from "../machines/errors.js";
import { exportSlice } from "../tools/export.js";
import { exportTrace } from "../tools/export-trace.js";
import { TimeBase } from "../log/time-base.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

export const USAGE = `usage: natsched export <log> --around <key|time> [--out slice.natlog] [--json]
       natsched export <log> --format trace [--out run.trace.json] [--json]
  writes a slice of the log that replays on its own (natsched replay slice.natlog), to attach to a bug report
  --format trace          instead, the task stream as Chrome Trace Event JSON (open it in ui.perfetto.dev):
                          a process per worker, a thread per executor lane, flows for transfers and steals
  --around <key>          the actors that touched the key, each up to its last record of the key
  --around 1763785200.25  every actor up to that time (seconds, as in the log's "t")
  --around +2.5           every actor up to 2.5 seconds after the run's start (the log's first record)
  --out <path>            where to write it (default: <log>.slice.natlog next to the log)
  --json                  print the report as JSON`;

/** `natsched export`: exit 0 once the slice is written, 1 if the log has no such key or time, 2 on bad usage. */
export async function exportCommand(args: string[], io: Io): Promise<number> {
  let parsed;
  try {
    parsed = parseFlags(args, { around: { type: "string" }, out: { type: "string" }, json: { type: "boolean" }, format: { type: "string" } }, true);
    if (parsed.positionals.length !== 1) throw new BadOptionError("log", "give exactly one log file");
    const format = parsed.values.format;
    if (format !== undefined && format !== "trace" && format !== "slice") throw new BadOptionError("--format", `expected trace or slice, got ${format}`);
    if (format === "trace" && parsed.values.around !== undefined) throw new BadOptionError("--around", "a trace covers the whole log: give --around only for a slice");
    if (format !== "trace" && parsed.values.around === undefined) throw new BadOptionError("--around", "give --around <key|time>");
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched export: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const path = parsed.positionals[0]!;
  if (parsed.values.format === "trace") return traceCommand(path, parsed.values.out, parsed.values.json === true, io);
  const out = parsed.values.out ?? join(dirname(path), `${basename(path).replace(/\.natlog$/, "")}.slice.natlog`);
  if (out === path) throw new BadOptionError("--out", "the slice would overwrite the log it is cut from");
  const report = await exportSlice(path, parsed.values.around!, out, { note: (message) => io.err(message) });
  const time = TimeBase.of(report.runStart, report.created);
  for (const problem of report.problems) io.err(`warning: the original log has a problem (it may carry over): ${problem.kind}: ${problem.message}`);
  if (parsed.values.json) {
    io.out(JSON.stringify(report, null, 2));
    return 0;
  }
  const what = "key" in report.around ? `key ${report.around.key}` : `time ${time.at(report.around.time, 3)} from the run's start (t=${report.around.time})`;
  const share = report.totalRecords > 0 ? ` (${((100 * report.records) / report.totalRecords).toFixed(1)}%)` : "";
  io.out(`wrote ${out}: ${report.records} of ${report.totalRecords} records${share}, around ${what}`);
  if (report.start !== undefined) io.out(`  from the snapshot at record ${report.start}: ${report.fromSnapshot!.join(", ") || "no actor"} restored there`);
  const width = Math.max(...report.actors.map((a) => a.actor.length));
  for (const a of report.actors) io.out(`  ${a.actor.padEnd(width)}  ${String(a.kept).padStart(8)} of ${String(a.total).padStart(8)} records, up to #${a.lastSeq}`);
  if (report.dropped.length > 0) io.out(`  left out (never touched it${"time" in report.around ? ", or started later" : ""}${report.start !== undefined ? ", or stopped before the snapshot" : ""}): ${report.dropped.join(", ")}`);
  io.out(`check it: natsched replay ${out}`);
  return 0;
}

async function traceCommand(path: string, out: string | undefined, json: boolean, io: Io): Promise<number> {
  const target = out ?? join(dirname(path), `${basename(path).replace(/\.natlog$/, "")}.trace.json`);
  if (target === path) throw new BadOptionError("--out", "the trace would overwrite the log it is read from");
  const report = await exportTrace(path, target);
  for (const problem of report.problems) io.err(`warning: the log has a problem: ${problem.kind}: ${problem.message}`);
  if (json) {
    io.out(JSON.stringify(report, null, 2));
    return 0;
  }
  io.out(`wrote ${target}: ${report.executions} executions on ${report.workers} workers, ${report.transfers} transfers, ${report.steals} steals, ${report.deaths} deaths (${report.events} trace events)`);
  io.out(`open it in https://ui.perfetto.dev (or chrome://tracing)`);
  return 0;
}
