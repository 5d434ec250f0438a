import { formatMembership } from "../actors/membership.js";
import { SchedulerProcess, schedulerStats, type SchedulerProcessOptions } from "../actors/process/scheduler-process.js";
import { BadOptionError } from "../machines/errors.js";
import type { LogFileFormat } from "../log/file-log.js";
import { JetStreamLogSink } from "../log/jetstream-log.js";
import { durabilityNote } from "../log/jetstream-stream.js";
import { untilShutdown } from "../actors/process/shutdown.js";
import { clusterName, NATS_FLAGS, NATS_FLAGS_USAGE, natsOptions } from "./nats-flags.js";
import { LOG_LEVEL_FLAGS, LOG_LEVEL_USAGE, processLog } from "./log-level.js";
import { parseFlags } from "./parse-flags.js";
import { tuneDaemonHeap } from "./daemon-heap.js";
import { resolveConfig } from "../machines/config.js";
import { parseEnvValue } from "../machines/config-sources.js";
import type { Io } from "./run.js";

export const SCHEDULER_USAGE = `usage: natsched scheduler [--nats <url>] [--cluster <name>] [--log auto | --log jetstream | --log <path> | --no-log] [--config <file>]

Runs the cluster's scheduler until SIGINT/SIGTERM, then flushes its event log.
  --log auto               the default: JetStream when the server has it (as --log jetstream),
                           else a new file in the temp dir, with a warning
  --log jetstream          the cluster's event log in JetStream (stream NATSCHED_LOG_<cluster>); a
                           scheduler started again after a crash rebuilds its state from it
  --log <path>             event log file (a scheduler started again begins a new run)
  --log-replicas <n>       replicas of that stream when this scheduler creates it (default 1)
  --log-format <f>         a log file's format: binary (the default) or jsonl (a JSON line per record)
  --no-log                 no event log
  --config <file>          config file (default: natsched.config.json/.yaml in the cwd)
  --worker-saturation <s>  root tasks per worker thread: a number (Dask: 1.1), inf (queuing off) or adaptive (default)
                           (over the config file and NATSCHED_SCHEDULER__WORKER_SATURATION)
${LOG_LEVEL_USAGE}
${NATS_FLAGS_USAGE}`;

