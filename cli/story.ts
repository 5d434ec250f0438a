import { BadOptionError } from "../machines/errors.js";
import { openLogAt } from "../log/jetstream-open.js";
import type { LogReader } from "../log/reader.js";
import type { ReasonContext } from "../tools/story-reasons.js";
import { formatStory, storyLines } from "../tools/story.js";
import { addCauses } from "../tools/story-causes.js";
import type { LogRecord } from "../log/types.js";
import { LOG_NATS_USAGE, NATS_AUTH_FLAGS, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

const USAGE = `usage: natsched story <log> <key> [--json]     (a log: a file, or nats://host:port/<cluster>)
  a task's life across the scheduler and workers, with the reasons of each decision
  --json   print the story lines (with the recorded reasons) as JSON
${LOG_NATS_USAGE}`;

export async function storyCommand(args: string[], io: Io): Promise<number> {
  let parsed;
  try {
    parsed = parseFlags(args, { ...NATS_AUTH_FLAGS, json: { type: "boolean" } }, true);
    if (parsed.positionals.length !== 2) throw new BadOptionError("arguments", "give a log file and a task key");
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched story: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const [path, key] = parsed.positionals as [string, string];
  const reader = await openLogAt(path, natsOptions(parsed.values));
  const ctx = await reasonContext(reader);
  const records: LogRecord[] = [];
  for await (const record of reader.records({ key })) records.push(record);
  for (const problem of reader.problems) io.err(`warning: ${problem.kind}: ${problem.message}`);
  const lines = await addCauses(storyLines(records, key, ctx), records, key, reader);
  if (lines.length === 0) {
    io.err(`no record of ${key} in ${path}`);
    return 1;
  }
  if (parsed.values.json) {
    io.out(JSON.stringify({ key, bandwidth: ctx.bandwidth ?? null, lines }, null, 2));
    return 0;
  }
  io.out(`story of ${key} (${lines.length} events)`);
  io.out(formatStory(lines));
  return 0;
}

/** The scheduler's bandwidth estimate, from its start record (near the top of a log: the read stops there). */
async function reasonContext(reader: LogReader): Promise<ReasonContext> {
  for await (const record of reader.records({ actor: "scheduler", kinds: ["start"] })) {
    if (record.kind !== "start") continue;
    const bandwidth = (record.init.config as { bandwidth?: unknown } | undefined)?.bandwidth;
    return typeof bandwidth === "number" ? { bandwidth } : {};
  }
  return {};
}
