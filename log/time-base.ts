/**
 * One time base for everything the tools print: seconds from the run's start, the `t` of
 * the log's first record (the scheduler's start in a run's log, which a slice keeps too).
 * Not the header's `created`: that is the wall clock when the file was opened, while a
 * simulated run's `t` is a virtual clock starting near 0, so only the first record is on
 * the records' own clock in every log. The absolute start is printed once (`describe`).
 */

import type { LogReader } from "./reader.js";

/** Records further than this from the header's `created` are on a clock of their own (the simulator's). */
const SAME_CLOCK_SECONDS = 86_400;

export class TimeBase {
  private constructor(
    /** The run's start, in the records' `t`. */
    readonly start: number,
    /** The start as a wall-clock time (ISO 8601), or undefined on a virtual clock. */
    readonly iso: string | undefined,
    /** When the log file was created (ISO 8601), from its header. */
    readonly created: string | undefined,
  ) {}

  /** From the log's first record's `t` (undefined for an empty log: start 0) and the header's `created` (ms). */
  static of(firstT: number | undefined, createdMs?: number): TimeBase {
    const start = firstT ?? 0;
    const created = createdMs !== undefined && Number.isFinite(createdMs) ? new Date(createdMs).toISOString() : undefined;
    const wall = createdMs !== undefined && firstT !== undefined && Math.abs(firstT - createdMs / 1000) < SAME_CLOCK_SECONDS;
    return new TimeBase(start, wall ? new Date(start * 1000).toISOString() : undefined, created);
  }

  /** Seconds from the run's start. */
  since(t: number): number {
    return t - this.start;
  }

  /** `t` as "+1.234567s" from the run's start. */
  at(t: number, digits = 6): string {
    const s = t - this.start;
    return `${s < 0 ? "-" : "+"}${Math.abs(s).toFixed(digits)}s`;
  }

  /** The line that says what the times mean, printed once per output. */
  describe(): string {
    if (this.iso !== undefined) return `times: seconds from the run's start, ${this.iso} (t=${this.start})`;
    return `times: seconds from the run's start, t=${this.start} on the run's virtual clock (simulated)${this.created ? `; log written ${this.created}` : ""}`;
  }
}

/** The time base of the log `reader` reads: its first record (the read stops there) and its header. */
export async function readTimeBase(reader: Pick<LogReader, "header" | "records">): Promise<TimeBase> {
  let first: number | undefined;
  for await (const record of reader.records()) {
    first = record.t;
    break;
  }
  return TimeBase.of(first, reader.header.created);
}
