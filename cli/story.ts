import { openLog } from "../replay/reader.js";
import { formatStory, storyLines } from "../replay/story.js";
import type { LogRecord } from "../replay/types.js";
import type { Io } from "./run.js";

export async function storyCommand(args: string[], io: Io): Promise<number> {
  const [path, key] = args;
  if (path === undefined || key === undefined) {
    io.err("usage: natsched story <log> <key>");
    return 2;
  }
  const reader = await openLog(path);
  const records: LogRecord[] = [];
  for await (const record of reader.records({ key })) records.push(record);
  for (const problem of reader.problems) io.err(`warning: ${problem.kind}: ${problem.message}`);
  const lines = storyLines(records, key);
  if (lines.length === 0) {
    io.err(`no record of ${key} in ${path}`);
    return 1;
  }
  io.out(`story of ${key} (${lines.length} events)`);
  io.out(formatStory(lines));
  return 0;
}
