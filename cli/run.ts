import { NatschedError } from "../machines/errors.js";
import { redactUrls } from "../transport/nats-connect.js";
import { exportCommand } from "./export.js";
import { storyCommand } from "./story.js";
import { inspectCommand } from "./inspect.js";
import { logInfoCommand } from "./log-info.js";
import { logExportCommand } from "./log-export.js";
import { logIndexCommand } from "./log-index.js";
import { replayCommand } from "./replay.js";
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
  log <log>                summary of an event log: actors, records, problems
  log export <from> <to>   copy a log between a file and JetStream (either way)
  export <log> --around <key|time> [--out slice.natlog]
                           a slice of the log that replays on its own, for a bug report
  replay <log> [--until <seq|time|+s>] [--actor <name>] [--state]
                           re-run the log through the machines and check every transition
  inspect <log> [--at <n|+s|actor:seq>] [--key <key>]
                           every machine's state at one point of a log (steps back and forth)
  simulate <scenario>      run a scenario on the simulator (virtual clock; --help for options)
  what-if <log> [--set key=value ...] [--scenario out.json]
                           re-run a log's workload on the simulator, recorded vs changed config
  scheduler                run a cluster's scheduler on NATS (--help for options)
  worker                   run a worker on NATS (--help for options)
  status                   workers, their load and tasks of a cluster on NATS
  help                     this text`;

type Command = (args: string[], io: Io) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  story: storyCommand,
  log: (args, io) => (args[0] === "export" ? logExportCommand(args.slice(1), io) : args[0] === "index" ? logIndexCommand(args.slice(1), io) : logInfoCommand(args, io)),
  export: exportCommand,
  replay: replayCommand,
  inspect: inspectCommand,
  simulate: simulateCommand,
  "what-if": whatIfCommand,
  scheduler: schedulerCommand,
  worker: workerCommand,
  status: statusCommand,
};

export async function runCli(argv: string[], rawIo: Io): Promise<number> {
  // Nothing the CLI prints shows a password or token written in a URL (nats://alice:***@host).
  const io: Io = { out: (text) => rawIo.out(redactUrls(text)), err: (text) => rawIo.err(redactUrls(text)) };
  const [name, ...args] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    io.out(USAGE);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (command === undefined) {
    io.err(`natsched: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  const secrets = secretsInArgs(args);
  if (secrets.length > 0) io.err(`natsched ${name}: warning: ${secretArgsWarning(secrets)}`);
  try {
    return await command(args, io);
  } catch (error) {
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
