import { BadOptionError, LogIndexError } from "../machines/errors.js";
import { buildLogIndex, indexPathOf } from "../log/log-index-build.js";
import { LogIndex } from "../log/log-index.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

export const USAGE = `usage: natsched log index <log> [--check]
  builds the index next to a log file (<log>.idx): where each key's records are, where each
  record and time is, and snapshots of the state counts, so inspect, story and export seek
  instead of reading the whole log (they build it themselves on first use)
  --check   only check the index: that it matches the log and every part of it checks (exit 1 if not)`;

/** `natsched log index`: build (or check) a log file's index. */
export async function logIndexCommand(args: string[], io: Io): Promise<number> {
  let parsed;
  try {
    parsed = parseFlags(args, { check: { type: "boolean" }, help: { type: "boolean", short: "h" } }, true);
    if (parsed.values.help) {
      io.out(USAGE);
      return 0;
    }
    if (parsed.positionals.length !== 1) throw new BadOptionError("log", "give exactly one log file");
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched log index: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const path = parsed.positionals[0]!;
  if (parsed.values.check) {
    try {
      const index = await LogIndex.open(path);
      await index.verify();
      await index.close();
    } catch (error) {
      if (!(error instanceof LogIndexError) && (error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      io.err(`natsched log index: ${(error as Error).message}`);
      return 1;
    }
    io.out(`${indexPathOf(path)}: matches ${path}, every part checks`);
    return 0;
  }
  try {
    const stats = await buildLogIndex(path);
    io.out(`${indexPathOf(path)}: ${stats.records} records in ${stats.blocks} blocks, ${stats.keyEntries} key entries, ${stats.snapshots} snapshots, ${stats.bytes} bytes, built in ${stats.seconds.toFixed(1)} s`);
    return 0;
  } catch (error) {
    if (!(error instanceof LogIndexError)) throw error;
    io.err(`natsched log index: ${error.message}`);
    return 1;
  }
}
