import { BadOptionError } from "../machines/errors.js";
import { stat } from "node:fs/promises";
import { isJetStreamLocation, openLogAt } from "../log/jetstream-open.js";
import { indexOnDemand } from "../log/index-on-demand.js";
import { inspectFromIndex, LARGE_LOG_BYTES } from "./inspect-index.js";
import { LogCut, parseCut } from "../replay/log-cut.js";
import { ClusterFold } from "../tools/cluster-fold.js";
import { formatInspect, inspectView } from "../tools/inspect-view.js";
import { NoSuchKeyError, resolveKey } from "../tools/keys.js";
import { keyInstances, type KeyInstance } from "../tools/key-instances.js";
import { TimeBase } from "../log/time-base.js";
import type { LogRecord } from "../log/types.js";
import { LOG_NATS_USAGE, NATS_AUTH_FLAGS, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

export const USAGE = `usage: natsched inspect <log|nats://host:port/cluster> [--at <cut>] [--key <key>] [--actor <name>] [--json]
  the cluster at one point of a log: each worker running or stopped (and why), what it
  executes, its occupancy and queued work; the scheduler's tasks and queue; steals in flight.
  Times are seconds from the run's start. --at is the same cut as natsched replay --until:
  --at 120          after the scheduler's record #120 (an input with all its transitions)
  --at worker.a:40  after worker.a's record #40
  --at +2.5         each actor's records up to 2.5 seconds after the run's start
  --at 1763785.5    each actor's records up to this time (as in the log's "t")
                    (default: the end of the log)
  --key <key>       every machine instance of this key (scheduler task, worker tasks) at that point
                    (or of the one key starting so)
  --actor <name>    only this actor's workers and --key instances ("scheduler", "worker.<name>" or "<name>")
  --json            print the view as JSON
  --full            on a log file over 256 MB, read it up to the cut for the per-worker view
                    (without it such a log is inspected through its index, built on first
                    use: per-machine counts from the nearest snapshot and the key's instances)
${LOG_NATS_USAGE}`;

/** `natsched inspect`: the cluster at one point of a log, from the log alone. */
export async function inspectCommand(args: string[], io: Io): Promise<number> {
  let parsed;
  let cut: LogCut;
  try {
    parsed = parseFlags(args, { ...NATS_AUTH_FLAGS, at: { type: "string" }, key: { type: "string" }, actor: { type: "string" }, json: { type: "boolean" }, full: { type: "boolean" } }, true);
    if (parsed.positionals.length !== 1) throw new BadOptionError("log", "give exactly one log");
    cut = new LogCut(parsed.values.at === undefined ? undefined : parseCut(parsed.values.at, "--at"));
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched inspect: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const location = positionals[0]!;
  if (!values.full && !values.json && !isJetStreamLocation(location) && (await stat(location)).size > LARGE_LOG_BYTES) {
    const index = await indexOnDemand(location, (note) => io.err(note));
    if (index !== undefined) {
      try {
        const time = TimeBase.of(index.firstT ?? undefined);
        io.out((await inspectFromIndex(index, values.at, values.key, values.actor, (t) => time.at(t), io)).join("\n"));
        return 0;
      } finally {
        await index.close();
      }
    }
  }
  const reader = await openLogAt(location, natsOptions(values));
  const log = await reader.readAll();
  for (const problem of log.problems) io.err(`log problem: ${problem.message}`);
  const taken: LogRecord[] = [];
  const fold = new ClusterFold();
  for (const record of log.records) {
    const verdict = cut.admit(record);
    if (verdict === "end") break;
    if (verdict === "skip") continue;
    taken.push(record);
    fold.add(record);
  }
  const spec = cut.spec;
  if (spec?.kind === "seq" && !log.records.some((r) => r.actor === (spec.actor ?? "scheduler") && r.seq === spec.value)) {
    throw new BadOptionError("--at", `the log has no record ${spec.value} of ${spec.actor ?? "scheduler"}`);
  }
  const time = TimeBase.of(log.records[0]?.t, reader.header.created);
  const view = inspectView(fold, cut.describe());
  const worker = values.actor?.replace(/^worker\./, "");
  if (worker !== undefined && worker !== "scheduler") view.workers = view.workers.filter((w) => w.name === worker);
  if (values.json) {
    io.out(JSON.stringify({ ...view, start: time.start, ...(time.iso ? { startIso: time.iso } : {}) }, null, 2));
    return 0;
  }
  const lines = formatInspect(view, time, log.records.length);
  if (values.key !== undefined) {
    // A key prefix will do, as for story: the keys known at the cut decide.
    const key = fold.tasks.has(values.key) ? values.key : keyAtCut(fold, values.key, positionals[0]!);
    lines.push(...keyLines(keyInstances(taken, key), fold, key, time, values.actor));
  }
  io.out(lines.join("\n"));
  return 0;
}

/** The one key starting with `prefix` among the scheduler's at the cut; `prefix` itself when none does (it has no instance there). */
function keyAtCut(fold: ClusterFold, prefix: string, where: string): string {
  try {
    return resolveKey(fold.tasks.keys(), prefix, where);
  } catch (error) {
    if (error instanceof NoSuchKeyError) return prefix;
    throw error;
  }
}

/** Every machine instance of `key` at the cut; those of a stopped actor say it stopped. */
function keyLines(instances: KeyInstance[], fold: ClusterFold, key: string, time: TimeBase, actor: string | undefined): string[] {
  const views = instances.filter((v) => actor === undefined || v.actor === actor || v.actor === `worker.${actor}`);
  if (views.length === 0) return [`${key}: no instance at this point`];
  const lines = [`${key}:`];
  for (const v of views) {
    const why = v.why ? `  ${JSON.stringify(v.why)}` : "";
    const stopped = fold.actors.get(v.actor)?.stopped;
    const gone = stopped && v.machine === "wtask" ? `  (gone: ${v.actor} stopped at ${time.at(stopped.t, 3)}${stopped.reason ? `, ${stopped.reason}` : ""})` : "";
    lines.push(`  ${v.actor.padEnd(16)} ${v.machine.padEnd(6)} ${key}  ${v.state}  (${v.event} at ${time.at(v.t)}, #${v.seq}, ${v.transitions} transitions)${gone}${why}`);
  }
  return lines;
}
