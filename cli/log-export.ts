import { BadOptionError } from "../machines/errors.js";
import type { LogFileFormat } from "../log/file-log.js";
import { exportLog } from "../tools/jetstream-export.js";
import { LOG_NATS_USAGE, NATS_AUTH_FLAGS, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

export const LOG_EXPORT_USAGE = `usage: natsched log export <from> <to> [--force] [--replicas <n>] [--format binary|jsonl]
  copies an event log between a file and JetStream (either way, or file to file); a log is a
  file path or nats://[user:pass@]host:port/<cluster> (the NATS options below apply to both ends)
  --force          overwrite a target file that exists
  --replicas <n>   replicas of the target stream when it is created (default 1)
  --format <f>     a file target's format: binary (frames) or jsonl (a JSON line per record);
                   default the source file's, jsonl from JetStream
Into JetStream the cluster's log must be empty.
${LOG_NATS_USAGE}`;

/** `natsched log export`: exit 0 once copied (1 if the source had problems: those records were skipped). */
export async function logExportCommand(args: string[], io: Io): Promise<number> {
  let parsed;
  try {
    parsed = parseFlags(args, { ...NATS_AUTH_FLAGS, force: { type: "boolean" }, replicas: { type: "string" }, format: { type: "string" }, help: { type: "boolean", short: "h" } }, true);
    if (parsed.values.help) {
      io.out(LOG_EXPORT_USAGE);
      return 0;
    }
    if (parsed.positionals.length !== 2) throw new BadOptionError("arguments", "give the log to copy and where to copy it");
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched log export: ${error.message}\n\n${LOG_EXPORT_USAGE}`);
    return 2;
  }
  const [from, to] = parsed.positionals as [string, string];
  const replicas = parsed.values.replicas === undefined ? undefined : Number(parsed.values.replicas);
  if (replicas !== undefined && !Number.isSafeInteger(replicas)) throw new BadOptionError("--replicas", `a whole number, got ${JSON.stringify(parsed.values.replicas)}`);
  const report = await exportLog(from, to, {
    ...(parsed.values.force ? { force: true } : {}),
    ...(replicas !== undefined ? { replicas } : {}),
    ...(parsed.values.format !== undefined ? { format: parsed.values.format as LogFileFormat } : {}),
    connect: natsOptions(parsed.values),
  });
  for (const p of report.problems) io.err(`warning: ${p.kind}: ${p.message} (not copied)`);
  io.out(`copied ${report.records} records of ${report.actors.length} actor(s) from ${report.from} to ${report.to}`);
  return report.problems.length === 0 ? 0 : 1;
}
