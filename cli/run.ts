import { packageVersion } from "../log/package-version.js";
import { BadOptionError, NatschedError } from "../machines/errors.js";
import { redactUrls } from "../transport/url-credentials.js";
import { secretArgsWarning, secretsInArgs } from "./secret-args.js";

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

// Each command's module is imported when that command runs (or its --help is asked), so a
// command loads only what it needs: `inspect` does not load NATS, the simulator or the
// dashboard server, and the CLI's start stays short (docs/performance.md, "The CLI's start").
const COMMANDS: Record<string, () => Promise<Command>> = {
  story: async () => (await import("./story.js")).storyCommand,
  log: async () => logCommand,
  export: async () => (await import("./export.js")).exportCommand,
  dashboard: async () => {
    const { dashboardCommand } = await import("./dashboard.js");
    return (args, io) => dashboardCommand(args, io);
  },
  replay: async () => (await import("./replay.js")).replayCommand,
  inspect: async () => (await import("./inspect.js")).inspectCommand,
  keys: async () => (await import("./keys.js")).keysCommand,
  simulate: async () => (await import("./simulate.js")).simulateCommand,
  "what-if": async () => (await import("./what-if.js")).whatIfCommand,
  scheduler: async () => (await import("./scheduler.js")).schedulerCommand,
  worker: async () => (await import("./worker.js")).workerCommand,
  status: async () => (await import("./status.js")).statusCommand,
};

async function logCommand(args: string[], io: Io): Promise<number> {
  if (args[0] === "export") return (await import("./log-export.js")).logExportCommand(args.slice(1), io);
  if (args[0] === "index") return (await import("./log-index.js")).logIndexCommand(args.slice(1), io);
  return (await import("./log-info.js")).logInfoCommand(args, io);
}

/**
 * The usage of commands whose flag parsing does not answer --help itself; the others
 * (simulate, what-if, scheduler, worker, status, log export) print their own.
 */
const USAGES: Record<string, (args: string[]) => Promise<string>> = {
  story: async () => (await import("./story.js")).USAGE,
  export: async () => (await import("./export.js")).USAGE,
  dashboard: async () => (await import("./dashboard.js")).DASHBOARD_USAGE,
  inspect: async () => (await import("./inspect.js")).USAGE,
  keys: async () => (await import("./keys.js")).USAGE,
  replay: async () => (await import("./replay.js")).USAGE,
  log: async (args) =>
    args[0] === "export" ? (await import("./log-export.js")).LOG_EXPORT_USAGE : args[0] === "index" ? (await import("./log-index.js")).USAGE : (await import("./log-info.js")).USAGE,
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
  const load = COMMANDS[name];
  if (load === undefined) {
    io.err(`natsched: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  const usage = asksForHelp(args) ? await USAGES[name]?.(args) : undefined;
  if (usage !== undefined) {
    io.out(usage);
    return 0;
  }
  const secrets = secretsInArgs(args);
  if (secrets.length > 0) io.err(`natsched ${name}: warning: ${secretArgsWarning(secrets)}`);
  try {
    const command = await load();
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
