import { packageVersion } from "../log/package-version.js";
import { BadOptionError, NatschedError } from "../machines/errors.js";
import { redactUrls } from "../transport/nats-connect.js";
import { dashboardCommand, DASHBOARD_USAGE } from "./dashboard.js";
import { exportCommand, USAGE as EXPORT_USAGE } from "./export.js";
import { storyCommand, USAGE as STORY_USAGE } from "./story.js";
import { inspectCommand, USAGE as INSPECT_USAGE } from "./inspect.js";
import { logInfoCommand, USAGE as LOG_USAGE } from "./log-info.js";
import { LOG_EXPORT_USAGE, logExportCommand } from "./log-export.js";
import { replayCommand, USAGE as REPLAY_USAGE } from "./replay.js";
import { keysCommand, USAGE as KEYS_USAGE } from "./keys.js";
import { logIndexCommand, USAGE as LOG_INDEX_USAGE } from "./log-index.js";
import { schedulerCommand } from "./scheduler.js";
import { secretArgsWarning, secretsInArgs } from "./secret-args.js";
import { simulateCommand } from "./simulate.js";
import { statusCommand } from "./status.js";
import { whatIfCommand } from "./what-if.js";
import { workerCommand } from "./worker.js";

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

const USAGE = `usage: natsched <command> [args]

commands:
  story <log> <key>        a task's life across the scheduler and workers, with the reasons
                           (a key prefix will do when one key starts with it)
  keys <log> [--prefix <p>] [--state <state>] [--at <cut>] [--limit <n>]
                           the task keys, with each one's state, worker and function
  log <log>                summary of an event log: actors, records, problems
  log export <from> <to>   copy a log between a file and JetStream (either way)
  export <log> --around <key|time> [--out slice.natlog]
                           a slice of the log that replays on its own, for a bug report
  export <log> --format trace [--out run.trace.json]
                           the task stream as Chrome Trace Event JSON, for Perfetto
  replay <log> [--until <cut>] [--actor <name>] [--state]
                           re-run the log through the machines and check every transition
  inspect <log> [--at <cut>] [--key <key>]
                           the cluster at one point of a log: workers running or stopped (and
                           why), executing keys, occupancy, queues, steals in flight
  a <cut> is seq | actor:seq | time | +seconds from the run's start, the same for every command
  dashboard <log>          the run in the browser: task stream, progress, workers, a time
                           scrubber and each task's story (--help for live clusters)
  simulate <scenario>      run a scenario on the simulator (virtual clock; --help for options)
  what-if <log> [--set key=value ...] [--scenario out.json]
                           re-run a log's workload on the simulator, recorded vs changed config
  scheduler                run a cluster's scheduler on NATS (--help for options)
  worker                   run a worker on NATS (--help for options)
  status                   workers, their load and tasks of a cluster on NATS
  help                     this text
  --version                natsched's version`;

type Command = (args: string[], io: Io) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  story: storyCommand,
  log: (args, io) => (args[0] === "export" ? logExportCommand(args.slice(1), io) : args[0] === "index" ? logIndexCommand(args.slice(1), io) : logInfoCommand(args, io)),
  export: exportCommand,
  dashboard: (args, io) => dashboardCommand(args, io),
  replay: replayCommand,
  inspect: inspectCommand,
  keys: keysCommand,
  simulate: simulateCommand,
  "what-if": whatIfCommand,
  scheduler: schedulerCommand,
  worker: workerCommand,
  status: statusCommand,
};

/**
 * The usage of commands whose flag parsing does not answer --help itself; the others
 * (simulate, what-if, scheduler, worker, status, log export) print their own.
 */
const USAGES: Record<string, (args: string[]) => string | undefined> = {
  story: () => STORY_USAGE,
  export: () => EXPORT_USAGE,
  dashboard: () => DASHBOARD_USAGE,
  inspect: () => INSPECT_USAGE,
  keys: () => KEYS_USAGE,
  replay: () => REPLAY_USAGE,
  log: (args) => (args[0] === "export" ? LOG_EXPORT_USAGE : args[0] === "index" ? LOG_INDEX_USAGE : LOG_USAGE),
};

/** --help or -h among a command's flags (not after `--`, where it would be a value). */
function asksForHelp(args: string[]): boolean {
  const end = args.indexOf("--");
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

export async function runCli(argv: string[], rawIo: Io): Promise<number> {
  // Nothing the CLI prints shows a password or token written in a URL (nats://alice:***@host).
  const io: Io = { out: (text) => rawIo.out(redactUrls(text)), err: (text) => rawIo.err(redactUrls(text)) };
  const [name, ...args] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    io.out(USAGE);
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-V" || name === "version") {
    io.out(packageVersion());
    return 0;
  }
  const command = COMMANDS[name];
  if (command === undefined) {
    io.err(`natsched: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  const usage = asksForHelp(args) ? USAGES[name]?.(args) : undefined;
  if (usage !== undefined) {
    io.out(usage);
    return 0;
  }
  const secrets = secretsInArgs(args);
  if (secrets.length > 0) io.err(`natsched ${name}: warning: ${secretArgsWarning(secrets)}`);
  try {
    return await command(args, io);
  } catch (error) {
    // A flag the parser refuses (unknown, missing its value) is bad usage, exit 2, whichever
    // command parsed it; a flag's value the command refuses stays the command's to judge.
    if (error instanceof BadOptionError && error.option === "arguments") {
      io.err(`natsched ${name}: ${error.message} (natsched ${name} --help)`);
      return 2;
    }
    if (error instanceof NatschedError) {
      io.err(`natsched ${name}: ${error.message}`);
      return 1;
    }
    const e = error as NodeJS.ErrnoException;
    if (e?.code === "ENOENT") {
      io.err(`natsched ${name}: no such file: ${e.path ?? ""}`);
      return 1;
    }
    throw error;
  }
}
