import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { untilShutdown } from "../actors/process/shutdown.js";
import { clusterName, NATS_FLAGS, NATS_FLAGS_USAGE, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

export const SCHEDULER_USAGE = `usage: natsched scheduler [--nats <url>] [--cluster <name>] [--log <path> | --no-log] [--config <file>]

Runs the cluster's scheduler until SIGINT/SIGTERM, then flushes its event log.
  --log <path>             event log file (default: a new file in the temp dir)
  --no-log                 no event log
  --config <file>          config file (default: natsched.config.json/.yaml in the cwd)
${NATS_FLAGS_USAGE}`;

export async function schedulerCommand(args: string[], io: Io): Promise<number> {
  const { values } = parseFlags(args, { ...NATS_FLAGS, log: { type: "string" }, "no-log": { type: "boolean" }, config: { type: "string" }, help: { type: "boolean", short: "h" } });
  if (values.help) {
    io.out(SCHEDULER_USAGE);
    return 0;
  }
  const cluster = clusterName(values);
  const scheduler = await SchedulerProcess.start({
    nats: { ...natsOptions(values), waitForServer: true },
    cluster,
    log: values["no-log"] ? false : (values.log ?? undefined),
    ...(values.config !== undefined ? { configFile: values.config } : {}),
    onError: (error) => io.err(`natsched scheduler: ${(error as Error)?.message ?? String(error)}`),
  });
  io.out(`natsched scheduler: cluster ${cluster} on ${scheduler.transport.nc.getServer()}${scheduler.logPath ? `, event log ${scheduler.logPath}` : ""}`);
  const signal = await untilShutdown(() => scheduler.close());
  io.out(`natsched scheduler: ${signal}, closed${scheduler.logPath ? `; event log flushed to ${scheduler.logPath}` : ""}`);
  return 0;
}
