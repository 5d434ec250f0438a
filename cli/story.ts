import { BadOptionError } from "../machines/errors.js";
import { indexOnDemand } from "../log/index-on-demand.js";
import { isJetStreamLocation, openLogAt } from "../log/jetstream-open.js";
import type { LogReader } from "../log/reader.js";
import type { ReasonContext } from "../tools/story-reasons.js";
import { resolveKey } from "../tools/keys.js";
import { taskKeys } from "../tools/task-keys.js";
import { formatStory, storyLines, type StoryLine } from "../tools/story.js";
import { readTimeBase } from "../log/time-base.js";
import type { LogProblem, LogRecord } from "../log/types.js";
import { addCauses, type InputFinder, type RecordSource } from "../tools/story-causes.js";
import { IndexInputFinder } from "../tools/index-inputs.js";
import type { LogIndex } from "../log/log-index.js";
import { LOG_NATS_USAGE, NATS_AUTH_FLAGS, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

export const USAGE = `usage: natsched story <log> <key> [--json]     (a log: a file, or nats://host:port/<cluster>)
  a task's life across the scheduler and workers, with the reasons of each decision;
  times are seconds from the run's start, the same in every story
  <key>    the key, or the start of it when only one key starts so (natsched keys lists them)
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
  const [path, given] = parsed.positionals as [string, string];
  const reader = await openLogAt(path, natsOptions(parsed.values));
  const time = await readTimeBase(reader);
  const ctx = await reasonContext(reader);
  const index = isJetStreamLocation(path) ? undefined : await indexOnDemand(path, (note) => io.err(note));
  let lines;
  let key = given;
  try {
    let found = await keyRecords(index, reader, key);
    if (found.records.length === 0) {
      key = resolveKey(await taskKeys(reader), given, path);
      found = await keyRecords(index, reader, key);
    }
    for (const problem of found.problems) io.err(`warning: ${problem.kind}: ${problem.message}`);
    lines = await addCauses(storyLines(found.records, key, ctx), found.records, key, found.inputs);
  } finally {
    await index?.close();
  }
  if (lines.length === 0) {
    io.err(`no record of ${key} in ${path}`);
    return 1;
  }
  if (parsed.values.json) {
    const start = { start: time.start, ...(time.iso ? { startIso: time.iso } : {}) };
    io.out(JSON.stringify({ key, ...start, bandwidth: ctx.bandwidth ?? null, lines: lines.map((l) => ({ ...l, since: time.since(l.t) })) }, null, 2));
    return 0;
  }
  io.out(`story of ${key} (${lines.length} events)`);
  io.out(time.describe());
  io.out(formatStory(lines, time.start));
  return 0;
}

/** The records naming `key`, in log order, and where their causes' inputs are found: through the log file's index (built on first use), or by reading the whole log. */
async function keyRecords(index: LogIndex | undefined, reader: LogReader, key: string): Promise<{ records: LogRecord[]; problems: readonly LogProblem[]; inputs: RecordSource | InputFinder }> {
  if (index !== undefined) {
    const found = await index.keyRecords(key);
    return { records: found.map((r) => r.record), problems: index.problems, inputs: new IndexInputFinder(index, found) };
  }
  const records: LogRecord[] = [];
  for await (const record of reader.records({ key })) records.push(record);
  return { records, problems: reader.problems, inputs: reader };
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
