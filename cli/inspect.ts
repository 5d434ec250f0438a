import { BadOptionError } from "../machines/errors.js";
import { stat } from "node:fs/promises";
import { isJetStreamLocation, openLogAt } from "../log/jetstream-open.js";
import { LARGE_LOG_BYTES, withIndexSource } from "./inspect-index.js";
import type { InspectSource } from "./inspect-source.js";
import { LogCut, parseCut } from "../replay/log-cut.js";
import { ClusterFold } from "../log/cluster-fold.js";
import { formatInspect, inspectView } from "../tools/inspect-view.js";
import { NoSuchKeyError, resolveKey } from "../tools/keys.js";
import { keyInstances, type KeyInstance } from "../tools/key-instances.js";
import { TimeBase } from "../log/time-base.js";
import type { LogRecord } from "../log/types.js";
import { LOG_NATS_USAGE, NATS_AUTH_FLAGS, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

export const USAGE = `usage: natsched inspect <log|nats://host:port/cluster> [--at <cut>] [--key <key>] [--actor <name>] [--json] [--full | --index]
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
  --full            on a log file over 256 MB, read it whole (without it such a log is
                    inspected through its index, built on first use: the nearest snapshot
                    before the cut and the records from there; the same view)
  --index           through the log file's index whatever its size
${LOG_NATS_USAGE}`;

/** `natsched inspect`: the cluster at one point of a log, from the log alone. */
export async function inspectCommand(args: string[], io: Io): Promise<number> {
  let parsed;
  let cut: LogCut;
  try {
    parsed = parseFlags(args, { ...NATS_AUTH_FLAGS, at: { type: "string" }, key: { type: "string" }, actor: { type: "string" }, json: { type: "boolean" }, full: { type: "boolean" }, index: { type: "boolean" } }, true);
    if (parsed.positionals.length !== 1) throw new BadOptionError("log", "give exactly one log");
    if (parsed.values.full && parsed.values.index) throw new BadOptionError("--index", "--full reads the log whole, --index through its index: give one");
    cut = new LogCut(parsed.values.at === undefined ? undefined : parseCut(parsed.values.at, "--at"));
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched inspect: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const location = positionals[0]!;
  const print = async (source: InspectSource): Promise<void> => io.out(await inspectLines(source, cut, values, location));
  const large = !isJetStreamLocation(location) && (values.index || (!values.full && (await stat(location)).size > LARGE_LOG_BYTES));
  if (large && (await withIndexSource(location, cut.spec, io, print))) return 0;
  await print(await readWhole(location, cut, values, io));
  return 0;
}

/** What inspect prints: the view at the cut (JSON or words) and the key's instances. */
async function inspectLines(source: InspectSource, cut: LogCut, values: { key?: string | undefined; actor?: string | undefined; json?: boolean | undefined }, location: string): Promise<string> {
  const { fold, time } = source;
  const view = inspectView(fold, cut.describe());
  const worker = values.actor?.replace(/^worker\./, "");
  if (worker !== undefined && worker !== "scheduler") view.workers = view.workers.filter((w) => w.name === worker);
  if (values.json) return JSON.stringify({ ...view, start: time.start, ...(time.iso ? { startIso: time.iso } : {}) }, null, 2);
  const lines = formatInspect(view, time, source.total);
  if (values.key !== undefined) {
    // A key prefix will do, as for story: the keys known at the cut decide.
    const key = fold.tasks.has(values.key) ? values.key : keyAtCut(fold, values.key, location);
    lines.push(...keyLines(keyInstances(await source.keyRecords(key), key), fold, key, time, values.actor));
  }
  return lines.join("\n");
}

/** The log read whole up to the cut. */
async function readWhole(location: string, cut: LogCut, values: Parameters<typeof natsOptions>[0], io: Io): Promise<InspectSource> {
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
  if (spec?.kind === "seq" && !log.records.some((r) => r.actor === cut.actor && r.seq === spec.value)) {
    throw new BadOptionError("--at", `the log has no record ${spec.value} of ${cut.actor}`);
  }
  return { fold, total: log.records.length, time: TimeBase.of(log.records[0]?.t, reader.header.created), keyRecords: async () => taken };
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
