import { hostname } from "node:os";
import { checkExecutor } from "../actors/function-modules.js";
import { untilShutdown } from "../actors/process/shutdown.js";
import { WorkerProcess, workerStats } from "../actors/process/worker-process.js";
import { BadOptionError } from "../machines/errors.js";
import type { LogFileFormat } from "../log/file-log.js";
import { clusterName, NATS_FLAGS, NATS_FLAGS_USAGE, natsOptions } from "./nats-flags.js";
import { LOG_LEVEL_FLAGS, LOG_LEVEL_USAGE, processLog } from "./log-level.js";
import { parseFlags } from "./parse-flags.js";
import { tuneDaemonHeap } from "./daemon-heap.js";
import type { Io } from "./run.js";

export const WORKER_USAGE = `usage: natsched worker --functions <module> [--name <w>] [--nthreads <n>] [--executor threads|loop] [--resources NAME=amount ...] [--host <h>] [--nats <url>] [--cluster <name>]

Runs a worker until SIGINT/SIGTERM, then unregisters it. Waits for the scheduler to appear.
  --functions <module>     JS module (a path or file: URL) whose exports (named, or a default object) are the task functions
  --name <w>               worker name (default: <hostname>-<pid>)
  --nthreads <n>           tasks run at once, each on its own executor thread (default 1)
  --executor <e>           where the module's functions run: threads (the default) or loop (the worker's event loop)
  --resources NAME=n       abstract resources, e.g. GPU=1 (repeat, or comma-separate)
  --host <h>               host name for host restrictions (default: os.hostname())
  --log <path>             this worker's own event log (default: none)
  --log jetstream          its records in the cluster's event log in JetStream
  --log-format <f>         a log file's format: binary (the default) or jsonl (a JSON line per record)
  --config <file>          config file
${LOG_LEVEL_USAGE}
${NATS_FLAGS_USAGE}`;

export async function workerCommand(args: string[], io: Io): Promise<number> {
  const { values } = parseFlags(args, {
      ...NATS_FLAGS,
      functions: { type: "string", short: "f" },
      name: { type: "string", short: "n" },
      nthreads: { type: "string" },
      executor: { type: "string" },
      resources: { type: "string", multiple: true },
      host: { type: "string" },
      log: { type: "string" },
      "log-format": { type: "string" },
      config: { type: "string" },
      ...LOG_LEVEL_FLAGS,
      help: { type: "boolean", short: "h" },
    });
  if (values.help) {
    io.out(WORKER_USAGE);
    return 0;
  }
  if (values.functions === undefined) {
    io.err(`natsched worker: --functions <module> is required\n\n${WORKER_USAGE}`);
    return 2;
  }
  tuneDaemonHeap();
  const plog = processLog(values, io);
  const cluster = clusterName(values);
  const name = values.name ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, "-")}-${process.pid}`;
  const worker = await WorkerProcess.start({
    nats: natsOptions(values),
    cluster,
    name,
    nthreads: parseThreads(values.nthreads),
    functions: values.functions,
    ...(values.executor !== undefined ? { executor: checkExecutor(values.executor, "executor")! } : {}),
    resources: parseResources(values.resources ?? []),
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(values.log !== undefined ? { log: values.log === "jetstream" ? { jetstream: true as const } : values.log } : {}),
    ...(values["log-format"] !== undefined ? { logFormat: values["log-format"] as LogFileFormat } : {}),
    ...(values.config !== undefined ? { configFile: values.config } : {}),
    onError: (error) => plog.error(`natsched worker ${name}: ${(error as Error)?.message ?? String(error)}`),
    onWaiting: () => plog.info(`natsched worker ${name}: waiting for the scheduler of cluster ${cluster}`),
  });
  io.out(`natsched worker ${name}: registered with cluster ${cluster} on ${worker.transport.nc.getServer()}`);
  const stopProgress = plog.progress(() => workerProgressLine(workerStats(cluster, worker.actor)));
  const signal = await untilShutdown((received) => worker.retire(received));
  stopProgress();
  io.out(`natsched worker ${name}: ${signal}, unregistered`);
  return 0;
}

function parseThreads(text: string | undefined): number {
  if (text === undefined) return 1;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) throw new BadOptionError("nthreads", `must be a whole number >= 1, got ${JSON.stringify(text)}`);
  return n;
}

export function parseResources(items: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items.flatMap((i) => i.split(","))) {
    const match = /^([A-Za-z_][A-Za-z0-9_-]*)=(.+)$/.exec(item.trim());
    const amount = match ? Number(match[2]) : NaN;
    if (!match || !(amount >= 0)) throw new BadOptionError("resources", `expected NAME=amount (e.g. GPU=1), got ${JSON.stringify(item)}`);
    out[match[1]!] = amount;
  }
  return out;
}

/** One progress line of a worker: totals since start, then what it runs and holds now. */
export function workerProgressLine(s: ReturnType<typeof workerStats>): string {
  return `natsched worker ${s.name}: progress: ${s.totals.tasksCompleted} tasks done, ${s.totals.tasksErred} erred; now ${s.executing} executing (${s.nthreads} threads), ${s.stored} keys held (${(s.nbytes / 1e6).toFixed(1)} MB)`;
}
