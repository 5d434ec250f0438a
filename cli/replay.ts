import { BadOptionError } from "../machines/errors.js";
import { hashFunctions } from "../actors/function-hashes.js";
import { formatBuildDifferences } from "../replay/build-differences.js";
import { openLogAt } from "../log/jetstream-open.js";
import { readTimeBase } from "../log/time-base.js";
import { parseCut } from "../replay/log-cut.js";
import { replayAt } from "../replay/replay-at.js";
import { divergences, formatDivergence, formatProblems, formatState, formatSummary } from "../replay/replay-format.js";
import type { ReplayOptions } from "../replay/replay-types.js";
import type { NatsConnectOptions } from "../transport/nats-connect.js";
import { LOG_NATS_USAGE, NATS_AUTH_FLAGS, natsOptions } from "./nats-flags.js";
import type { Io } from "./run.js";

export const USAGE = `usage: natsched replay <log> [--until <seq|actor:seq|time|+seconds>] [--actor <name>] [--state] [--json]
  <log>              a log file, or a cluster's log in JetStream: nats://host:port/<cluster>
  --until 1234       stop after the record #1234 of --actor (default: the scheduler)
  --until worker.a:40  stop after worker.a's record #40
  --until 1763785.5  stop at this time (seconds, as in the log's "t"; a number with a ".")
  --until +2.5       stop 2.5 seconds after the run's start (the log's first record)
                     (the same cut as natsched inspect --at)
  --actor <name>     replay only this actor ("scheduler", "worker.<name>")
  --state            print the cluster state at --until (or at the end)
  --json             print the whole result as JSON
  --functions <module>
                     the task functions this build would run (a module, as natsched worker
                     takes it): those whose code differs from the log header's hashes are
                     named in the warning about a differing build (never a failure)
  --open-ok          accept an open log: one still being written, whose actors have not all
                     written their stop record (without it, each is an "open" problem and the
                     exit is 1: the writer crashed, was killed, or is still writing).
                     A nats:// log is accepted open without the flag (a live cluster writes it)
${LOG_NATS_USAGE}`;

/** `natsched replay`: exit 0 if every transition was reproduced from a complete log, 1 otherwise. */
export async function replayCommand(args: string[], io: Io): Promise<number> {
  let parsed: { path: string; options: ReplayOptions; state: boolean; json: boolean; connect: NatsConnectOptions; functions?: string };
  try {
    parsed = parseArgs(args);
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched replay: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  let options = parsed.options;
  if (parsed.functions !== undefined) {
    try {
      options = { ...options, functions: await hashFunctions(parsed.functions) };
    } catch (error) {
      if (!(error instanceof BadOptionError)) throw error;
      io.err(`natsched replay: ${error.message}`);
      return 2;
    }
  }
  const result = await replayAt(parsed.path, options, parsed.connect);
  if (parsed.json) {
    io.out(JSON.stringify(result, null, 2));
    return result.ok ? 0 : 1;
  }
  io.out(formatSummary(result, parsed.path));
  if (result.buildDifferences !== undefined && result.buildDifferences.length > 0) io.err(formatBuildDifferences(result.buildDifferences));
  const problems = formatProblems(result);
  if (problems) io.err(problems);
  for (const divergence of divergences(result)) io.err(formatDivergence(divergence));
  if (parsed.state) io.out(formatState(result.state, await readTimeBase(await openLogAt(parsed.path, parsed.connect))));
  return result.ok ? 0 : 1;
}

function parseArgs(args: string[]): { path: string; options: ReplayOptions; state: boolean; json: boolean; connect: NatsConnectOptions; functions?: string } {
  const options: ReplayOptions = {};
  const auth: Record<string, string | boolean> = {};
  let path: string | undefined;
  let state = false;
  let json = false;
  let functions: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const value = (): string => {
      const next = args[++i];
      if (next === undefined) throw new BadOptionError(arg, `${arg} needs a value`);
      return next;
    };
    if (arg === "--until") Object.assign(options, parseUntil(value()));
    else if (arg === "--actor") options.actor = value();
    else if (arg === "--state") state = true;
    else if (arg === "--json") json = true;
    else if (arg === "--open-ok") options.openOk = true;
    else if (arg === "--functions") functions = value();
    else if (arg.startsWith("--") && Object.prototype.hasOwnProperty.call(NATS_AUTH_FLAGS, arg.slice(2))) {
      const flag = arg.slice(2) as keyof typeof NATS_AUTH_FLAGS;
      auth[flag] = NATS_AUTH_FLAGS[flag].type === "boolean" ? true : value();
    }
    else if (arg.startsWith("-")) throw new BadOptionError(arg, `unknown option ${arg}`);
    else if (path === undefined) path = arg;
    else throw new BadOptionError(arg, `unexpected argument ${arg}`);
  }
  if (path === undefined) throw new BadOptionError("log", "which log? (a path)");
  return { path, options, state, json, connect: natsOptions(auth), ...(functions !== undefined ? { functions } : {}) };
}

function parseUntil(text: string): Pick<ReplayOptions, "until" | "untilKind" | "untilActor"> {
  const cut = parseCut(text, "--until");
  return { until: cut.value, untilKind: cut.kind, ...(cut.actor !== undefined ? { untilActor: cut.actor } : {}) };
}
