import { BadOptionError } from "../machines/errors.js";
import { isJetStreamLocation, openLogAt } from "../log/jetstream-open.js";
import { indexOnDemand } from "../log/index-on-demand.js";
import { InstanceCounts } from "../log/instance-counts.js";
import { instanceCountsAt } from "../log/instances-at.js";
import type { LogIndex } from "../log/log-index.js";
import type { LogRecord } from "../log/types.js";
import { Timeline, type EntityView } from "../tools/timeline.js";
import { LOG_NATS_USAGE, NATS_AUTH_FLAGS, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

const USAGE = `usage: natsched inspect <log|nats://host:port/cluster> [--at <n|+seconds|actor:seq>] [--key <key>] [--actor <name>]
  --at 120          after the log's first 120 records (default: the end)
  --at +2.5         after the records of the first 2.5 seconds
  --at scheduler:40 after the scheduler's record #40
  --key <key>       every machine instance of this key (scheduler task, worker tasks) at that point
  --actor <name>    only this actor's counts and instances
${LOG_NATS_USAGE}`;

/** `natsched inspect`: the machines' states at one point of a log, from the log alone. */
export async function inspectCommand(args: string[], io: Io): Promise<number> {
  let parsed;
  try {
    parsed = parseFlags(args, { ...NATS_AUTH_FLAGS, at: { type: "string" }, key: { type: "string" }, actor: { type: "string" } }, true);
    if (parsed.positionals.length !== 1) throw new BadOptionError("log", "give exactly one log");
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched inspect: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const location = positionals[0]!;
  const index = isJetStreamLocation(location) ? undefined : await indexOnDemand(location, (note) => io.err(note));
  let point: InspectPoint;
  try {
    point = index !== undefined ? await pointFromIndex(index, values.at, values.key, io) : await pointFromRecords(location, values, io);
  } finally {
    await index?.close();
  }

  const lines: string[] = [];
  const current = point.current;
  lines.push(`at record ${point.position} of ${point.length}` + (current ? ` (${current.actor} #${current.seq}, t=${current.t})` : ""));
  for (const group of point.counts.list(values.actor)) {
    const states = [...group.counts].filter(([, n]) => n > 0);
    if (states.length === 0) continue;
    lines.push(`  ${`${group.actor} ${group.machine}`.padEnd(28)} ${states.map(([s, n]) => `${s} ${n}`).join(", ")}`);
  }
  if (values.key !== undefined) {
    const views = point.keyViews.filter((v) => values.actor === undefined || v.actor === values.actor);
    lines.push(views.length === 0 ? `${values.key}: no instance at this point` : `${values.key}:`);
    for (const v of views) {
      const why = v.why ? `  ${JSON.stringify(v.why)}` : "";
      lines.push(`  ${v.actor.padEnd(16)} ${v.machine.padEnd(6)} ${v.id}  ${v.state}  (${v.event} at t=${v.t}, #${v.seq}, ${v.transitions} transitions)${why}`);
    }
  }
  io.out(lines.join("\n"));
  return 0;
}

/** What inspect prints, wherever it came from: the record it stands after, the instance counts, the key's instances. */
interface InspectPoint {
  position: number;
  length: number;
  current: LogRecord | undefined;
  counts: InstanceCounts;
  keyViews: EntityView[];
}

/** From a log file's index: the nearest snapshot, the records after it, the key's own records. */
async function pointFromIndex(index: LogIndex, at: string | undefined, key: string | undefined, io: Io): Promise<InspectPoint> {
  for (const problem of index.problems) io.err(`log problem: ${problem.message}`);
  const position = at === undefined ? index.records : Math.max(0, Math.min(index.records, await resolvePosition(index, index.firstT ?? 0, at)));
  const keyViews = key === undefined ? [] : Timeline.fromRecords((await index.keyRecords(key, position)).map((r) => r.record)).list({ id: key });
  return { position, length: index.records, current: await index.recordAt(position - 1), counts: await instanceCountsAt(index, position), keyViews };
}

/** From the whole log in memory (a log in JetStream, or a file that cannot be indexed). */
async function pointFromRecords(location: string, values: Parameters<typeof natsOptions>[0] & { at?: string | undefined; key?: string | undefined }, io: Io): Promise<InspectPoint> {
  const log = await (await openLogAt(location, natsOptions(values))).readAll();
  for (const problem of log.problems) io.err(`log problem: ${problem.message}`);
  const timeline = Timeline.fromRecords(log.records);
  if (values.at !== undefined) timeline.seek(await resolvePosition(timeline, timeline.record(0)?.t ?? 0, values.at));
  const counts = new InstanceCounts();
  for (let i = 0; i < timeline.position; i++) {
    const record = log.records[i]!;
    if (record.kind === "transition") counts.apply(record);
  }
  return { position: timeline.position, length: timeline.length, current: timeline.current, counts, keyViews: values.key === undefined ? [] : timeline.list({ id: values.key }) };
}

interface Seekable {
  positionAtTime(time: number): number | Promise<number>;
  positionOf(actor: string, seq: number): number | Promise<number>;
}

/** `--at` as a position in `log`, whose first record's time is `firstT`. */
async function resolvePosition(log: Seekable, firstT: number, at: string): Promise<number> {
  if (/^\d+$/.test(at)) return Number(at);
  if (/^\+\d+(\.\d+)?$/.test(at)) return log.positionAtTime(firstT + Number(at.slice(1)));
  const match = /^(.+):(\d+)$/.exec(at);
  if (match) {
    const position = await log.positionOf(match[1]!, Number(match[2]));
    if (position < 0) throw new BadOptionError("--at", `the log has no record ${match[2]} of ${match[1]}`);
    return position;
  }
  throw new BadOptionError("--at", `expected a record count, +seconds or actor:seq, got "${at}"`);
}
