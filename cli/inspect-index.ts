/**
 * `natsched inspect` on a large log file: from its index (log/log-index.ts, built on first use)
 * instead of reading the log up to the cut: the nearest snapshot's instance counts, the
 * records after it, and the key's own records. What it prints is the per-machine counts and
 * the key's instances; the per-worker view needs every record up to the cut (`--full`).
 */
import { BadOptionError } from "../machines/errors.js";
import type { InstanceCounts } from "../log/instance-counts.js";
import { instanceCountsAt } from "../log/instances-at.js";
import type { LogIndex } from "../log/log-index.js";
import type { TimeBase } from "../log/time-base.js";
import type { LogRecord } from "../log/types.js";
import { Timeline, type EntityView } from "../tools/timeline.js";
import type { Io } from "./run.js";

/** Past this size a log file is inspected through its index unless --full. */
export const LARGE_LOG_BYTES = 256 * 1024 * 1024;

/** The lines inspect prints from an index at `at`. */
export async function inspectFromIndex(index: LogIndex, at: string | undefined, key: string | undefined, actor: string | undefined, time: (t: number) => string, io: Io): Promise<string[]> {
  const point = await pointFromIndex(index, at, key, io);
  const lines: string[] = [];
  const current = point.current;
  lines.push(`at record ${point.position} of ${point.length}` + (current ? ` (${current.actor} #${current.seq}, ${time(current.t)})` : "") + "  (a large log: counts from its index; --full for the per-worker view)");
  for (const group of point.counts.list(actor)) {
    const states = [...group.counts].filter(([, n]) => n > 0);
    if (states.length === 0) continue;
    lines.push(`  ${`${group.actor} ${group.machine}`.padEnd(28)} ${states.map(([s, n]) => `${s} ${n}`).join(", ")}`);
  }
  if (key !== undefined) {
    const views = point.keyViews.filter((v) => actor === undefined || v.actor === actor);
    lines.push(views.length === 0 ? `${key}: no instance at this point` : `${key}:`);
    for (const v of views) {
      const why = v.why ? `  ${JSON.stringify(v.why)}` : "";
      lines.push(`  ${v.actor.padEnd(16)} ${v.machine.padEnd(6)} ${v.id}  ${v.state}  (${v.event} at ${time(v.t)}, #${v.seq}, ${v.transitions} transitions)${why}`);
    }
  }
  return lines;
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