export async function schedulerCommand(args: string[], io: Io): Promise<number> {
  const { values } = parseFlags(args, {
    ...NATS_FLAGS,
    log: { type: "string" },
    "log-replicas": { type: "string" },
    "log-format": { type: "string" },
    "no-log": { type: "boolean" },
    config: { type: "string" },
    "worker-saturation": { type: "string" },
    ...LOG_LEVEL_FLAGS,
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    io.out(SCHEDULER_USAGE);
    return 0;
  }
  tuneDaemonHeap();
  const plog = processLog(values, io);
  const flag = values["worker-saturation"];
  const saturation = flag === undefined ? undefined : resolveConfig({ workerSaturation: parseEnvValue(flag, "--worker-saturation") }, "--worker-saturation").workerSaturation;
  const cluster = clusterName(values);
  // Workers may join before the start line is printed: their lines follow it.
  let early: string[] | null = [];
  const membership = (line: string) => (early === null ? plog.info(line) : early.push(line));
  const scheduler = await SchedulerProcess.start({
    nats: { ...natsOptions(values), waitForServer: true },
    cluster,
    log: logChoice(values),
    ...(values["log-format"] !== undefined ? { logFormat: values["log-format"] as LogFileFormat } : {}),
    ...(values.config !== undefined ? { configFile: values.config } : {}),
    ...(saturation !== undefined ? { config: { workerSaturation: saturation } } : {}),
    onError: (error) => plog.error(`natsched scheduler: ${(error as Error)?.message ?? String(error)}`),
    onMembership: (change) => membership(`natsched scheduler: ${formatMembership(change)}`),
  });
  for (const warning of scheduler.warnings) plog.warn(`natsched scheduler: warning: ${warning}`);
  io.out(`natsched scheduler: cluster ${cluster} on ${scheduler.transport.nc.getServer()}${scheduler.logPath ? `, event log ${scheduler.logPath}` : ", no event log"}`);
  if (scheduler.resumed !== null) {
    const { inputs, completed, snapshot, timings } = scheduler.resumed;
    const from = snapshot === undefined ? "" : ` after the snapshot at record ${snapshot}`;
    const took = `${((timings.snapshot + timings.claim + timings.rebuild) / 1000).toFixed(2)} s: snapshot ${(timings.snapshot / 1000).toFixed(2)}, tail of the log ${(timings.claim / 1000).toFixed(2)}, rebuild ${(timings.rebuild / 1000).toFixed(2)}`;
    io.out(`natsched scheduler: resumed from its log: ${inputs} inputs re-run${from}${completed > 0 ? `, ${completed} unstored transitions of the last one written` : ""} (${took}); asking the workers what they hold`);
    void scheduler.resynced?.then((r) =>
      io.out(`natsched scheduler: resynced: ${r.answered.length} worker(s) answered${r.lost.length > 0 ? `, lost: ${r.lost.join(", ")}` : ""}; ${r.reports} report(s) re-sent, ${r.computeAgain} task(s) sent again`),
    );
  }
  if (scheduler.log instanceof JetStreamLogSink) io.out(`natsched scheduler: durability: ${durabilityNote(scheduler.transport.nc, scheduler.log.replicas)}`);
  for (const line of early) plog.info(line);
  early = null;
  const stopProgress = plog.progress(() => schedulerProgressLine(schedulerStats(cluster, scheduler.actor)));
  const outcome = await Promise.race([untilShutdown(() => scheduler.close()).then((signal) => ({ signal })), scheduler.failed.then((error) => ({ error }))]);
  stopProgress();
  if ("error" in outcome) {
    io.err(`natsched scheduler: stopped: its event log refused a write: ${(outcome.error as Error)?.message ?? String(outcome.error)}`);
    return 1;
  }
  io.out(`natsched scheduler: ${outcome.signal}, closed${scheduler.logPath ? `; event log flushed to ${scheduler.logPath}` : ""}`);
  return 0;
}

function logChoice(values: { log?: string | undefined; "no-log"?: boolean | undefined; "log-replicas"?: string | undefined }): SchedulerProcessOptions["log"] {
  if (values["no-log"]) {
    if (values.log !== undefined) throw new BadOptionError("no-log", "--no-log and --log do not go together");
    return false;
  }
  const replicas = logReplicas(values["log-replicas"]);
  if (values.log === "jetstream") return { jetstream: true, ...replicas };
  if (values.log === undefined || values.log === "auto") {
    return replicas.replicas === undefined ? "auto" : { jetstream: true, ...replicas };
  }
  if (replicas.replicas !== undefined) throw new BadOptionError("log-replicas", "only for a log in JetStream (--log jetstream)");
  return values.log;
}

function replicasOf(text: string | undefined): number {
  if (text === undefined) return 1;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1 || n > 5) throw new BadOptionError("log-replicas", `a whole number from 1 to 5, got ${JSON.stringify(text)}`);
  return n;
}

function logReplicas(text: string | undefined): { replicas?: number } {
  return text === undefined ? {} : { replicas: replicasOf(text) };
}

/** One progress line: totals since start, then what is in flight now. */
export function schedulerProgressLine(s: ReturnType<typeof schedulerStats>): string {
  const waiting = (s.tasks as Record<string, number>).waiting ?? 0;
  const memory = (s.tasks as Record<string, number>).memory ?? 0;
  return `natsched scheduler: progress: ${s.totals.tasksCompleted} tasks done, ${s.totals.tasksErred} erred; now ${s.processing} processing, ${s.queued} queued, ${waiting} waiting, ${memory} in memory; ${s.workers} workers (${s.threads} threads), ${s.clients} clients`;
}
