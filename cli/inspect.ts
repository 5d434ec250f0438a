import { BadOptionError } from "../machines/errors.js";
import { openLogAt } from "../log/jetstream-open.js";
import { Timeline, type EntityView } from "../tools/timeline.js";
import { LOG_NATS_USAGE, NATS_AUTH_FLAGS, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

export const USAGE = `usage: natsched inspect <log|nats://host:port/cluster> [--at <n|+seconds|actor:seq>] [--key <key>] [--actor <name>]
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
  const log = await (await openLogAt(positionals[0]!, natsOptions(values))).readAll();
  for (const problem of log.problems) io.err(`log problem: ${problem.message}`);
  const timeline = Timeline.fromRecords(log.records);
  if (values.at !== undefined) timeline.seek(resolvePosition(timeline, values.at));

  const lines: string[] = [];
  const current = timeline.current;
  lines.push(`at record ${timeline.position} of ${timeline.length}` + (current ? ` (${current.actor} #${current.seq}, t=${current.t})` : ""));
  const groups = new Map<string, EntityView[]>();
  for (const view of timeline.list(values.actor !== undefined ? { actor: values.actor } : {})) {
    const group = `${view.actor} ${view.machine}`;
    const list = groups.get(group);
    if (list) list.push(view);
    else groups.set(group, [view]);
  }
  for (const [group, views] of [...groups].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const counts = new Map<string, number>();
    for (const v of views) counts.set(v.state, (counts.get(v.state) ?? 0) + 1);
    lines.push(`  ${group.padEnd(28)} ${[...counts].map(([s, n]) => `${s} ${n}`).join(", ")}`);
  }
  if (values.key !== undefined) {
    const views = timeline.list({ id: values.key }).filter((v) => values.actor === undefined || v.actor === values.actor);
    lines.push(views.length === 0 ? `${values.key}: no instance at this point` : `${values.key}:`);
    for (const v of views) {
      const why = v.why ? `  ${JSON.stringify(v.why)}` : "";
      lines.push(`  ${v.actor.padEnd(16)} ${v.machine.padEnd(6)} ${v.id}  ${v.state}  (${v.event} at t=${v.t}, #${v.seq}, ${v.transitions} transitions)${why}`);
    }
  }
  io.out(lines.join("\n"));
  return 0;
}

function resolvePosition(timeline: Timeline, at: string): number {
  if (/^\d+$/.test(at)) return Number(at);
  if (/^\+\d+(\.\d+)?$/.test(at)) {
    const first = timeline.record(0);
    return first === undefined ? 0 : timeline.positionAtTime(first.t + Number(at.slice(1)));
  }
  const match = /^(.+):(\d+)$/.exec(at);
  if (match) {
    const position = timeline.positionOf(match[1]!, Number(match[2]));
    if (position < 0) throw new BadOptionError("--at", `the log has no record ${match[2]} of ${match[1]}`);
    return position;
  }
  throw new BadOptionError("--at", `expected a record count, +seconds or actor:seq, got "${at}"`);
}
